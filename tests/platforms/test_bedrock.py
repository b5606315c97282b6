"""Amazon Bedrock through the gateway: boto3's `bedrock-runtime` (converse / converse_stream, the tenant key as a
Bedrock API key over HTTPS) and the OpenAI and Anthropic protocols with `bedrock/<modelId>`, plain and streamed.
The emulator's text and usage come back exactly; the emulator saw a SigV4 signature with the gateway's key id;
cachePoints placed by the break-even rule are read back; usage records, response cache, tenant isolation and
Prometheus labels work for the platform."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import boto3
import httpx2
import openai
import orjson
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from gateway_dev.emulators import EmulatorSet
from gateway_dev.localrun import LocalGateway
from tests.platforms.conftest import AWS_KEY_ID, KEYS, REGION, usage_records

pytestmark = pytest.mark.timeout(120)
MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"
ASK = [{"role": "user", "content": [{"text": "Explain the tides in two sentences."}]}]
POLICY = "Refund policy clause, numbered and specific, about returns and exchanges. " * 160
SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}}
TOOLS = {"tools": [{"toolSpec": {"name": "lookup_order", "description": "Find an order by its id. " * 30,
                                 "inputSchema": {"json": SCHEMA}}}]}


@pytest.fixture
def bedrock(gw: LocalGateway, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", KEYS["acme"])  # boto3's Bedrock API key: the tenant key
    client = boto3.client("bedrock-runtime", region_name=REGION, endpoint_url=gw.url,
                          verify=gw.server.tls[0],  # type: ignore[union-attr]
                          config=Config(retries={"max_attempts": 1}))
    yield client


def direct(emu: EmulatorSet, body: dict[str, Any]) -> dict[str, Any]:
    r = httpx2.post(f"{emu.platform_url}/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse",
                    headers={"authorization": "Bearer ABSKZGlyZWN0"}, content=orjson.dumps(body))
    assert r.status_code == 200, r.text
    return r.json()


def sigv4_key_id(emu: EmulatorSet, endpoint: str) -> str:
    auth = emu.requests(endpoint)[-1].headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=")
    return auth.split("Credential=")[1].split("/")[0]


def test_boto3_converse_plain_and_streamed(gw: LocalGateway, emu: EmulatorSet, bedrock: Any) -> None:
    expected = direct(emu, {"messages": ASK})
    emu.reset(caches=True)
    got = bedrock.converse(modelId=MODEL, messages=ASK)
    assert got["output"]["message"]["content"][0]["text"] == expected["output"]["message"]["content"][0]["text"]
    assert got["usage"] == expected["usage"] and got["stopReason"] == "end_turn"
    assert sigv4_key_id(emu, "bedrock.converse") == AWS_KEY_ID  # the gateway's credential, not the tenant's
    assert KEYS["acme"] not in str(emu.requests("bedrock.converse")[-1].headers)
    ask = [{"role": "user", "content": [{"text": "And the phases of the moon?"}]}]  # not in the response cache
    expected = direct(emu, {"messages": ask})
    emu.reset(caches=True)
    events = list(bedrock.converse_stream(modelId=MODEL, messages=ask)["stream"])
    text = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e)
    assert text == expected["output"]["message"]["content"][0]["text"]
    assert events[-1]["metadata"]["usage"] == expected["usage"]
    assert sigv4_key_id(emu, "bedrock.converse_stream") == AWS_KEY_ID


def test_openai_and_anthropic_protocols(gw: LocalGateway, emu: EmulatorSet) -> None:
    expected = direct(emu, {"messages": ASK})["output"]["message"]["content"][0]["text"]
    verify = gw.server.tls[0]  # type: ignore[union-attr]
    with openai.OpenAI(base_url=gw.url + "/v1", api_key=KEYS["acme"], max_retries=0,
                       http_client=openai.DefaultHttpxClient(verify=verify)) as client:
        chat = client.chat.completions.create(model=f"bedrock/{MODEL}", messages=[  # type: ignore[arg-type]
            {"role": "user", "content": "Explain the tides in two sentences."}],
            extra_headers={"cache-control": "no-store"})
        assert chat.choices[0].message.content == expected
        chunks = list(client.chat.completions.create(model=f"bedrock/{MODEL}", stream=True,  # type: ignore[arg-type]
                                                     stream_options={"include_usage": True},
                                                     messages=[{"role": "user",
                                                                "content": "Explain the tides in two sentences."}],
                                                     extra_headers={"cache-control": "no-store"}))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == expected
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    with anthropic.Anthropic(base_url=gw.url, api_key=KEYS["acme"], max_retries=0,
                             http_client=anthropic.DefaultHttpxClient(verify=verify)) as claude:
        message = claude.messages.create(model=f"bedrock/{MODEL}", max_tokens=200, messages=[
            {"role": "user", "content": "Explain the tides in two sentences."}],
            extra_headers={"cache-control": "no-store"})
        assert message.content[0].text == expected  # type: ignore[union-attr]
        with claude.messages.stream(model=f"bedrock/{MODEL}", max_tokens=200, messages=[
                {"role": "user", "content": "Explain the tides in two sentences."}],
                extra_headers={"cache-control": "no-store"}) as stream:
            assert stream.get_final_text() == expected
    assert sigv4_key_id(emu, "bedrock.converse_stream") == AWS_KEY_ID


def test_cache_points_from_the_second_request_and_read_usage(gw: LocalGateway, emu: EmulatorSet,
                                                             bedrock: Any) -> None:
    ids = []
    for i in range(3):
        raw = bedrock.converse(modelId=MODEL, system=[{"text": POLICY}], toolConfig=TOOLS,
                               messages=[{"role": "user", "content": [{"text": f"Question {i}: can I return it?"}]}])
        ids.append(raw["ResponseMetadata"]["HTTPHeaders"]["x-gateway-request-id"])
    bodies = [r.body for r in emu.requests("bedrock.converse")]
    points = [sum("cachePoint" in b for b in (body.get("system") or []) + body["toolConfig"]["tools"]
                  + [b for m in body["messages"] for b in m["content"]]) for body in bodies]
    assert 1 <= points[1] <= 4 and 1 <= points[2] <= 4, points
    records = usage_records(gw, "acme", set(ids))
    third = records[ids[2]]
    assert third["cached_input_tokens"] == third["usage_raw"]["cacheReadInputTokens"] > 1024
    assert third["input_tokens"] == (third["usage_raw"]["inputTokens"] + third["usage_raw"]["cacheReadInputTokens"]
                                     + third["usage_raw"]["cacheWriteInputTokens"])
    assert third["provider"] == "bedrock" and third["details"]["provider_cache"]["provider"] == "bedrock"
    written = [r["cache_creation_input_tokens"] for r in records.values()]
    assert any(w > 1024 for w in written)


def test_response_cache_isolation_and_metrics(gw: LocalGateway, emu: EmulatorSet, bedrock: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    ask = [{"role": "user", "content": [{"text": "Name a river (bedrock cache test)."}]}]
    first = bedrock.converse(modelId=MODEL, messages=ask)
    gw.wait_idle()
    second = bedrock.converse(modelId=MODEL, messages=ask)
    headers = second["ResponseMetadata"]["HTTPHeaders"]
    assert headers["x-gateway-cache"] == "response-hit" and emu.calls("bedrock.converse") == 1
    assert second["output"] == first["output"] and second["usage"] == first["usage"]
    replay = list(bedrock.converse_stream(modelId=MODEL, messages=ask)["stream"])  # a replay as event-stream
    assert "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in replay if "contentBlockDelta" in e) \
        == first["output"]["message"]["content"][0]["text"]
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", KEYS["globex"])
    other = boto3.client("bedrock-runtime", region_name=REGION, endpoint_url=gw.url,
                         verify=gw.server.tls[0])  # type: ignore[union-attr]
    theirs = other.converse(modelId=MODEL, messages=ask)
    assert theirs["ResponseMetadata"]["HTTPHeaders"]["x-gateway-cache"] == "miss"
    metrics = httpx2.get(gw.url + "/metrics", verify=gw.server.tls[0]).text  # type: ignore[union-attr]
    assert 'provider="bedrock"' in metrics


def test_errors_in_bedrocks_shape(gw: LocalGateway, bedrock: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ClientError) as e:
        bedrock.converse(modelId=MODEL, messages=[])
    assert e.value.response["Error"]["Code"] == "ValidationException"
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "not-a-tenant-key")
    stranger = boto3.client("bedrock-runtime", region_name=REGION, endpoint_url=gw.url,
                            verify=gw.server.tls[0])  # type: ignore[union-attr]
    with pytest.raises(ClientError) as e:
        stranger.converse(modelId=MODEL, messages=ASK)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 401
