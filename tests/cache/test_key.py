"""The cache key: every parameter that can change the answer changes it; transport fields do not."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from gateway.cache.key import (
    cache_key,
    canonical_bytes,
    entry_key,
    lock_key,
    tenant_prefix,
)
from gateway.protocols import ADAPTERS, get_adapter

from ._helpers import make_ctx

Body = dict[str, Any]
Change = Callable[[Body], None]

TOOL = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object", "properties": {}}}}
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}

BASES: dict[str, Body] = {
    "openai_chat": {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}],
        "tools": [TOOL], "tool_choice": "auto", "temperature": 0.2, "top_p": 1, "seed": 7, "max_tokens": 100,
        "stop": ["\n\n"], "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}},
    },
    "openai_responses": {
        "model": "gpt-4o-mini", "instructions": "Be brief.", "input": "Weather in Paris?",
        "tools": [{"type": "function", "name": "weather", "parameters": {"type": "object", "properties": {}}}],
        "tool_choice": "auto", "temperature": 0.2, "top_p": 1, "max_output_tokens": 100,
        "text": {"format": {"type": "json_schema", "name": "a", "schema": SCHEMA}},
    },
    "anthropic_messages": {
        "model": "claude-haiku-4-5", "system": "Be brief.", "max_tokens": 100,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"name": "weather", "input_schema": {"type": "object", "properties": {}}}],
        "tool_choice": {"type": "auto"}, "temperature": 0.2, "top_p": 1, "stop_sequences": ["\n\n"],
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        "tools": [{"functionDeclarations": [{"name": "weather", "parameters": {"type": "object"}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"temperature": 0.2, "topP": 1, "seed": 7, "maxOutputTokens": 100,
                             "stopSequences": ["\n\n"], "responseMimeType": "application/json",
                             "responseSchema": SCHEMA},
    },
}


def _set(*path: str | int, value: Any) -> Change:
    def change(body: Body) -> None:
        target: Any = body
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
    return change


# Per protocol, the acceptance list: tools, tool_choice, response_format, temperature, top_p, seed,
# max_tokens, stop, system, and an unknown extra field (model is tested separately: it also moves
# the resolved model). Parameters a protocol does not have are left out of its row.
CHANGES: dict[str, dict[str, Change]] = {
    "openai_chat": {
        "tools": _set("tools", 0, "function", "name", value="forecast"),
        "tool_choice": _set("tool_choice", value="required"),
        "response_format": _set("response_format", value={"type": "json_object"}),
        "temperature": _set("temperature", value=0.3),
        "top_p": _set("top_p", value=0.9),
        "seed": _set("seed", value=8),
        "max_tokens": _set("max_tokens", value=101),
        "stop": _set("stop", value=["END"]),
        "system": _set("messages", 0, "content", value="Be verbose."),
        "unknown extra field": _set("reasoning_effort_v9", value="high"),
    },
    "openai_responses": {
        "tools": _set("tools", 0, "name", value="forecast"),
        "tool_choice": _set("tool_choice", value="required"),
        "response_format": _set("text", value={"format": {"type": "json_object"}}),
        "temperature": _set("temperature", value=0.3),
        "top_p": _set("top_p", value=0.9),
        "max_tokens": _set("max_output_tokens", value=101),
        "system": _set("instructions", value="Be verbose."),
        "unknown extra field": _set("brand_new_option", value=True),
    },
    "anthropic_messages": {
        "tools": _set("tools", 0, "name", value="forecast"),
        "tool_choice": _set("tool_choice", value={"type": "any"}),
        "response_format": _set("output_config", value={"format": {"type": "json_schema", "schema": {}}}),
        "temperature": _set("temperature", value=0.3),
        "top_p": _set("top_p", value=0.9),
        "max_tokens": _set("max_tokens", value=101),
        "stop": _set("stop_sequences", value=["END"]),
        "system": _set("system", value="Be verbose."),
        "unknown extra field": _set("thinking", value={"type": "enabled", "budget_tokens": 1024}),
    },
    "gemini": {
        "tools": _set("tools", 0, "functionDeclarations", 0, "name", value="forecast"),
        "tool_choice": _set("toolConfig", "functionCallingConfig", "mode", value="ANY"),
        "response_format": _set("generationConfig", "responseMimeType", value="text/plain"),
        "temperature": _set("generationConfig", "temperature", value=0.3),
        "top_p": _set("generationConfig", "topP", value=0.9),
        "seed": _set("generationConfig", "seed", value=8),
        "max_tokens": _set("generationConfig", "maxOutputTokens", value=101),
        "stop": _set("generationConfig", "stopSequences", value=["END"]),
        "system": _set("systemInstruction", "parts", 0, "text", value="Be verbose."),
        "unknown extra field": _set("safetySettings", value=[{"category": "X", "threshold": "BLOCK_NONE"}]),
    },
}
CASES = [(protocol, name) for protocol, changes in CHANGES.items() for name in changes]


def _key(protocol: str, body: Body, **kw: Any) -> str:
    user_scope = kw.pop("user_scope", False)
    return cache_key(make_ctx(body, protocol=protocol, **kw), user_scope=user_scope)


@pytest.mark.parametrize(("protocol", "change"), CASES)
def test_every_parameter_that_can_change_the_answer_changes_the_key(protocol: str, change: str) -> None:
    base = BASES[protocol]
    changed = copy.deepcopy(base)
    CHANGES[protocol][change](changed)
    assert changed != base
    assert _key(protocol, changed) != _key(protocol, base)


@pytest.mark.parametrize("protocol", list(BASES))
def test_model_changes_the_key(protocol: str) -> None:
    base = BASES[protocol]
    other = copy.deepcopy(base)
    if "model" in other:
        other["model"] += "-2"
    model = str(base.get("model", "gemini-2.5-flash"))
    assert _key(protocol, other, model=model + "-2") != _key(protocol, base, model=model)


def test_every_listed_parameter_is_covered() -> None:
    listed = {"tools", "tool_choice", "response_format", "temperature", "top_p", "seed", "max_tokens", "stop",
              "system", "unknown extra field"}
    assert set(CHANGES["openai_chat"]) == listed
    assert set(CHANGES["gemini"]) == listed


@pytest.mark.parametrize("protocol", list(BASES))
def test_stream_and_request_ids_do_not_change_the_key(protocol: str) -> None:
    base = BASES[protocol]
    ref = _key(protocol, base, request_id="gw-1", headers={"x-request-id": "a", "idempotency-key": "k1"})
    streamed = copy.deepcopy(base)
    if protocol != "gemini":  # Gemini streams by path: its body has no stream flag
        streamed["stream"] = True
    if protocol in ("openai_chat", "openai_responses"):
        streamed["stream_options"] = {"include_usage": True}
    if protocol == "openai_chat":
        streamed["request_id"] = "req-123"  # vLLM's per-request id
    other = _key(protocol, streamed, stream=True, request_id="gw-2",
                 headers={"x-request-id": "b", "idempotency-key": "k2", "x-stainless-retry-count": "1",
                          "traceparent": "00-abc-def-01", "authorization": "Bearer other-key"})
    assert other == ref


def test_openai_prompt_cache_routing_fields_do_not_change_the_key_but_options_do() -> None:
    base = BASES["openai_chat"]
    hinted = {**base, "prompt_cache_key": "tenant-prefix-1", "prompt_cache_retention": "24h"}
    assert _key("openai_chat", hinted) == _key("openai_chat", base)
    prewarm = {**base, "prompt_cache_options": {"prewarm": True}}
    assert _key("openai_responses", {**BASES["openai_responses"], "prompt_cache_options": {"prewarm": True}}) != \
        _key("openai_responses", BASES["openai_responses"])
    assert _key("openai_chat", prewarm) != _key("openai_chat", base)


def test_numbers_and_key_order_are_normalised() -> None:
    base = BASES["openai_chat"]
    same = {**base, "temperature": 0.20, "top_p": 1.0, "max_tokens": 100.0}
    reordered = dict(reversed(list(base.items())))
    assert _key("openai_chat", same) == _key("openai_chat", base)
    assert _key("openai_chat", reordered) == _key("openai_chat", base)
    assert canonical_bytes({"b": 1.0, "a": [-0.0, 2.5, True, 1]}) == b'{"a":[0,2.5,true,1],"b":1}'


def test_identity_comes_from_the_server_side() -> None:
    base = BASES["openai_chat"]
    acme = _key("openai_chat", base, tenant="acme")
    assert _key("openai_chat", base, tenant="globex") != acme
    # A tenant named in the body changes nothing about whose entry it is.
    assert _key("openai_chat", {**base, "tenant": "globex"}, tenant="acme") != _key("openai_chat", base,
                                                                                      tenant="globex")
    # User scope: the user is part of the key only when the policy's scope is `user`.
    assert _key("openai_chat", base, user="u1") == acme
    assert _key("openai_chat", base, user="u1", user_scope=True) != _key("openai_chat", base, user="u2",
                                                                          user_scope=True)


def test_protocol_provider_and_answer_changing_headers_are_part_of_the_key() -> None:
    body = BASES["anthropic_messages"]
    plain = _key("anthropic_messages", body)
    assert _key("anthropic_messages", body, headers={"anthropic-beta": "output-128k-2025-02-19"}) != plain
    assert _key("anthropic_messages", body, headers={"user-agent": "Anthropic/Python 2.14.0"}) == plain
    chat = make_ctx(BASES["openai_chat"])
    routed = make_ctx(BASES["openai_chat"])
    routed.provider = "deepseek"
    assert cache_key(chat, False) != cache_key(routed, False)
    gemini_v1 = make_ctx(BASES["gemini"], protocol="gemini")
    gemini_v1.api_version = "v1"
    gemini_beta = make_ctx(BASES["gemini"], protocol="gemini")
    gemini_beta.api_version = "v1beta"
    assert cache_key(gemini_v1, False) != cache_key(gemini_beta, False)


def test_store_keys_carry_the_tenant_hash_tag() -> None:
    digest = "ab" * 32
    assert entry_key("acme", digest) == f"gw:rc:{{acme}}:{digest}"
    assert entry_key("acme", digest).startswith(tenant_prefix("acme"))
    assert not lock_key("acme", digest).startswith(tenant_prefix("acme"))  # purges never touch locks
    assert re.fullmatch(r"[0-9a-f]{64}", _key("openai_chat", BASES["openai_chat"]))


def test_transport_fields_are_documented() -> None:
    import gateway.cache.key as module

    for field in set().union(*(a.transport_fields for a in ADAPTERS.values())):
        assert f"`{field}`" in (module.__doc__ or "")


@pytest.mark.parametrize(("protocol", "body", "reason"), [
    ("openai_chat", {"n": 2}, "n > 1"),
    ("openai_chat", {"logprobs": True}, "logprobs"),
    ("openai_responses", {"background": True}, "background"),
    ("openai_responses", {"include": ["message.output_text.logprobs"]}, "logprobs"),
    ("gemini", {"generationConfig": {"candidateCount": 3}}, "candidateCount > 1"),
    ("openai_chat", {"n": 1, "logprobs": False}, None),
    ("anthropic_messages", {"max_tokens": 5}, None),
])
def test_unreplayable_requests(protocol: str, body: Body, reason: str | None) -> None:
    assert get_adapter(protocol).unreplayable(body) == reason
