"""Malformed requests against the running emulators, one test per class of bug the security suite found:
each is answered like the vendor answers it (a 4xx in its own error shape), never a 500 or a reset
connection, and the next request on the same connection is served."""

from __future__ import annotations

from typing import Any

import httpx2
import orjson
import pytest

from gateway_dev.emulators import EmulatorSet

H = {"authorization": "Bearer sk-1", "x-api-key": "k", "x-goog-api-key": "g", "anthropic-version": "2023-06-01"}
MSGS = [{"role": "user", "content": "What is a prompt cache?"}]
CHAT = {"model": "gpt-4o-mini", "messages": MSGS}
CLAUDE = {"model": "claude-sonnet-4-5", "max_tokens": 50, "messages": MSGS}
GEMINI = "/v1beta/models/gemini-2.5-flash:generateContent"
CONTENTS = [{"role": "user", "parts": [{"text": "What is a prompt cache?"}]}]


@pytest.fixture
def vendor(emu: EmulatorSet) -> Any:
    with httpx2.Client(base_url=emu.vendor_url, headers=H, timeout=10) as client:
        yield client
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200  # the connection still serves


def nested(levels: int) -> bytes:
    """JSON text of `levels` objects inside each other (Python's json cannot write ~1000 levels)."""
    return b'{"a":' * levels + b'"x"' + b"}" * levels


def with_field(body: dict[str, Any], field: str, raw: bytes) -> bytes:
    return orjson.dumps(body)[:-1] + b',"' + field.encode() + b'":' + raw + b"}"


def test_deep_nesting_is_a_400_not_a_recursion_error(vendor: httpx2.Client) -> None:
    # gemini_wire.camel_keys recursed once per level: ~900 levels was a RecursionError (500).
    for levels in (150, 900, 1000):
        r = vendor.post(GEMINI, content=with_field({"contents": CONTENTS}, "generationConfig", nested(levels)))
        assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT", r.text[:200]
    tool = b'[{"type":"function","function":{"name":"f","parameters":' + nested(300) + b"}}]"
    r = vendor.post("/v1/chat/completions", content=with_field(CHAT, "tools", tool))
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = vendor.post("/v1/messages", content=with_field(CLAUDE, "metadata", nested(500)))
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    # A tool schema nested within the limit still answers (argument generation stops at 16 levels).
    schema: Any = {"type": "string"}
    for _ in range(40):
        schema = {"type": "object", "properties": {"x": schema}}
    r = vendor.post("/v1/chat/completions", json={**CHAT, "tool_choice": "required",
                                                  "tools": [{"type": "function", "function": {"name": "f",
                                                                                              "parameters": schema}}]})
    assert r.status_code == 200, r.text[:300]


@pytest.mark.parametrize(("patch", "message"), [
    ({"messages": [1]}, "messages.0: Input should be a valid dictionary or object to extract fields from"),
    ({"messages": [{"role": "user", "content": [1]}]},
     "messages.0.content.0: Input should be a valid dictionary or object to extract fields from"),
    ({"messages": {}}, "messages: Input should be a valid list"),
    ({"thinking": "enabled"}, "thinking: Input should be a valid dictionary or object to extract fields from"),
    ({"tool_choice": "auto"}, "tool_choice: Input should be a valid dictionary or object to extract fields from"),
    ({"system": [{"type": "text", "text": 5}]}, "system.0.text: Input should be a valid string"),
])
def test_anthropic_non_objects_are_invalid_request_errors(vendor: httpx2.Client, patch, message) -> None:
    r = vendor.post("/v1/messages", json={**CLAUDE, **patch})
    assert r.status_code == 400, r.text[:300]
    assert r.json()["type"] == "error" and r.json()["error"] == {"type": "invalid_request_error", "message": message}
    assert r.headers["request-id"]
    counted = {k: v for k, v in {**CLAUDE, **patch}.items() if k != "max_tokens"}
    r = vendor.post("/v1/messages/count_tokens", json=counted)
    assert r.status_code == 400 and r.json()["error"]["message"] == message


