"""Azure OpenAI through the gateway: the official `AzureOpenAI` client on the native surface (deployment paths
and the v1 API) and the OpenAI client with `azure/<deployment>`, plain and streamed. The emulator's text and usage
come back exactly; the emulator saw the gateway's resource key, never the tenant's; the response cache, tenant
isolation, usage records and Prometheus labels work for the platform."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import orjson
import pytest

from gateway_dev.emulators import EmulatorSet
from gateway_dev.localrun import LocalGateway
from tests.platforms.conftest import AZURE_KEY, KEYS, usage_records

pytestmark = pytest.mark.timeout(120)
VERSION = "2024-10-21"
MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Why is the sky blue?"}]


def azure(gw: LocalGateway, tenant: str = "acme") -> openai.AzureOpenAI:
    return openai.AzureOpenAI(azure_endpoint=gw.url, api_key=KEYS[tenant], api_version=VERSION, max_retries=0,
                              http_client=openai.DefaultHttpxClient(verify=gw.server.tls[0]))  # type: ignore[union-attr]


def oai(gw: LocalGateway, tenant: str = "acme") -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=KEYS[tenant], max_retries=0,
                         http_client=openai.DefaultHttpxClient(verify=gw.server.tls[0]))  # type: ignore[union-attr]


def direct(emu: EmulatorSet, messages: list[dict[str, Any]], deployment: str = "gpt-4o") -> dict[str, Any]:
    """What the emulator answers this request when asked directly (answers are deterministic)."""
    r = httpx2.post(f"{emu.platform_url}/openai/deployments/{deployment}/chat/completions?api-version={VERSION}",
                    headers={"api-key": "direct"}, content=orjson.dumps({"messages": messages}))
    assert r.status_code == 200, r.text
    return r.json()


def test_azure_client_plain_and_streamed(gw: LocalGateway, emu: EmulatorSet) -> None:
    expected = direct(emu, MESSAGES)
    emu.reset(caches=True)
    with azure(gw) as client:
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES,  # type: ignore[arg-type]
                                                               extra_headers={"cache-control": "no-store"})
        answer = raw.parse()
        assert answer.choices[0].message.content == expected["choices"][0]["message"]["content"]
        assert answer.usage is not None and answer.usage.model_dump(exclude_none=True) == expected["usage"]
        seen = emu.requests("azure.chat")[-1]
        assert seen.headers["api-key"] == AZURE_KEY and "authorization" not in seen.headers
        assert seen.path.endswith("/openai/deployments/gpt-4o/chat/completions")
        stream = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True,  # type: ignore[arg-type]
                                                stream_options={"include_usage": True},
                                                extra_headers={"cache-control": "no-store"})
        chunks = list(stream)
    # Azure's annotation chunks carry no `delta` (content-filter results only), as the platform sends them
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices and c.choices[0].delta)
    assert text == expected["choices"][0]["message"]["content"]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == expected["usage"][
        "completion_tokens"]
    assert emu.requests("azure.chat")[-1].headers["api-key"] == AZURE_KEY


def test_v1_api_and_the_openai_protocol(gw: LocalGateway, emu: EmulatorSet) -> None:
    expected = direct(emu, MESSAGES)["choices"][0]["message"]["content"]
    emu.reset()
    with openai.OpenAI(base_url=gw.url + "/openai/v1/", api_key=KEYS["acme"], max_retries=0,
                       http_client=openai.DefaultHttpxClient(verify=gw.server.tls[0])) as v1:  # type: ignore[union-attr]
        got = v1.chat.completions.create(model="gpt-4o", messages=MESSAGES,  # type: ignore[arg-type]
                                         extra_headers={"cache-control": "no-store"})
        assert got.choices[0].message.content == expected
    with oai(gw) as client:
        got = client.chat.completions.create(model="azure/gpt-4o", messages=MESSAGES,  # type: ignore[arg-type]
                                             extra_headers={"cache-control": "no-store"})
        assert got.choices[0].message.content == expected
        streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
            model="azure/gpt-4o", messages=MESSAGES, stream=True,  # type: ignore[arg-type]
            extra_headers={"cache-control": "no-store"}) if c.choices and c.choices[0].delta)
        assert streamed == expected
    seen = emu.requests("azure.chat")
    assert len(seen) == 3 and all(r.headers["api-key"] == AZURE_KEY for r in seen)


def test_response_cache_isolation_usage_and_metrics(gw: LocalGateway, emu: EmulatorSet) -> None:
    messages = [{"role": "user", "content": "Name three primary colours (azure cache test)."}]
    ids: dict[str, str] = {}
    with oai(gw) as client:
        first = client.chat.completions.with_raw_response.create(model="azure/gpt-4o", messages=messages)  # type: ignore[arg-type]
        gw.wait_idle()
        second = client.chat.completions.with_raw_response.create(model="azure/gpt-4o", messages=messages)  # type: ignore[arg-type]
    assert first.headers["x-gateway-cache"] == "miss" and second.headers["x-gateway-cache"] == "response-hit"
    assert second.parse().choices[0].message.content == first.parse().choices[0].message.content
    assert emu.calls("azure.chat") == 1
    ids[first.headers["x-gateway-request-id"]] = "miss"
    ids[second.headers["x-gateway-request-id"]] = "hit"
    with oai(gw, "globex") as other:
        theirs = other.chat.completions.with_raw_response.create(model="azure/gpt-4o", messages=messages)  # type: ignore[arg-type]
    assert theirs.headers["x-gateway-cache"] == "miss" and emu.calls("azure.chat") == 2  # tenants never share
    found = usage_records(gw, "acme", set(ids))
    miss = next(r for i, r in found.items() if ids[i] == "miss")
    hit = next(r for i, r in found.items() if ids[i] == "hit")
    assert miss["provider"] == "azure" and miss["model"] == "azure/gpt-4o"
    assert miss["input_tokens"] == first.parse().usage.prompt_tokens  # type: ignore[union-attr]
    assert miss["cached_input_tokens"] == 0 and miss["cost_usd"] > 0  # priced from litellm's map (gpt-4o)
    assert hit["gateway_cache"] == "response-hit" and hit["saved_usd"] > 0 and hit["saved_layer"] == "response"
    metrics = httpx2.get(gw.url + "/metrics", verify=gw.server.tls[0]).text  # type: ignore[union-attr]
    assert 'provider="azure"' in metrics


def test_provider_prompt_cache_reads_are_normalized(gw: LocalGateway, emu: EmulatorSet) -> None:
    long = [{"role": "system", "content": "Policy: " + "refunds are accepted within thirty days. " * 220},
            {"role": "user", "content": "Can I return a opened box?"}]
    with azure(gw) as client:
        client.chat.completions.create(model="gpt-4o", messages=long,  # type: ignore[arg-type]
                                       extra_headers={"cache-control": "no-store"})
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=long,  # type: ignore[arg-type]
                                                               extra_headers={"cache-control": "no-store"})
    cached = raw.parse().usage.prompt_tokens_details.cached_tokens  # type: ignore[union-attr]
    assert cached >= 1024
    record = usage_records(gw, "acme", {raw.headers["x-gateway-request-id"]})[raw.headers["x-gateway-request-id"]]
    assert record["cached_input_tokens"] == cached


def test_unknown_deployment_and_bad_key_in_azures_shape(gw: LocalGateway, emu: EmulatorSet) -> None:
    with azure(gw) as client, pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no-such-deployment", messages=MESSAGES)  # type: ignore[arg-type]
    with openai.AzureOpenAI(azure_endpoint=gw.url, api_key="wrong", api_version=VERSION, max_retries=0,
                            http_client=openai.DefaultHttpxClient(verify=gw.server.tls[0])) as bad, \
            pytest.raises(openai.AuthenticationError):  # type: ignore[union-attr]
        bad.chat.completions.create(model="gpt-4o", messages=MESSAGES)  # type: ignore[arg-type]


def test_responses_api_on_azure(gw: LocalGateway, emu: EmulatorSet) -> None:
    with oai(gw) as client:
        got = client.responses.create(model="azure/gpt-4o", input="Why is the sky blue?",
                                      extra_headers={"cache-control": "no-store"})
    assert got.output_text and got.usage is not None and got.usage.input_tokens > 0
    seen = emu.requests("azure.responses")[-1]
    assert seen.path == "/openai/responses" and seen.body["model"] == "gpt-4o" and seen.headers["api-key"] == AZURE_KEY
    with azure(gw) as native:
        again = native.responses.create(model="gpt-4o", input="Why is the sky blue?",
                                        extra_headers={"cache-control": "no-store"})
    assert again.output_text == got.output_text
