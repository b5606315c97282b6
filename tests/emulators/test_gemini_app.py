"""The Gemini emulator driven by the official `google-genai` SDK (3.6.1): generateContent and
streamGenerateContent under v1 and v1beta, implicit caching, the cachedContents lifecycle with its 400/403
cases, usageMetadata, auth."""

from __future__ import annotations

import httpx2
import pytest
from google import genai
from google.genai import errors, types

from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)
MODEL = "gemini-2.5-flash"  # implicit and explicit minimum 2048


def _client(emu: EmulatorSet, api_version: str | None = None, key: str = "AIza-test-1") -> genai.Client:
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=emu.gemini_base_url,
                                                                    api_version=api_version))


@pytest.fixture(scope="module")
def client(emu: EmulatorSet) -> genai.Client:
    return _client(emu)  # the SDK's default: /v1


def test_generate_content_v1_and_v1beta_parse_and_usage(emu, client) -> None:
    r = client.models.generate_content(model=MODEL, contents="What is the capital of France?")
    assert r.text and r.candidates[0].finish_reason == types.FinishReason.STOP
    m = r.usage_metadata
    assert m.prompt_token_count > 0 and m.candidates_token_count > 0 and m.thoughts_token_count > 0
    assert m.total_token_count == m.prompt_token_count + m.candidates_token_count + m.thoughts_token_count
    assert m.cached_content_token_count is None and r.model_version == MODEL and r.response_id
    beta_client = _client(emu, "v1beta")  # keep a reference: a collected genai.Client closes its HTTP client
    beta = beta_client.models.generate_content(model=MODEL, contents="What is the capital of France?")
    assert beta.text == r.text
    assert emu.requests("gemini.generateContent")[0].path == f"/v1/models/{MODEL}:generateContent"
    assert emu.requests("gemini.generateContent")[1].path == f"/v1beta/models/{MODEL}:generateContent"
    # the raw JSON validates against the SDK type, which forbids unknown fields
    raw = httpx2.post(f"{emu.gemini_base_url}/v1beta/models/{MODEL}:generateContent?key=k",
                      json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).json()
    types.GenerateContentResponse.model_validate(raw)
    no_thinking = client.models.generate_content(
        model=MODEL, contents="Quick", config=types.GenerateContentConfig(
            thinking_config=types.ThinkingConfig(thinking_budget=0)))
    assert no_thinking.usage_metadata.thoughts_token_count is None


def test_stream_generate_content(emu, client) -> None:
    whole = client.models.generate_content(model=MODEL, contents="Tell me a story about a lighthouse")
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="Tell me a story about a lighthouse"))
    assert len(chunks) > 1 and "".join(c.text for c in chunks) == whole.text
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert chunks[-1].usage_metadata.total_token_count == whole.usage_metadata.total_token_count
    assert all(c.candidates[0].finish_reason is None for c in chunks[:-1])
    with httpx2.stream("POST", f"{emu.gemini_base_url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
                       json={"contents": [{"parts": [{"text": "hi"}]}]}, headers={"x-goog-api-key": "k"}) as resp:
        raw = resp.read().decode()
    frames = [f for f in raw.split("\r\n\r\n") if f]
    assert all(f.startswith("data: {") for f in frames) and "[DONE]" not in raw


def test_implicit_caching_above_the_minimum_only(client, long_system) -> None:
    big = long_system * 2  # ~3,000 tokens: above 2.5 Flash's 2048
    cfg = types.GenerateContentConfig(system_instruction=big)
    first = client.models.generate_content(model=MODEL, contents="First question?", config=cfg)
    assert first.usage_metadata.cached_content_token_count is None
    second = client.models.generate_content(model=MODEL, contents="Second question?", config=cfg)
    cached = second.usage_metadata.cached_content_token_count
    assert 2048 <= cached < second.usage_metadata.prompt_token_count
    assert second.usage_metadata.cache_tokens_details[0].token_count == cached
    small = types.GenerateContentConfig(system_instruction=long_system[:3000])  # ~600 tokens
    for q in ("a?", "b?"):
        r = client.models.generate_content(model=MODEL, contents=q, config=small)
        assert r.usage_metadata.cached_content_token_count is None
    old = client.models.generate_content(model="gemini-2.0-flash", contents="First question?", config=cfg)
    again = client.models.generate_content(model="gemini-2.0-flash", contents="Second question?", config=cfg)
    assert old.usage_metadata.cached_content_token_count is None  # implicit caching is 2.5+ only
    assert again.usage_metadata.cached_content_token_count is None