def test_the_bodies_that_reset_the_connection(vendor: httpx2.Client) -> None:
    # They never crashed themselves: each came right after a body that did, on the same keep-alive connection,
    # which uvicorn had closed after that 500. Now every one is answered, and so is the request after it.
    r = vendor.post("/v1/responses", json={"model": "gpt-5", "input": None})
    assert r.status_code == 400 and r.json()["error"]["param"] == "input"
    r = vendor.post("/v1/messages", json={**CLAUDE, "messages": {}})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = vendor.post(GEMINI, json={"contents": CONTENTS, "cachedContent": ""})  # proto3: "" is unset
    assert r.status_code == 200 and r.json()["candidates"][0]["content"]["parts"][0]["text"]
    r = vendor.post(GEMINI, json={"contents": CONTENTS, "cachedContent": {"name": "x"}})
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_non_boolean_stream_is_refused(emu: EmulatorSet, vendor: httpx2.Client) -> None:
    r = vendor.post("/v1/chat/completions", json={**CHAT, "stream": "yes"})
    assert r.status_code == 400 and r.headers["content-type"] == "application/json"
    assert r.json()["error"] == {"message": "Invalid type for 'stream': expected a boolean, but got a string "
                                 "instead.", "type": "invalid_request_error", "param": "stream", "code": "invalid_type"}
    r = vendor.post("/v1/responses", json={"model": "gpt-5", "input": "hi", "stream": 1})
    assert r.status_code == 400 and r.json()["error"]["param"] == "stream"
    r = vendor.post("/v1/messages", json={**CLAUDE, "stream": "yes"})
    assert r.status_code == 400 and r.json()["error"]["message"] == "stream: Input should be a valid boolean"
    r = vendor.post("/v1/chat/completions", json={**CHAT, "model": "deepseek-chat", "stream": "yes"})
    assert r.status_code == 422 and "expected a boolean" in r.json()["error"]["message"]  # DeepSeek's documented 422
    with httpx2.Client(base_url=emu.vllm_urls[0], timeout=10) as vllm:
        r = vllm.post("/v1/chat/completions", json={"messages": MSGS, "stream": "maybe"})
        assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestError"
        # vLLM's pydantic models are lax: "true" is True there, so it streams, as vLLM does.
        r = vllm.post("/v1/chat/completions", json={"messages": MSGS, "stream": "true", "max_tokens": "5"})
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        assert r.text.rstrip().endswith("data: [DONE]")
        r = vllm.post("/v1/completions", json={"prompt": {"a": 1}})
        assert r.status_code == 400 and r.json()["error"]["param"] == "prompt"
        r = vllm.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": [{"type": "image_url",
                                                                                               "image_url": "x"}]}]})
        assert r.status_code == 400 and "image_url" in r.json()["error"]["message"]


# Every kind of text the fuzzers produce: CJK, RTL, emoji (astral), combining marks, NUL and other controls,
# line/paragraph separators, a BOM, a lone "{" (str.format), and a near-empty string.
TEXTS = ["请解释一下缓存", "مرحبا بالعالم", "🚀🔥 über café", "e\u0301\u0308 Zalgo", "nul\u0000ctl\u001b[0m",
         "line\u2028para\u2029", "\ufeffbom", "{topic} {0} %s", "ß"]


