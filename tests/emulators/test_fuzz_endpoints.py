"""Hypothesis fuzz of every vendor endpoint of the emulators, talked to directly over one keep-alive
connection: well-formed bodies, well-formed bodies with any one value (at any depth) or field swapped for
arbitrary JSON, bodies nested past the depth limit, and arbitrary objects. Every answer is < 500 and, when
it is an error, a well-formed error body of that vendor; a 200 stream carries no in-stream server error.

A fixed, repeatable set by default (60 examples per endpoint); `GATEWAY_EMULATOR_FUZZ_EXAMPLES=1000` explores
afresh with a random seed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway_dev.emulators import EmulatorSet

EXAMPLES = int(os.environ.get("GATEWAY_EMULATOR_FUZZ_EXAMPLES", "60"))
DERANDOMIZE = "GATEWAY_EMULATOR_FUZZ_EXAMPLES" not in os.environ
H = {"authorization": "Bearer sk-fuzz", "x-api-key": "k", "x-goog-api-key": "g", "anthropic-version": "2023-06-01"}

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
words = text.filter(str.strip)
scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False) \
    | text | st.sampled_from(["", "yes", "true", "0", "text", "user", "function", "ephemeral", "1h", "3600s"])
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    text.map(lambda s: s[:10]) | st.sampled_from(["type", "text", "role", "content", "name", "parts"]), inner,
    max_size=3), max_leaves=10)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        return {**obj, head: _replace(obj[head], rest, value)}
    return [_replace(v, rest, value) if i == head else v for i, v in enumerate(obj)]


def _nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


def bodies(valid: st.SearchStrategy[dict[str, Any]], fields: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Valid bodies; one value anywhere in one replaced by arbitrary JSON; one field (known or not) set to
    arbitrary JSON; one field nested around the depth limit; arbitrary objects."""
    def swap(t: tuple[dict[str, Any], int, Any]) -> dict[str, Any]:
        body, n, value = t
        paths = list(_paths(body))
        return _replace(body, paths[n % len(paths)], value)

    anywhere = st.tuples(valid, st.integers(0, 10_000), json_values).map(swap)
    field = st.tuples(valid, st.sampled_from([*fields, "zzz"]), json_values).map(lambda t: {**t[0], t[1]: t[2]})
    deep = st.tuples(valid, st.sampled_from(fields), st.integers(95, 130)).map(
        lambda t: {**t[0], t[1]: _nested(t[2])})
    return st.one_of(valid, anywhere, anywhere, field, deep, st.dictionaries(text, json_values, max_size=4))


def msgs(roles: list[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(st.fixed_dictionaries({"role": st.sampled_from(roles), "content": words}), min_size=1, max_size=3)


chat_parts = st.lists(st.sampled_from([{"type": "text", "text": "Describe this."}, {
    "type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}]), min_size=1, max_size=2)
tools = st.lists(st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
    {"name": st.sampled_from(["get_weather", "lookup"]), "parameters": st.just(
        {"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}})})}), max_size=2)
CHAT = st.fixed_dictionaries(
    {"model": st.sampled_from(["gpt-4o-mini", "gpt-5", "o3-mini"]),
     "messages": msgs(["user", "system", "developer"]) | st.builds(
         lambda p: [{"role": "user", "content": p}], chat_parts)},
    optional={"stream": st.booleans(), "max_completion_tokens": st.integers(1, 60), "stop": st.lists(words, max_size=2),
              "tools": tools, "tool_choice": st.sampled_from(["auto", "required", "none"]), "n": st.integers(1, 2),
              "stream_options": st.just({"include_usage": True}), "user": words, "prompt_cache_key": words,
              "response_format": st.just({"type": "json_object"})})
DEEPSEEK = st.fixed_dictionaries(
    {"model": st.sampled_from(["deepseek-chat", "deepseek-reasoner"]), "messages": msgs(["user", "system"])},
    optional={"stream": st.booleans(), "max_tokens": st.integers(1, 60), "tools": tools})
RESPONSES = st.fixed_dictionaries(
    {"model": st.sampled_from(["gpt-4o-mini", "gpt-5"]),
     "input": words | st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": st.just(
         [{"type": "input_text", "text": "What is caching?"}])}), min_size=1, max_size=2)},
    optional={"stream": st.booleans(), "instructions": words, "max_output_tokens": st.integers(16, 80),
              "metadata": st.dictionaries(words, words, max_size=2), "store": st.booleans(),
              "text": st.just({"format": {"type": "json_schema", "name": "x", "schema": {
                  "type": "object", "properties": {"a": {"type": "string"}}}}})})
EMBEDDINGS = st.fixed_dictionaries(
    {"model": st.sampled_from(["text-embedding-3-small", "text-embedding-3-large"]),
     "input": words | st.lists(words, min_size=1, max_size=3)},
    optional={"dimensions": st.integers(1, 256), "encoding_format": st.sampled_from(["float", "base64"])})
blocks = st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": words},
                                        optional={"cache_control": st.just({"type": "ephemeral"})}), min_size=1,
                  max_size=2)
CLAUDE_BASE = {"model": st.sampled_from(["claude-sonnet-4-5", "claude-haiku-4-5"]),
               "messages": st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": words | blocks}),
                                    min_size=1, max_size=2)}
CLAUDE_EXTRAS = {"system": words | blocks, "tools": st.lists(st.fixed_dictionaries(
    {"name": st.sampled_from(["get_weather", "lookup"]), "input_schema": st.just({"type": "object"})}), max_size=2),
    "tool_choice": st.sampled_from([{"type": "auto"}, {"type": "any"}]),
    "cache_control": st.just({"type": "ephemeral"})}
MESSAGES = st.fixed_dictionaries({**CLAUDE_BASE, "max_tokens": st.integers(1, 80)}, optional={
    **CLAUDE_EXTRAS, "stream": st.booleans(), "stop_sequences": st.lists(words, max_size=2),
    "temperature": st.floats(0, 1), "metadata": st.fixed_dictionaries({"user_id": words})})
COUNT_TOKENS = st.fixed_dictionaries(CLAUDE_BASE, optional=CLAUDE_EXTRAS)
contents = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "model"]), "parts": st.lists(
    st.fixed_dictionaries({"text": words}), min_size=1, max_size=2)}), min_size=1, max_size=2)
