"""The Bedrock emulator driven by boto3's `bedrock-runtime` client: SigV4 (verified with botocore's signer) and
Bedrock API keys, `converse` and `converse_stream` (event-stream frames parsed by botocore), `cachePoint`
caching with its limits and usage fields, Bedrock's error shapes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import boto3
import botocore
import httpx2
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)
REGION = "us-east-1"
KEY_ID, SECRET = "AKIAEMULATORTEST0001", "emulator/secret/key/0001"
MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"  # minimum 1,024 tokens per checkpoint
TOOLS = [{"toolSpec": {"name": "get_weather", "description": "Current weather for a city",
                       "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}},
                                                "required": ["city"]}}}}]


@pytest.fixture
def keys(emu: EmulatorSet) -> Iterator[None]:
    auth = emu.platforms.bedrock.auth
    auth.add_key(KEY_ID, SECRET)
    yield
    auth.keys.clear()
    auth.api_keys = None
    auth.region = REGION


def _client(emu: EmulatorSet, key_id: str = KEY_ID, secret: str = SECRET, region: str = REGION,
            **config: Any) -> Any:
    return boto3.client("bedrock-runtime", region_name=region, endpoint_url=emu.platform_url,
                        aws_access_key_id=key_id, aws_secret_access_key=secret,
                        config=Config(retries={"total_max_attempts": 1}, **config))


def _bearer_client(emu: EmulatorSet, api_key: str) -> Any:
    """boto3 sends a Bedrock API key only over https, so over plain http the test adds the header itself."""
    client = _client(emu, signature_version=botocore.UNSIGNED)

    def add(request: AWSRequest, **_: Any) -> None:
        request.headers["Authorization"] = f"Bearer {api_key}"

    client.meta.events.register("before-send.bedrock-runtime.*", add)
    return client


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"text": text}]}]


def test_converse_with_sigv4(emu: EmulatorSet, keys: None) -> None:
    client = _client(emu)
    sent: list[str] = []
    client.meta.events.register("before-send.bedrock-runtime.Converse", lambda request, **_: sent.append(request.url))
    r = client.converse(modelId=MODEL, messages=_user("What is a tide?"), inferenceConfig={"maxTokens": 200})
    assert r["stopReason"] == "end_turn" and r["output"]["message"]["role"] == "assistant"
    text = r["output"]["message"]["content"][0]["text"]
    u = r["usage"]
    assert text and u["inputTokens"] > 0 and u["outputTokens"] > 0 and u["cacheReadInputTokens"] == 0
    assert u["totalTokens"] == u["inputTokens"] + u["outputTokens"]
    assert sent == [f"{emu.platform_url}/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse"]
    (rec,) = emu.requests("bedrock.converse")
    assert rec.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert f"/{REGION}/bedrock/aws4_request" in rec.headers["authorization"]
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amzn-requestid"]


def test_converse_stream_frames_parse_in_botocore(emu: EmulatorSet, keys: None) -> None:
    client = _client(emu)
    plain = client.converse(modelId=MODEL, messages=_user("Explain moon phases"))
    r = client.converse_stream(modelId=MODEL, messages=_user("Explain moon phases"))
    assert r["ResponseMetadata"]["HTTPHeaders"]["content-type"] == "application/vnd.amazon.eventstream"
    events = list(r["stream"])
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert text == plain["output"]["message"]["content"][0]["text"]
    assert events[-2]["messageStop"]["stopReason"] == "end_turn"
    assert events[-1]["metadata"]["usage"] == plain["usage"]


def test_tool_use_plain_and_streamed(emu: EmulatorSet, keys: None) -> None:
    client = _client(emu)
    kw: dict[str, Any] = {"modelId": MODEL, "messages": _user("Use get_weather for Paris"),
                          "toolConfig": {"tools": TOOLS}}
    r = client.converse(**kw)
    assert r["stopReason"] == "tool_use"
    (use,) = [b["toolUse"] for b in r["output"]["message"]["content"] if "toolUse" in b]
    assert use["name"] == "get_weather" and use["input"] == {"city": "Paris"} and use["toolUseId"]
    events = list(client.converse_stream(**kw)["stream"])
    start = next(e["contentBlockStart"] for e in events if "contentBlockStart" in e)
    assert start["start"]["toolUse"] == {"toolUseId": use["toolUseId"], "name": "get_weather"}
    args = "".join(e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events
                   if "contentBlockDelta" in e and "toolUse" in e["contentBlockDelta"]["delta"])
    assert args == '{"city": "Paris"}'


def test_cache_points_write_then_read(emu: EmulatorSet, keys: None, long_system: str) -> None:
    client = _client(emu)
    kw: dict[str, Any] = {"modelId": MODEL, "system": [{"text": long_system}, {"cachePoint": {"type": "default"}}],
                          "toolConfig": {"tools": [*TOOLS, {"cachePoint": {"type": "default"}}]},
                          "messages": _user("Can I return shoes after 20 days?")}
    first = client.converse(**kw)["usage"]
    assert first["cacheReadInputTokens"] == 0 and first["cacheWriteInputTokens"] > 1024
    assert first["cacheDetails"] == [{"ttl": "5m", "inputTokens": first["cacheWriteInputTokens"]}]
    second = client.converse(**kw)["usage"]
    assert second["cacheReadInputTokens"] == first["cacheWriteInputTokens"] and second["cacheWriteInputTokens"] == 0
    assert second["inputTokens"] == first["inputTokens"] and "cacheDetails" not in second
    assert second["totalTokens"] == (second["inputTokens"] + second["outputTokens"] + second["cacheReadInputTokens"])
    # the stream reports the same in its metadata event
    streamed = list(client.converse_stream(**kw)["stream"])[-1]["metadata"]["usage"]
    assert streamed["cacheReadInputTokens"] == first["cacheWriteInputTokens"]
    # entries belong to the caller: another key id misses
    emu.platforms.bedrock.auth.add_key("AKIAOTHERCALLER00002", "other-secret")
    other = _client(emu, "AKIAOTHERCALLER00002", "other-secret").converse(**kw)["usage"]
    assert other["cacheReadInputTokens"] == 0 and other["cacheWriteInputTokens"] > 0
    # 5 minutes without a hit: gone
    emu.clock.advance(301)
    assert client.converse(**kw)["usage"]["cacheReadInputTokens"] == 0


def test_cache_point_rules(emu: EmulatorSet, keys: None, long_system: str) -> None:
    client = _client(emu)
    short = client.converse(modelId=MODEL, system=[{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
                            messages=_user("hi"))["usage"]
    assert short["cacheWriteInputTokens"] == 0 and short["cacheReadInputTokens"] == 0  # below the minimum: accepted
    hour = client.converse(modelId=MODEL, system=[{"text": long_system}, {"cachePoint": {"type": "default",
                                                                                          "ttl": "1h"}}],
                           messages=_user("hi"))["usage"]
    assert hour["cacheDetails"] == [{"ttl": "1h", "inputTokens": hour["cacheWriteInputTokens"]}]
    five = [{"text": f"{long_system} part {i}"} for i in range(5)]
    system = [b for block in five for b in (block, {"cachePoint": {"type": "default"}})]
    with pytest.raises(client.exceptions.ValidationException, match="maximum of 4"):
        client.converse(modelId=MODEL, system=system, messages=_user("hi"))
    with pytest.raises(client.exceptions.ValidationException, match="tools field"):
        client.converse(modelId="amazon.nova-pro-v1:0", messages=_user("hi"),
                        toolConfig={"tools": [*TOOLS, {"cachePoint": {"type": "default"}}]})
    haiku = client.converse(modelId="us.anthropic.claude-3-5-haiku-20241022-v1:0",  # minimum 2,048
                            system=[{"text": long_system}, {"cachePoint": {"type": "default"}}], messages=_user("hi"))
    assert haiku["usage"]["cacheWriteInputTokens"] == 0


def test_bedrock_api_key_as_bearer(emu: EmulatorSet, keys: None) -> None:
    emu.platforms.bedrock.auth.api_keys = {"ABSKZW11bGF0b3ItYXBpLWtleQ=="}
    ok = _bearer_client(emu, "ABSKZW11bGF0b3ItYXBpLWtleQ==").converse(modelId=MODEL, messages=_user("hello"))
    assert ok["output"]["message"]["content"][0]["text"]
    assert emu.requests("bedrock.converse")[0].headers["authorization"] == "Bearer ABSKZW11bGF0b3ItYXBpLWtleQ=="
    events = list(_bearer_client(emu, "ABSKZW11bGF0b3ItYXBpLWtleQ==").converse_stream(
        modelId=MODEL, messages=_user("hello"))["stream"])
    assert "metadata" in events[-1]
    with pytest.raises(botocore.exceptions.ClientError) as e:
        _bearer_client(emu, "ABSKd3Jvbmc=").converse(modelId=MODEL, messages=_user("hello"))
    assert e.value.response["Error"]["Code"] == "UnrecognizedClientException"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_signature_failures(emu: EmulatorSet, keys: None) -> None:
    def code(client: Any) -> tuple[str, int]:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            client.converse(modelId=MODEL, messages=_user("hello"))
        return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]

    assert code(_client(emu, secret="not-the-secret")) == ("InvalidSignatureException", 403)
    assert code(_client(emu, key_id="AKIANOBODYKNOWSTHIS1")) == ("UnrecognizedClientException", 403)
    assert code(_client(emu, region="eu-west-1")) == ("InvalidSignatureException", 403)
    assert code(_client(emu, signature_version=botocore.UNSIGNED)) == ("MissingAuthenticationTokenException", 403)
    # a signature made 10 minutes ago
    url = f"{emu.platform_url}/model/{MODEL.replace(':', '%3A')}/converse"
    body = b'{"messages": [{"role": "user", "content": [{"text": "hi"}]}]}'
    req = AWSRequest(method="POST", url=url, data=body, headers={"content-type": "application/json"})
    old = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10)
    req.context["timestamp"] = old.strftime("%Y%m%dT%H%M%SZ")
    signer = SigV4Auth(Credentials(KEY_ID, SECRET), "bedrock", REGION)
    req.headers["X-Amz-Date"] = req.context["timestamp"]
    sig = signer.signature(signer.string_to_sign(req, signer.canonical_request(req)), req)
    req.headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={signer.scope(req)}, "
                                    f"SignedHeaders={signer.signed_headers(signer.headers_to_sign(req))}, "
                                    f"Signature={sig}")
    r = httpx2.post(url, content=body, headers=dict(req.headers.items()))
    assert r.status_code == 403 and r.json()["message"].startswith("Signature expired")
    assert r.headers["x-amzn-errortype"].startswith("InvalidSignatureException")


def test_validation_errors_and_faults(emu: EmulatorSet, keys: None) -> None:
    client = _client(emu)
    with pytest.raises(client.exceptions.ValidationException, match="model identifier is invalid"):
        client.converse(modelId="no.such-model", messages=_user("hi"))
    with pytest.raises(client.exceptions.ValidationException, match="must start with a user message"):
        client.converse(modelId=MODEL, messages=[{"role": "assistant", "content": [{"text": "hi"}]}])
    with pytest.raises(client.exceptions.ValidationException, match="alternate"):
        client.converse(modelId=MODEL, messages=[*_user("a"), *_user("b")])
    emu.platforms.faults.bedrock.inject("status=429")
    with pytest.raises(client.exceptions.ThrottlingException):
        client.converse(modelId=MODEL, messages=_user("hi"))
    emu.platforms.faults.bedrock.inject("stream_error_after=3")
    with pytest.raises(botocore.exceptions.EventStreamError, match="internalServerException"):
        list(client.converse_stream(modelId=MODEL, messages=_user("hi"))["stream"])
