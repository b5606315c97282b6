"""End to end: each official SDK → gateway → vendor emulator, for every endpoint of the contract,
stream and non-stream, compared with the same SDK calling the emulator directly."""

from __future__ import annotations

import logging

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import types

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

KEY = "key-acme"
MSG = [{"role": "user", "content": "How do I rotate an API key without downtime?"}]
# Layers off: this suite checks the proxy itself; the layers have their own suites.
PLAIN = {"acme": {"key": KEY, "response_cache": {"enabled": False}}}


@pytest.fixture
def gw(gateway_factory):  # type: ignore[no-untyped-def]
    return gateway_factory(PLAIN)


def direct_openai(emulators) -> openai.OpenAI:  # type: ignore[no-untyped-def]
    return openai.OpenAI(base_url=emulators.openai_base_url, api_key="sk-gateway-openai", max_retries=0)


def test_openai_chat_matches_direct(gw, emulators) -> None:  # type: ignore[no-untyped-def]
    raw = gw.openai(KEY).chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=MSG)
    via = raw.parse()
    direct = direct_openai(emulators).chat.completions.create(model="gpt-4o-mini", messages=MSG)
    assert via.choices[0].message.content == direct.choices[0].message.content
    assert via.usage == direct.usage
    assert raw.headers["x-gateway-cache"] in ("miss", "bypass")
    assert raw.headers["x-gateway-request-id"].startswith("gw-")


@pytest.mark.parametrize("include_usage", [False, True])
def test_openai_chat_stream_matches_direct(gw, emulators, include_usage: bool) -> None:  # type: ignore[no-untyped-def]
    kw = {"stream_options": {"include_usage": True}} if include_usage else {}
    via = list(gw.openai(KEY).chat.completions.create(model="gpt-4o-mini", messages=MSG, stream=True, **kw))
    direct = list(direct_openai(emulators).chat.completions.create(model="gpt-4o-mini", messages=MSG, stream=True,
                                                                   **kw))
    text = lambda chunks: "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)  # noqa: E731
    assert text(via) == text(direct) != ""
    assert len(via) == len(direct)
    if include_usage:
        assert via[-1].choices == [] and via[-1].usage == direct[-1].usage
    else:
        # the gateway asked upstream for usage (to meter the stream) and took that chunk out again
        assert all(c.usage is None for c in via) and all(c.choices for c in via)


def test_openai_responses_stream_and_not(gw, emulators) -> None:  # type: ignore[no-untyped-def]
    via = gw.openai(KEY).responses.create(model="gpt-4o-mini", input="Explain idempotency keys.")
    direct = direct_openai(emulators).responses.create(model="gpt-4o-mini", input="Explain idempotency keys.")
    assert via.output_text == direct.output_text and via.usage == direct.usage
    with gw.openai(KEY).responses.stream(model="gpt-4o-mini", input="Explain idempotency keys.") as stream:
        final = stream.get_final_response()
    assert final.output_text == direct.output_text
    assert final.usage.input_tokens == direct.usage.input_tokens


def test_openai_embeddings_and_models(gw, emulators) -> None:  # type: ignore[no-untyped-def]
    via = gw.openai(KEY).embeddings.create(model="text-embedding-3-small", input=["alpha", "beta"])
    direct = direct_openai(emulators).embeddings.create(model="text-embedding-3-small", input=["alpha", "beta"])
    assert [d.embedding for d in via.data] == [d.embedding for d in direct.data]
    assert via.usage == direct.usage
    names = {m.id for m in gw.openai(KEY).models.list()}
    direct_names = {m.id for m in direct_openai(emulators).models.list()}
    # OpenAI's own list, plus the other vendors' models the gateway serves through the OpenAI protocol
    assert direct_names and direct_names <= names and any(n.startswith("claude-") for n in names - direct_names)


def test_anthropic_messages_stream_and_not(gw, emulators) -> None:  # type: ignore[no-untyped-def]
    kw = {"model": "claude-sonnet-4-6", "max_tokens": 200, "messages": MSG}
    direct_client = anthropic.Anthropic(base_url=emulators.anthropic_base_url, api_key="sk-gateway-anthropic")
    direct = direct_client.messages.create(**kw)
    via = gw.anthropic(KEY).messages.create(**kw)
    assert via.content[0].text == direct.content[0].text and via.usage == direct.usage
    with gw.anthropic(KEY).messages.stream(**kw) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == direct.content[0].text
    assert final.usage.output_tokens == direct.usage.output_tokens
    count = gw.anthropic(KEY).messages.count_tokens(model="claude-sonnet-4-6", messages=MSG)
    assert count.input_tokens == direct_client.messages.count_tokens(model="claude-sonnet-4-6",
                                                                     messages=MSG).input_tokens


