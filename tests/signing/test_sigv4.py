"""sign() and AwsCredentialSource against the Bedrock emulator, which verifies SigV4 with botocore: a signed
Converse call (URL-encoded model id, as boto3 sends it) is accepted; the body, region and key are all covered;
temporary credentials carry their session token; the standard chain resolves in a worker thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx2
import orjson
import pytest

from gateway.signing.sigv4 import AwsCredentialSource, sign
from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)
REGION = "us-west-2"
KEY_ID, SECRET = "AKIAGATEWAYSIGNER001", "gateway/signer/secret"
MODEL_PATH = "/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse"
BODY = orjson.dumps({"messages": [{"role": "user", "content": [{"text": "hello"}]}]})


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        e.platforms.bedrock.auth.region = REGION
        e.platforms.bedrock.auth.add_key(KEY_ID, SECRET)
        e.platforms.bedrock.auth.add_key("ASIATEMPORARYKEY0001", "temp-secret", session_token="session-token-xyz")
        yield e


def _post(url: str, headers: dict[str, str], body: bytes = BODY) -> httpx2.Response:
    return httpx2.post(url, content=body, headers=headers)


async def test_signed_converse_is_accepted(emu: EmulatorSet) -> None:
    url = emu.platform_url + MODEL_PATH
    source = AwsCredentialSource.static(KEY_ID, SECRET)
    headers = await source.sign("POST", url, {"content-type": "application/json"}, BODY, region=REGION)
    assert headers["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert f"/{REGION}/bedrock/aws4_request" in headers["Authorization"] and "X-Amz-Date" in headers
    r = _post(url, headers)
    assert r.status_code == 200, r.text
    assert r.json()["output"]["message"]["content"][0]["text"]
    assert emu.requests("bedrock.converse")[-1].headers["authorization"] == headers["Authorization"]


async def test_body_region_and_key_are_covered(emu: EmulatorSet) -> None:
    url = emu.platform_url + MODEL_PATH
    creds = await AwsCredentialSource.static(KEY_ID, SECRET).get()
    headers = sign("POST", url, {"content-type": "application/json"}, BODY, credentials=creds, region=REGION)
    tampered = _post(url, headers, BODY.replace(b"hello", b"hellO"))
    assert tampered.status_code == 403 and tampered.headers["x-amzn-errortype"].startswith("InvalidSignature")
    elsewhere = sign("POST", url, {"content-type": "application/json"}, BODY, credentials=creds, region="us-east-1")
    assert _post(url, elsewhere).status_code == 403
    wrong = await AwsCredentialSource.static(KEY_ID, "not-the-secret").get()
    assert _post(url, sign("POST", url, {"content-type": "application/json"}, BODY, credentials=wrong,
                           region=REGION)).status_code == 403


async def test_temporary_credentials_send_their_session_token(emu: EmulatorSet) -> None:
    url = emu.platform_url + MODEL_PATH
    source = AwsCredentialSource.static("ASIATEMPORARYKEY0001", "temp-secret", "session-token-xyz")
    headers = await source.sign("POST", url, {"content-type": "application/json"}, BODY, region=REGION)
    assert headers["X-Amz-Security-Token"] == "session-token-xyz"
    assert _post(url, headers).status_code == 200


async def test_standard_chain_resolves_in_a_worker_thread(emu: EmulatorSet, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: object) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    source = AwsCredentialSource()
    resolved_in: list[int] = []
    original = source._resolve_blocking

    def record() -> object:
        resolved_in.append(threading.get_ident())
        return original()

    monkeypatch.setattr(source, "_resolve_blocking", record)
    creds = await source.get()
    assert creds.access_key == KEY_ID and resolved_in and resolved_in[0] != threading.get_ident()
    assert await source.get() is creds and len(resolved_in) == 1  # static credentials: resolved once
    url = emu.platform_url + MODEL_PATH
    assert _post(url, await source.sign("POST", url, {"content-type": "application/json"}, BODY,
                                        region=REGION)).status_code == 200