def test_cached_content_lifecycle(emu, client, long_system) -> None:
    doc = long_system * 2
    cache = client.caches.create(model=MODEL, config=types.CreateCachedContentConfig(
        contents=[doc], system_instruction="You answer from the handbook.", ttl="600s", display_name="handbook"))
    assert cache.name.startswith("cachedContents/") and cache.display_name == "handbook"
    assert cache.model == f"models/{MODEL}" and cache.usage_metadata.total_token_count > 2048
    assert (cache.expire_time - cache.create_time).total_seconds() == pytest.approx(600)
    total = cache.usage_metadata.total_token_count

    r = client.models.generate_content(model=MODEL, contents="What is the return window?",
                                       config=types.GenerateContentConfig(cached_content=cache.name))
    m = r.usage_metadata
    assert m.cached_content_token_count == total and m.prompt_token_count > total  # cached included in prompt
    assert client.caches.get(name=cache.name).name == cache.name
    assert [c.name for c in client.caches.list()] == [cache.name]

    updated = client.caches.update(name=cache.name, config=types.UpdateCachedContentConfig(ttl="3600s"))
    assert updated.expire_time > cache.expire_time
    emu.clock.advance(3000)
    client.models.generate_content(model=MODEL, contents="Still there?",
                                   config=types.GenerateContentConfig(cached_content=cache.name))
    emu.clock.advance(601)  # past the patched expiry
    with pytest.raises(errors.ClientError) as e:
        client.models.generate_content(model=MODEL, contents="Expired?",
                                       config=types.GenerateContentConfig(cached_content=cache.name))
    assert e.value.code == 403 and e.value.status == "PERMISSION_DENIED"
    with pytest.raises(errors.ClientError) as e:
        client.caches.get(name=cache.name)
    assert e.value.code == 403
    assert list(client.caches.list()) == []

    second = client.caches.create(model=MODEL, config=types.CreateCachedContentConfig(contents=[doc]))
    client.caches.delete(name=second.name)
    with pytest.raises(errors.ClientError):
        client.caches.get(name=second.name)


def test_cached_content_errors(emu, client, long_system) -> None:
    cache = client.caches.create(model=MODEL, config=types.CreateCachedContentConfig(contents=[long_system * 2]))
    with pytest.raises(errors.ClientError) as e:  # systemInstruction together with cachedContent
        client.models.generate_content(model=MODEL, contents="x", config=types.GenerateContentConfig(
            cached_content=cache.name, system_instruction="no"))
    assert e.value.code == 400 and "CachedContent can not be used" in e.value.message
    with pytest.raises(errors.ClientError) as e:  # another model
        client.models.generate_content(model="gemini-2.5-pro", contents="x",
                                       config=types.GenerateContentConfig(cached_content=cache.name))
    assert e.value.code == 400 and "has to be the same" in e.value.message
    with pytest.raises(errors.ClientError) as e:  # unknown
        client.models.generate_content(model=MODEL, contents="x",
                                       config=types.GenerateContentConfig(cached_content="cachedContents/nope"))
    assert e.value.code == 403
    other = _client(emu, key="AIza-other")
    with pytest.raises(errors.ClientError) as e:  # another key cannot see it
        other.caches.get(name=cache.name)
    assert e.value.code == 403
    with pytest.raises(errors.ClientError) as e:  # below the explicit minimum
        client.caches.create(model=MODEL, config=types.CreateCachedContentConfig(contents=["too small"]))
    assert e.value.code == 400 and "too small" in e.value.message


def test_auth_and_function_calls(emu, client) -> None:
    url = f"{emu.gemini_base_url}/v1beta/models/{MODEL}:generateContent"
    body = {"contents": [{"parts": [{"text": "hi"}]}]}
    with httpx2.Client() as h:
        assert h.post(url + "?key=AIza", json=body).status_code == 200
        missing = h.post(url, json=body)
        assert missing.status_code == 403 and missing.json()["error"]["status"] == "PERMISSION_DENIED"
        emu.state.valid_keys = {"AIza-good"}
        bad = h.post(url, json=body, headers={"x-goog-api-key": "AIza-bad"})
        assert bad.status_code == 400 and "API key not valid" in bad.json()["error"]["message"]
        emu.state.valid_keys = None
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather", description="Weather", parameters_json_schema={
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})])
    r = client.models.generate_content(model=MODEL, contents="Call get_weather for Rome",
                                       config=types.GenerateContentConfig(tools=[tool]))
    assert r.function_calls[0].name == "get_weather" and r.function_calls[0].args == {"city": "Rome"}
    cut = client.models.generate_content(model=MODEL, contents="Long", config=types.GenerateContentConfig(
        max_output_tokens=40, thinking_config=types.ThinkingConfig(thinking_budget=0)))
    assert cut.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert cut.usage_metadata.candidates_token_count == 40
    assert client.models.count_tokens(model=MODEL, contents="hello world").total_tokens == 2


def test_a_cached_content_does_not_change_the_answer(client, long_system) -> None:
    doc, system = long_system * 2, "You answer from the handbook."
    cache = client.caches.create(model=MODEL, config=types.CreateCachedContentConfig(
        contents=[doc], system_instruction=system))
    via_cache = client.models.generate_content(model=MODEL, contents="What is the return window?",
                                               config=types.GenerateContentConfig(cached_content=cache.name))
    inline = client.models.generate_content(
        model=MODEL, contents=[types.Content(role="user", parts=[types.Part(text=doc)]),
                               types.Content(role="user", parts=[types.Part(text="What is the return window?")])],
        config=types.GenerateContentConfig(system_instruction=system))
    assert via_cache.text == inline.text
    assert via_cache.usage_metadata.prompt_token_count == inline.usage_metadata.prompt_token_count