@pytest.mark.parametrize("api_version", [None, "v1beta"])
def test_gemini_generate_stream_and_not(gw, emulators, api_version: str | None) -> None:  # type: ignore[no-untyped-def]
    options = types.HttpOptions(base_url=emulators.gemini_base_url, api_version=api_version) if api_version \
        else types.HttpOptions(base_url=emulators.gemini_base_url)
    direct_client = genai.Client(api_key="gateway-gemini-key", http_options=options)
    prompt = "What is a vector clock?"
    direct = direct_client.models.generate_content(model="gemini-2.5-flash", contents=prompt)
    client = gw.gemini(KEY, api_version)
    via = client.models.generate_content(model="gemini-2.5-flash", contents=prompt)
    assert via.text == direct.text
    assert via.usage_metadata.prompt_token_count == direct.usage_metadata.prompt_token_count
    assert via.usage_metadata.total_token_count == direct.usage_metadata.total_token_count
    streamed = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents=prompt))
    assert "".join(c.text or "" for c in streamed) == direct.text
    assert streamed[-1].usage_metadata.total_token_count == direct.usage_metadata.total_token_count


def test_gemini_cached_contents_lifecycle_and_tenant_isolation(gateway_factory) -> None:  # type: ignore[no-untyped-def]
    gw = gateway_factory({"acme": {"key": KEY}, "globex": {"key": "key-globex"}})
    client = gw.gemini(KEY, "v1beta")
    long_doc = "Section. " * 1500
    cache = client.caches.create(model="gemini-2.5-flash", config=types.CreateCachedContentConfig(
        contents=[types.Content(role="user", parts=[types.Part(text=long_doc)])], ttl="600s"))
    assert cache.name and cache.usage_metadata.total_token_count > 1000
    assert client.caches.get(name=cache.name).name == cache.name
    answer = client.models.generate_content(model="gemini-2.5-flash", contents="Summarize.",
                                            config=types.GenerateContentConfig(cached_content=cache.name))
    assert answer.usage_metadata.cached_content_token_count == cache.usage_metadata.total_token_count
    # another tenant can neither see, use nor delete it (all share the gateway's one Gemini key)
    other = gw.gemini("key-globex", "v1beta")
    assert cache.name not in {c.name for c in other.caches.list()}
    with pytest.raises(genai.errors.ClientError) as err:
        other.caches.get(name=cache.name)
    assert err.value.code == 403
    with pytest.raises(genai.errors.ClientError):
        other.models.generate_content(model="gemini-2.5-flash", contents="Summarize.",
                                      config=types.GenerateContentConfig(cached_content=cache.name))
    with pytest.raises(genai.errors.ClientError):
        other.caches.delete(name=cache.name)
    assert cache.name in {c.name for c in client.caches.list()}
    client.caches.delete(name=cache.name)