GEMINI = st.fixed_dictionaries({"contents": contents}, optional={
    "systemInstruction": st.fixed_dictionaries({"parts": st.just([{"text": "Be brief."}])}),
    "generationConfig": st.fixed_dictionaries({}, optional={
        "maxOutputTokens": st.integers(1, 80), "stopSequences": st.lists(words, max_size=2),
        "thinkingConfig": st.fixed_dictionaries({"thinking_budget": st.integers(0, 64)})}),
    "tools": st.just([{"functionDeclarations": [{"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}]}])})
HANDBOOK = " ".join(f"Section {i}: items may be returned within {i + 10} days with a receipt." for i in range(200))
GEMINI_CACHE = st.fixed_dictionaries({"model": st.just("models/gemini-2.5-flash"), "contents": contents.map(
    lambda c: [{"role": "user", "parts": [{"text": HANDBOOK}]}, *c])},
                                     optional={"ttl": st.sampled_from(["60s", "3600s", "1.5s"]),
                                               "displayName": words})
VLLM_CHAT = st.fixed_dictionaries({"messages": msgs(["user", "system"])}, optional={
    "model": st.just("Qwen/Qwen3-8B"), "stream": st.booleans(), "max_tokens": st.integers(1, 60),
    "stop": st.lists(words, max_size=2), "cache_salt": words, "tools": tools,
    "stream_options": st.just({"include_usage": True})})
VLLM_COMPLETIONS = st.fixed_dictionaries({"prompt": words | st.lists(st.integers(0, 1000), min_size=1, max_size=5)},
                                         optional={"stream": st.booleans(), "max_tokens": st.integers(1, 60),
                                                   "stop": words})

ENDPOINTS: dict[str, tuple[str, str, str, st.SearchStrategy[dict[str, Any]]]] = {
    "openai.chat": ("vendor", "/v1/chat/completions", "openai", CHAT),
    "openai.responses": ("vendor", "/v1/responses", "openai", RESPONSES),
    "openai.embeddings": ("vendor", "/v1/embeddings", "openai", EMBEDDINGS),
    "deepseek.chat": ("vendor", "/chat/completions", "openai", DEEPSEEK),
    "anthropic.messages": ("vendor", "/v1/messages", "anthropic", MESSAGES),
    "anthropic.count_tokens": ("vendor", "/v1/messages/count_tokens", "anthropic", COUNT_TOKENS),
    "gemini.generateContent": ("vendor", "/v1beta/models/gemini-2.5-flash:generateContent", "gemini", GEMINI),
    "gemini.streamGenerateContent": ("vendor", "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                                     "gemini", GEMINI),
    "gemini.countTokens": ("vendor", "/v1beta/models/gemini-2.5-flash:countTokens", "gemini", GEMINI),
    "gemini.cachedContents": ("vendor", "/v1beta/cachedContents", "gemini", GEMINI_CACHE),
    "vllm.chat": ("vllm", "/v1/chat/completions", "vllm", VLLM_CHAT),
    "vllm.completions": ("vllm", "/v1/completions", "vllm", VLLM_COMPLETIONS),
}
FIELDS = {"openai.chat": ["model", "messages", "stream", "stream_options", "max_tokens", "n", "stop", "tools",
                          "tool_choice", "response_format", "temperature", "prompt_cache_options", "metadata"],
          "openai.responses": ["model", "input", "stream", "instructions", "previous_response_id", "tools",
                               "tool_choice", "text", "reasoning", "max_output_tokens", "metadata"],
          "openai.embeddings": ["model", "input", "dimensions", "encoding_format"],
          "deepseek.chat": ["messages", "stream", "max_tokens", "tools", "tool_choice", "stop", "response_format"],
          "anthropic.messages": ["model", "messages", "max_tokens", "system", "tools", "tool_choice", "thinking",
                                 "stream", "stop_sequences", "cache_control", "metadata"],
          "anthropic.count_tokens": ["model", "messages", "system", "tools", "tool_choice", "thinking"],
          "gemini.generateContent": ["contents", "systemInstruction", "generationConfig", "tools", "toolConfig",
                                     "cachedContent", "generation_config"],
          "gemini.streamGenerateContent": ["contents", "generationConfig", "cachedContent", "tools"],
          "gemini.countTokens": ["contents", "generateContentRequest", "tools"],
          "gemini.cachedContents": ["model", "contents", "ttl", "expireTime", "displayName", "systemInstruction"],
          "vllm.chat": ["model", "messages", "stream", "stream_options", "max_tokens", "stop", "tools", "tool_choice",
                        "cache_salt"],
          "vllm.completions": ["model", "prompt", "stream", "max_tokens", "stop", "cache_salt"]}


def assert_vendor_error(vendor: str, resp: httpx2.Response) -> None:
    """The error body the vendor's SDK parses (and, for OpenAI/vLLM, all four fields)."""
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    data = resp.json()
    assert isinstance(data, dict), data
    if vendor == "anthropic":
        assert data["type"] == "error" and set(data["error"]) == {"type", "message"}, data
        assert isinstance(data["error"]["type"], str) and isinstance(data["error"]["message"], str), data
    elif vendor == "gemini":
        err = data["error"]
        assert err["code"] == resp.status_code and isinstance(err["message"], str), data
        assert isinstance(err["status"], str) and err["status"].isupper(), data
    else:
        err = data["error"]
        assert set(err) == {"message", "type", "param", "code"}, data
        assert isinstance(err["message"], str) and isinstance(err["type"], str), data
        assert err["param"] is None or isinstance(err["param"], str), data
        if vendor == "vllm":
            assert err["code"] == resp.status_code, data
    assert "Traceback" not in resp.text


IN_STREAM_FAILURES = ('"server_error"', '"api_error"', '"INTERNAL"', '"InternalServerError"')


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_fuzzed_bodies_get_vendor_answers(emu: EmulatorSet, endpoint: str) -> None:
    where, path, vendor, valid = ENDPOINTS[endpoint]
    base = emu.vendor_url if where == "vendor" else emu.vllm_urls[0]
    statuses: dict[int, int] = {}
    with httpx2.Client(base_url=base, headers=H, timeout=30) as client:

        @given(body=bodies(valid, FIELDS[endpoint]))
        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=DERANDOMIZE,
                  suppress_health_check=list(HealthCheck))
        def check(body: dict[str, Any]) -> None:
            resp = client.post(path, content=json.dumps(body).encode(),  # json: integers past 64 bits too
                               headers={"content-type": "application/json"})
            statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
            assert resp.status_code < 500, (resp.status_code, resp.text[:300], body)
            if resp.status_code >= 400:
                assert_vendor_error(vendor, resp)
            elif resp.headers["content-type"].startswith("text/event-stream"):
                assert not any(f in resp.text for f in IN_STREAM_FAILURES), (resp.text[-300:], body)
            else:
                assert isinstance(resp.json(), dict | list)

        check()
        assert len(client._transport._pool.connections) == 1  # type: ignore[attr-defined]  # never dropped
    assert sum(statuses.values()) >= EXAMPLES and any(s < 300 for s in statuses), statuses
    assert any(s >= 400 for s in statuses), statuses  # the fuzz reached the error paths too
