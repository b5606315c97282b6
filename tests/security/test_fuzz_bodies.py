"""Hypothesis fuzz of request bodies, per protocol (chat, responses, messages, gemini): bodies that
look like the protocol's, with any field swapped for arbitrary JSON. Every answer is < 500 (or an
upstream's own 5xx, checked against the emulator), and every error is in that vendor's shape."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import KEYS, Probe, assert_error_shape, vendor_of

# A fixed, repeatable set by default; `GATEWAY_FUZZ_EXAMPLES=2000` explores afresh (random seed).
EXAMPLES = int(os.environ.get("GATEWAY_FUZZ_EXAMPLES", "50"))
DERANDOMIZE = "GATEWAY_FUZZ_EXAMPLES" not in os.environ

scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=40)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=12), inner, max_size=4), max_leaves=12)
models = st.sampled_from(["gpt-4o-mini", "gpt-5", "o3-mini", "claude-sonnet-4-5", "gemini-2.5-flash",
                          "deepseek-chat", "no-such-model", ""]) | st.text(max_size=30) | json_values
roles = st.sampled_from(["user", "assistant", "system", "developer", "tool", "model"]) | st.text(max_size=10)
text = st.text(max_size=60)
parts = st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "input_text", "tool_result"]),
                                        "text": text}) | json_values, max_size=3)


VALID_MODELS = st.sampled_from(["gpt-4o-mini", "claude-sonnet-4-5", "gemini-2.5-flash", "deepseek-chat"])
words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60)


def _bodies(valid: dict[str, st.SearchStrategy[Any]], extras: dict[str, st.SearchStrategy[Any]],
            wild: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A third each: well-formed bodies (with well-typed extras); well-formed but one field set to
    anything (wild values of known fields included); arbitrary objects."""
    good = st.fixed_dictionaries(valid, optional=extras)
    fields = sorted({*valid, *extras, *wild})
    mutated = st.tuples(good, st.sampled_from(fields), json_values | st.one_of(*wild.values())).map(
        lambda t: {**t[0], t[1]: t[2]})
    return st.one_of(good, mutated, st.dictionaries(st.text(max_size=15), json_values, max_size=5))


chat_messages = st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": words}), min_size=1, max_size=3)
OPENAI_EXTRAS = {"stream": st.booleans(), "max_tokens": st.integers(1, 200), "temperature": st.floats(0, 1),
                 "user": words, "seed": st.integers(0, 2**31), "stream_options": st.just({"include_usage": True})}
WILD = {"model": models, "messages": st.lists(st.fixed_dictionaries({"role": roles, "content": text | parts})),
        "stream": json_values, "max_tokens": st.integers(-5, 10**9), "tools": st.lists(json_values, max_size=2),
        "tool_choice": json_values, "n": st.integers(-1, 3), "response_format": json_values,
        "prompt_cache_key": json_values}
PROTOCOLS = {
    "chat": ("/v1/chat/completions", _bodies({"model": VALID_MODELS, "messages": chat_messages}, OPENAI_EXTRAS, WILD)),
    "responses": ("/v1/responses", _bodies(
        {"model": st.sampled_from(["gpt-4o-mini", "gpt-5"]), "input": words | chat_messages},
        {"stream": st.booleans(), "instructions": words, "max_output_tokens": st.integers(16, 200)},
        {**WILD, "input": json_values, "previous_response_id": json_values, "instructions": json_values})),
    "messages": ("/v1/messages", _bodies(
        {"model": st.just("claude-sonnet-4-5"), "max_tokens": st.integers(1, 200), "messages": chat_messages},
        {"stream": st.booleans(), "system": words,
         "cache_control": st.just({"type": "ephemeral"})},
        {**WILD, "system": text | parts | json_values, "thinking": json_values, "metadata": json_values,
         "cache_control": json_values})),
    "gemini": ("/v1beta/models/gemini-2.5-flash:generateContent", _bodies(
        {"contents": st.lists(st.fixed_dictionaries({"role": st.just("user"), "parts": st.lists(
            st.fixed_dictionaries({"text": words}), min_size=1, max_size=2)}), min_size=1, max_size=2)},
        {"generationConfig": st.fixed_dictionaries({}, optional={"maxOutputTokens": st.integers(1, 200),
                                                                "temperature": st.floats(0, 1)}),
         "systemInstruction": st.fixed_dictionaries({"parts": st.just([{"text": "Be brief."}])})},
        {"contents": st.lists(st.fixed_dictionaries({"role": roles, "parts": st.lists(json_values, max_size=3)})),
         "systemInstruction": json_values, "generationConfig": json_values, "tools": json_values,
         "cachedContent": json_values, "safetySettings": json_values})),
}


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_fuzzed_bodies_get_no_gateway_5xx_and_vendor_shaped_errors(probe: Probe, protocol: str) -> None:
    path, bodies = PROTOCOLS[protocol]
    statuses: dict[int, int] = {}

    @given(body=bodies)
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=DERANDOMIZE,
              suppress_health_check=list(HealthCheck))
    def check(body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()  # json: integers past 64 bits too
        resp = probe.post(path, raw=raw, key=KEYS["beta"], headers={"anthropic-version": "2023-06-01"})
        statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
        assert resp.status_code < 500 or not probe.gateway_5xx(resp.status_code, path, raw), \
            (resp.status_code, resp.text[:300], body)
        if resp.status_code >= 400:
            assert_error_shape(vendor_of(path), resp)
        elif "text/event-stream" not in resp.headers.get("content-type", ""):
            assert isinstance(resp.json(), dict)

    check()
    assert sum(statuses.values()) >= EXAMPLES, statuses
