"""Cross-protocol answers: an Anthropic or Gemini upstream answer, parsed by its adapter and rendered
by the OpenAI adapters, read by the official OpenAI SDK — text, tool calls, finish reasons and usage
in OpenAI's dialect (prompt_tokens includes cached and cache-written tokens)."""

from __future__ import annotations

import orjson

from gateway.protocols import get_adapter
from gateway.protocols.translate import translate_request

from ._sdk import Served, openai_client, sse
from ._support import TEXT, recorded

chat = get_adapter("openai_chat")
responses = get_adapter("openai_responses")
anthropic = get_adapter("anthropic_messages")
gemini = get_adapter("gemini")
REQ = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}], "stream": True,
       "stream_options": {"include_usage": True}}


def relay(upstream_name: str, data: bytes, client_name: str, include_usage: bool) -> bytes:
    """What the request path does for a translated stream: upstream parser → client renderer."""
    parser = get_adapter(upstream_name).stream_parser(upstream_name)
    renderer = get_adapter(client_name).stream_renderer(REQ, "req1", include_usage)
    out = b""
    for i in range(0, len(data), 13):  # odd piece sizes: events complete across chunk borders
        out += b"".join(renderer.render(e) for e in parser.feed(data[i:i + 13]))
    out += b"".join(renderer.render(e) for e in parser.end())
    assert parser.error is None and parser.answer() is not None
    return out + renderer.close()


def test_anthropic_stream_as_openai_chat_stream() -> None:
    body = relay("anthropic_messages", recorded("anthropic_text.sse"), "openai_chat", True)
    chunks = list(openai_client(sse(body)).chat.completions.create(**REQ))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    usage = chunks[-1].usage
    # Anthropic input 25 + cache write 248 + cache read 1800
    assert (usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens, usage.completion_tokens) == (2073, 1800, 15)
    assert usage.prompt_tokens_details.cache_write_tokens == 248 and usage.total_tokens == 2088
    assert chunks[0].model == "claude-sonnet-4-5-20250929"


def test_anthropic_tool_stream_as_openai_chat_stream_helper() -> None:
    body = relay("anthropic_messages", recorded("anthropic_tools.sse"), "openai_chat", True)
    with openai_client(sse(body)).chat.completions.stream(model="claude-sonnet-4-5", messages=REQ["messages"]) as s:
        for _ in s:
            pass
        final = s.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Let me check."
    call = choice.message.tool_calls[0]
    assert (call.id, call.function.name) == ("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")
    assert orjson.loads(call.function.arguments) == {"city": "Paris", "unit": "c"}
    assert final.usage.prompt_tokens == 472 and final.usage.completion_tokens == 89


def test_gemini_stream_as_openai_chat_stream_without_usage() -> None:
    body = relay("gemini", recorded("gemini_text.sse"), "openai_chat", False)
    chunks = list(openai_client(sse(body)).chat.completions.create(**REQ))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
    assert all(c.usage is None for c in chunks) and chunks[-1].choices[0].finish_reason == "stop"


def test_gemini_stream_usage_in_openai_dialect() -> None:
    body = relay("gemini", recorded("gemini_text.sse"), "openai_chat", True)
    usage = list(openai_client(sse(body)).chat.completions.create(**REQ))[-1].usage
    # promptTokenCount already includes the cached tokens; thoughts are output tokens
    assert (usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens) == (2100, 2048)
    assert (usage.completion_tokens, usage.completion_tokens_details.reasoning_tokens) == (30, 24)


def test_gemini_tool_calls_round_trip_their_signature_through_an_openai_client() -> None:
    body = relay("gemini", recorded("gemini_tools.sse"), "openai_chat", False)
    chunks = list(openai_client(sse(body)).chat.completions.create(**REQ))
    calls: dict[int, dict[str, str]] = {}
    for c in chunks:
        for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            entry = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] = tc.id or entry["id"]
            entry["name"] = (tc.function.name if tc.function else None) or entry["name"]
            entry["arguments"] += (tc.function.arguments if tc.function else None) or ""
    assert [c["name"] for c in calls.values()] == ["get_weather", "get_time"]
    # the client sends the calls back with their results: the signature goes back to Gemini
    history = {"model": "gemini-3-pro-preview", "messages": [
        {"role": "user", "content": "weather and time?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]},
        *[{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls.values()]]}
    _, native = translate_request("openai_chat", "gemini", history)
    parts = native["contents"][1]["parts"]
    assert parts[0]["thoughtSignature"] == "CiQBVKhc7sigAA==" and "thoughtSignature" not in parts[1]
    assert [p["functionResponse"]["name"] for p in native["contents"][2]["parts"]] == ["get_weather", "get_time"]


def test_anthropic_answer_as_openai_chat_completion() -> None:
    live = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": TEXT}], "stop_reason": "max_tokens", "stop_sequence": None,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000,
                      "output_tokens": 50}}
    answer = anthropic.parse_answer(live, "anthropic")
    rendered = chat.render_answer(answer, REQ, "req2")
    completion = openai_client(Served(orjson.dumps(rendered))).chat.completions.create(**{**REQ, "stream": False})
    assert completion.choices[0].message.content == TEXT and completion.choices[0].finish_reason == "length"
    u = completion.usage
    assert (u.prompt_tokens, u.prompt_tokens_details.cached_tokens, u.completion_tokens, u.total_tokens) == (
        1110, 1000, 50, 1160)


def test_gemini_answer_as_responses_api() -> None:
    live = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 500, "cachedContentTokenCount": 400, "candidatesTokenCount": 9,
                          "totalTokenCount": 509}, "modelVersion": "gemini-2.5-flash", "responseId": "x"}
    answer = gemini.parse_answer(live, "gemini")
    rendered = responses.render_answer(answer, {"model": "gemini-2.5-flash", "input": "hi"}, "req3")
    response = openai_client(Served(orjson.dumps(rendered))).responses.create(model="gemini-2.5-flash", input="hi")
    call = response.output[0]
    assert call.type == "function_call" and call.name == "get_weather" and orjson.loads(call.arguments) == {
        "city": "Paris"}
    assert response.usage.input_tokens == 500 and response.usage.input_tokens_details.cached_tokens == 400
    assert response.usage.output_tokens == 9


def test_anthropic_stream_as_responses_stream() -> None:
    body = relay("anthropic_messages", recorded("anthropic_text.sse"), "openai_responses", False)
    with openai_client(sse(body)).responses.stream(model="claude-sonnet-4-5", input="hi") as s:
        for _ in s:
            pass
        final = s.get_final_response()
    assert final.output_text == TEXT and final.status == "completed"
    assert final.usage.input_tokens == 2073 and final.usage.input_tokens_details.cached_tokens == 1800
    assert final.usage.input_tokens_details.cache_write_tokens == 248


def test_upstream_errors_in_the_clients_dialect() -> None:
    message, code = anthropic.parse_error(529, b'{"type":"error","error":{"type":"overloaded_error",'
                                               b'"message":"Overloaded"}}')
    body = chat.error_body(529, message, code)
    assert body == {"error": {"message": "Overloaded", "type": "server_error", "param": None,
                              "code": "overloaded_error"}}