def test_claude_through_the_openai_sdk(gw) -> None:  # type: ignore[no-untyped-def]
    client = gw.openai(KEY)
    answer = client.chat.completions.create(model="claude-sonnet-4-6", messages=MSG, max_tokens=300)
    assert answer.choices[0].message.content and answer.choices[0].finish_reason == "stop"
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    chunks = list(client.chat.completions.create(model="claude-sonnet-4-6", messages=MSG, max_tokens=300,
                                                 stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == answer.choices[0].message.content
    assert chunks[-1].usage.total_tokens == answer.usage.total_tokens
    gem = client.chat.completions.create(model="gemini-2.5-flash", messages=MSG)
    assert gem.choices[0].message.content


# ---- the gateway's own errors, in each vendor's shape ------------------------------------------


def test_unknown_key_is_401_in_each_vendor_shape(gw) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(openai.AuthenticationError):
        gw.openai("wrong").chat.completions.create(model="gpt-4o-mini", messages=MSG)
    client = gw.anthropic("wrong")  # keep a reference: a collected SDK client closes its connection pool
    with pytest.raises(anthropic.AuthenticationError) as err:
        client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=MSG)
    assert err.value.body["type"] == "error" and err.value.body["error"]["type"] == "authentication_error"
    gclient = gw.gemini("wrong")
    with pytest.raises(genai.errors.ClientError) as gerr:
        gclient.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert gerr.value.code == 401 and gerr.value.status == "UNAUTHENTICATED"


def test_bad_json_and_unknown_model(gw) -> None:  # type: ignore[no-untyped-def]
    bad = httpx2.post(f"{gw.url}/v1/chat/completions", content=b"{not json",
                      headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    bad = httpx2.post(f"{gw.url}/v1/messages", content=b"[1, 2]", headers={"x-api-key": KEY})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    bad = httpx2.post(f"{gw.url}/v1/chat/completions", content=b"\xff\xfe{}",
                      headers={"authorization": f"Bearer {KEY}"})
    assert bad.status_code == 400
    with pytest.raises(openai.NotFoundError):
        gw.openai(KEY).chat.completions.create(model="no-such-model", messages=MSG)


def test_body_over_the_limit_is_413(gateway_factory) -> None:  # type: ignore[no-untyped-def]
    gw = gateway_factory(PLAIN, max_body_bytes=4096)
    with pytest.raises(openai.APIStatusError) as err:
        gw.openai(KEY).chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x" * 5000}])
    assert err.value.status_code == 413


def test_unreachable_upstream_is_502(gateway_factory) -> None:  # type: ignore[no-untyped-def]
    from gateway_dev.localrun import free_port

    gw = gateway_factory(PLAIN, openai_base_url=f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(openai.APIStatusError) as err:
        gw.openai(KEY).chat.completions.create(model="gpt-4o-mini", messages=MSG)
    assert err.value.status_code == 502


def test_upstream_timeout_is_504(gateway_factory) -> None:  # type: ignore[no-untyped-def]
    gw = gateway_factory(PLAIN, read_timeout=0.5)
    client = gw.anthropic(KEY)
    with pytest.raises(anthropic.APIStatusError) as err:
        client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=MSG,
                                          extra_headers={"x-emulator-fault": "slow_first_byte=3"})
    assert err.value.status_code == 504 and err.value.body["error"]["type"] == "timeout_error"


@pytest.mark.parametrize("status", [400, 429, 500, 503, 529])
def test_upstream_errors_pass_through_unchanged(gw, emulators, status: int) -> None:  # type: ignore[no-untyped-def]
    fault = {"x-emulator-fault": f"status={status}"}
    via = httpx2.post(f"{gw.url}/v1/messages", headers={"x-api-key": KEY, **fault},
                      json={"model": "claude-sonnet-4-6", "max_tokens": 10, "messages": MSG})
    direct = httpx2.post(f"{emulators.anthropic_base_url}/v1/messages",
                         headers={"x-api-key": "sk-gateway-anthropic", "anthropic-version": "2023-06-01", **fault},
                         json={"model": "claude-sonnet-4-6", "max_tokens": 10, "messages": MSG})
    assert via.status_code == direct.status_code == status
    assert via.json()["error"]["type"] == direct.json()["error"]["type"]
    assert via.headers["x-gateway-request-id"]


def test_health_ready_metrics(gw) -> None:  # type: ignore[no-untyped-def]
    assert httpx2.get(f"{gw.url}/healthz").status_code == 200
    assert httpx2.get(f"{gw.url}/readyz").status_code == 200
    gw.openai(KEY).chat.completions.create(model="gpt-4o-mini", messages=MSG)
    metrics = httpx2.get(f"{gw.url}/metrics").text
    assert "gateway_requests_total" in metrics


def test_unknown_path_is_a_vendor_shaped_404(gw, caplog) -> None:  # type: ignore[no-untyped-def]
    with caplog.at_level(logging.INFO, logger="gateway.access"):
        r = httpx2.post(f"{gw.url}/v1/nothing-here?key=secret", json={})
        assert r.status_code == 404 and "error" in r.json()
        bad = httpx2.delete(f"{gw.url}/v1/chat/completions")
        assert bad.status_code == 405
    lines = [(rec.path, rec.status) for rec in caplog.records if rec.name == "gateway.access" and hasattr(rec, "path")]
    assert ("/v1/nothing-here", 404) in lines and ("/v1/chat/completions", 405) in lines
    assert not any("secret" in rec.getMessage() or "secret" in str(rec.__dict__) for rec in caplog.records)


def test_gemini_path_without_a_version_is_served_as_v1beta(gw, emulators) -> None:  # type: ignore[no-untyped-def]
    # What LiteLLM's gemini/ route calls when api_base is the gateway's bare URL.
    body = {"contents": [{"role": "user", "parts": [{"text": "What is a vector clock?"}]}]}
    r = httpx2.post(f"{gw.url}/models/gemini-2.5-flash:generateContent", json=body, headers={"x-goog-api-key": KEY})
    assert r.status_code == 200 and r.json()["candidates"][0]["content"]["parts"][0]["text"]
    assert emulators.requests("gemini.generateContent")[-1].path == "/v1beta/models/gemini-2.5-flash:generateContent"
    count = httpx2.post(f"{gw.url}/models/gemini-2.5-flash:countTokens", json=body, headers={"x-goog-api-key": KEY})
    assert count.status_code == 200 and count.json()["totalTokens"] > 0
    assert httpx2.post(f"{gw.url}/models/gemini-2.5-flash:explode", json=body,
                       headers={"x-goog-api-key": KEY}).status_code == 404


def test_slow_stream_first_chunk_arrives_before_the_upstream_finishes(gw) -> None:  # type: ignore[no-untyped-def]
    import time

    client = gw.openai(KEY)
    start = time.perf_counter()
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=MSG, stream=True, max_tokens=40,
                                            extra_headers={"x-emulator-latency": "itl=0.05"})
    first = None
    pieces = []
    for chunk in stream:
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter() - start
        pieces.append(chunk)
    total = time.perf_counter() - start
    assert first is not None and total > 1.0  # ~40 tokens × 50 ms upstream
    assert first < total / 3, (first, total)  # relayed as it arrives, not buffered