@pytest.mark.parametrize("text", TEXTS)
def test_non_ascii_text_is_served(emu: EmulatorSet, vendor: httpx2.Client, text: str) -> None:
    # The fuzzed 500s "with non-ASCII characters" were type errors in bodies that happened to hold non-ASCII
    # text (the fuzz strategies put it in nearly every string; turning it into ASCII kept every one a 500).
    # Non-ASCII text itself, in every field that reaches the tokenizer, the answer and the echo, is fine.
    msgs = [{"role": "system", "content": text}, {"role": "user", "content": text}]
    for body in ({**CHAT, "messages": msgs, "max_completion_tokens": 3, "stop": [text[:2]], "user": text},
                 {**CHAT, "messages": msgs, "stream": True, "prompt_cache_key": text},
                 {**CHAT, "model": "deepseek-reasoner", "messages": msgs, "max_tokens": 2}):
        r = vendor.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text[:300]
    r = vendor.post("/v1/responses", json={"model": "gpt-5", "input": text, "instructions": text,
                                           "metadata": {text: text}, "max_output_tokens": 16})
    assert r.status_code == 200 and r.json()["metadata"] == {text: text}
    r = vendor.post("/v1/messages", json={**CLAUDE, "system": text, "max_tokens": 2, "stop_sequences": [text],
                                          "messages": [{"role": "user", "content": text}]})
    assert r.status_code == 200, r.text[:300]
    r = vendor.post(GEMINI, json={"contents": [{"parts": [{"text": text}]}], "systemInstruction": {"parts": [
        {"text": text}]}, "generationConfig": {"maxOutputTokens": 2, "stopSequences": [text]}})
    assert r.status_code == 200, r.text[:300]
    r = vendor.post("/v1/embeddings", json={"model": "text-embedding-3-small", "input": [text, text[::-1]]})
    assert r.status_code == 200
    with httpx2.Client(base_url=emu.vllm_urls[0], timeout=10) as vllm:
        assert vllm.post("/v1/chat/completions", json={"messages": msgs, "max_tokens": 3}).status_code == 200
        assert vllm.post("/v1/completions", json={"prompt": text, "max_tokens": 3}).status_code == 200


def test_other_values_that_crashed(emu: EmulatorSet, vendor: httpx2.Client) -> None:
    cases: list[tuple[str, dict[str, Any], int, str]] = [
        ("/v1/chat/completions", {**CHAT, "max_tokens": "10"}, 400, "max_tokens"),
        ("/v1/chat/completions", {**CHAT, "n": 10**9}, 400, "n"),  # was 10**9 answers
        ("/v1/chat/completions", {**CHAT, "n": 0}, 400, "n"),  # was max() of an empty list
        ("/v1/chat/completions", {**CHAT, "tools": [{}, True]}, 400, "tools[1]"),
        ("/v1/chat/completions", {**CHAT, "model": "deepseek-chat", "tools": [True]}, 422, ""),
        ("/v1/responses", {"model": "gpt-5", "input": "x", "max_output_tokens": []}, 400, "max_output_tokens"),
        ("/v1/responses", {"model": "gpt-5", "input": "x", "previous_response_id": [1]}, 400, "previous_response_id"),
        ("/v1/responses", {"model": "gpt-5", "input": "x", "tools": [5]}, 400, "tools[0]"),
        ("/v1/embeddings", {"model": "text-embedding-3-small", "input": "x", "dimensions": 10**12}, 400,
         "dimensions"),  # was a 4 TB numpy array
        ("/v1/embeddings", {"model": "text-embedding-3-small", "input": [5, "x"]}, 400, "input"),
    ]
    for path, body, status, param in cases:
        r = vendor.post(path, json=body)
        assert r.status_code == status, (body, r.text[:300])
        if param:
            assert r.json()["error"]["param"] == param, r.text
    gemini_cases: list[tuple[str, dict[str, Any]]] = [
        (GEMINI, {"contents": CONTENTS, "tools": [-5e-30, [True, None]]}),
        (GEMINI, {"contents": [[{"a": 1}]]}),
        (GEMINI, {"contents": [{"role": "user", "parts": [None]}]}),
        (GEMINI, {"contents": CONTENTS, "systemInstruction": [{"parts": []}]}),
        (GEMINI, {"contents": CONTENTS, "generationConfig": [{}]}),
        ("/v1beta/cachedContents", {"model": ["gemini-2.5-flash"], "contents": CONTENTS}),
        ("/v1beta/cachedContents", {"model": "gemini-2.5-flash", "contents": CONTENTS, "ttl": "nans"}),
        ("/v1beta/cachedContents", {"model": "gemini-2.5-flash", "contents": CONTENTS, "ttl": "1e999s"}),
        ("/v1beta/models/gemini-2.5-flash:countTokens", {"generateContentRequest": {"contents": "x"}}),
    ]
    for path, body in gemini_cases:
        r = vendor.post(path, json=body)
        assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT", (body, r.text[:300])
    r = vendor.post(GEMINI, json={"contents": [{"role": "user", "parts": [{"text": None}, {"text": "hi"}]}]})
    assert r.status_code == 200  # proto3: a null field is unset
    r = vendor.get("/v1beta/cachedContents", params={"pageSize": "lots"})
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"
