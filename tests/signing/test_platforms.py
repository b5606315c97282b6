"""The platform signers on a real aiohttp request (as the upstream call sends it) against the emulators: SigV4
over the URL as aiohttp puts it on the wire, temporary credentials, a Bedrock API key, a Vertex access token
minted from the service account, the Azure key; the caller's credential headers never survive."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import aiohttp
import orjson
import pytest

from gateway.signing.platforms import AzureKeySigner, BedrockSigner, VertexSigner
from gateway.signing.sigv4 import AwsCredentialSource
from gateway.signing.vertex_token import VertexTokenProvider
from gateway_dev.emulators import EmulatorSet
from gateway_dev.emulators.vertex_auth import make_service_account

pytestmark = pytest.mark.timeout(60)
REGION = "eu-central-1"
KEY_ID, SECRET = "AKIAGATEWAYPLATFORM1", "platform/secret"
CONVERSE = "/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse"
BODY = orjson.dumps({"messages": [{"role": "user", "content": [{"text": "hello"}]}]})


@dataclass
class Req:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    key: str | None = None


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        e.platforms.bedrock.auth.region = REGION
        e.platforms.bedrock.auth.add_key(KEY_ID, SECRET)
        e.platforms.bedrock.auth.add_key("ASIATEMPPLATFORM0001", "t-secret", session_token="tok-123")
        yield e


async def send(req: Req) -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as s, s.request(req.method, req.url, data=req.body,
                                                       headers=req.headers) as r:
        return r.status, await r.read()


def caller_headers() -> dict[str, str]:
    return {"content-type": "application/json", "authorization": "Bearer tenant-key", "x-api-key": "tenant"}


async def test_sigv4_over_the_wire_url(emu: EmulatorSet) -> None:
    signer = BedrockSigner(REGION, AwsCredentialSource.static(KEY_ID, SECRET))
    req = Req("POST", emu.platform_url + CONVERSE, caller_headers(), BODY)
    await signer.sign(req)
    assert req.headers["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert "x-api-key" not in req.headers and "authorization" not in req.headers
    status, body = await send(req)
    assert status == 200, body
    seen = emu.requests("bedrock.converse")[-1]
    assert seen.headers["authorization"] == req.headers["Authorization"]


async def test_temporary_credentials_and_tampering(emu: EmulatorSet) -> None:
    signer = BedrockSigner(REGION, AwsCredentialSource.static("ASIATEMPPLATFORM0001", "t-secret", "tok-123"))
    req = Req("POST", emu.platform_url + CONVERSE, caller_headers(), BODY)
    await signer.sign(req)
    assert req.headers["X-Amz-Security-Token"] == "tok-123"
    assert (await send(req))[0] == 200
    req.body = BODY.replace(b"hello", b"hullo")
    assert (await send(req))[0] == 403


async def test_bedrock_api_key(emu: EmulatorSet) -> None:
    req = Req("POST", emu.platform_url + CONVERSE, caller_headers(), BODY)
    await BedrockSigner(REGION, bearer_token="ABSKZ2F0ZXdheS1rZXk=").sign(req)
    assert req.headers["authorization"] == "Bearer ABSKZ2F0ZXdheS1rZXk="
    assert (await send(req))[0] == 200
    keyed = Req("POST", emu.platform_url + CONVERSE, caller_headers(), BODY, key="ABSKa2V5LWZyb20tZW52")
    await BedrockSigner(REGION).sign(keyed)  # the request's key (AWS_BEARER_TOKEN_BEDROCK) wins over SigV4
    assert keyed.headers["authorization"] == "Bearer ABSKa2V5LWZyb20tZW52"


async def test_vertex_token_and_azure_key(emu: EmulatorSet) -> None:
    info, public = make_service_account("signer-project", f"{emu.platform_url}/token")
    emu.platforms.vertex.register_service_account(info, public)
    tokens = VertexTokenProvider.from_service_account_info(info)
    try:
        req = Req("POST", f"{emu.platform_url}/v1/projects/signer-project/locations/us-central1/publishers/google/"
                  "models/gemini-2.5-flash:generateContent", caller_headers(),
                  orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}))
        await VertexSigner(tokens).sign(req)
        assert req.headers["authorization"] == f"Bearer {tokens.current()}" and "x-api-key" not in req.headers
        status, body = await send(req)
        assert status == 200, body
    finally:
        await tokens.close()
    az = Req("POST", f"{emu.platform_url}/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
             caller_headers(), orjson.dumps({"messages": [{"role": "user", "content": "hi"}]}), key="azure-key")
    await AzureKeySigner().sign(az)
    assert az.headers["api-key"] == "azure-key" and "authorization" not in az.headers
    status, body = await send(az)
    assert status == 200, body
