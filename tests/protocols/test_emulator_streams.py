"""The adapters against the project's vendor emulators (gateway_dev/emulators): real streams over HTTP,
parsed under byte splits; stream and non-stream answers agree; faults mid-stream are never complete;
translated requests are accepted by the emulated vendors and come back as OpenAI answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import orjson
import pytest

from gateway.protocols import get_adapter
from gateway.protocols.openai_chat_stream import UsageChunkFilter
from gateway.protocols.sse import split_events
from gateway.protocols.translate import translate_request
from gateway.protocols.usage import normalize_usage
from gateway_dev.emulators import EmulatorSet

from ._sdk import openai_client, sse
from ._support import answer_fields, assert_split_invariant, run_parser

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
QUESTION = "What is the get weather in Paris today?"
HEADERS = {"authorization": "Bearer sk-test", "x-api-key": "sk-test", "anthropic-version": "2023-06-01",
           "x-goog-api-key": "AIza-test"}


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero", output_tokens=16) as e:
        yield e


@pytest.fixture(scope="module")
def http() -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=20) as c:
        yield c


def call(http: httpx2.Client, emu: EmulatorSet, protocol: str, path: str, body: dict[str, Any],
         fault: str | None = None) -> httpx2.Response:
    base = {"openai_chat": emu.openai_base_url, "openai_responses": emu.openai_base_url,
            "anthropic_messages": emu.anthropic_base_url, "gemini": emu.gemini_base_url}[protocol]
    headers = dict(HEADERS)
    if fault:
        headers["x-emulator-fault"] = fault
    response = http.post(base + path, content=orjson.dumps(body), headers=headers)
    assert response.status_code == 200, response.text
    return response


def read_partial(http: httpx2.Client, emu: EmulatorSet, protocol: str, path: str, body: dict[str, Any],
                 fault: str) -> bytes:
    """The bytes of a stream up to where the emulator broke it off (a cut surfaces as a transport error)."""
    base = emu.openai_base_url if protocol.startswith("openai") else emu.vendor_url
    data = b""
    headers = {**HEADERS, "x-emulator-fault": fault}
    try:
        with http.stream("POST", base + path, content=orjson.dumps(body), headers=headers) as response:
            assert response.status_code == 200
            for chunk in response.iter_raw():
                data += chunk
    except httpx2.RemoteProtocolError:
        pass
    assert data
    return data


# protocol, stream path, non-stream path, body (stream flag added per call)
CASES = {
    "openai_chat": ("/chat/completions", "/chat/completions",
                    {"model": "gpt-4o", "messages": [{"role": "user", "content": QUESTION}], "tools": TOOLS,
                     "stream_options": {"include_usage": True}}),
    "openai_responses": ("/responses", "/responses",
                         {"model": "gpt-4o", "input": QUESTION, "tools": [
                             {"type": "function", "name": "get_weather", "parameters": TOOLS[0]["function"][
                                 "parameters"]}]}),
    "anthropic_messages": ("/v1/messages", "/v1/messages",
                           {"model": "claude-sonnet-4-5", "max_tokens": 200, "messages": [
                               {"role": "user", "content": QUESTION}], "tools": [
                               {"name": "get_weather", "input_schema": TOOLS[0]["function"]["parameters"]}]}),
    "gemini": ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
               "/v1beta/models/gemini-2.5-flash:generateContent",
               {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}], "tools": [
                   {"functionDeclarations": [{"name": "get_weather",
                                              "parametersJsonSchema": TOOLS[0]["function"]["parameters"]}]}]}),
}


def stream_body(protocol: str, body: dict[str, Any]) -> dict[str, Any]:
    return body if protocol == "gemini" else {**body, "stream": True}


@pytest.mark.parametrize("protocol", list(CASES))
@pytest.mark.parametrize("with_tools", [True, False])
def test_emulator_stream_parses_like_the_whole_answer(emu: EmulatorSet, http: httpx2.Client, protocol: str,
                                                      with_tools: bool) -> None:
    adapter = get_adapter(protocol)
    stream_path, whole_path, body = CASES[protocol]
    if not with_tools:
        body = {k: v for k, v in body.items() if k != "tools"}
    data = call(http, emu, protocol, stream_path, stream_body(protocol, body)).content
    assert_split_invariant(lambda: adapter.stream_parser(protocol), data, stride=7)
    _, parser = run_parser(lambda: adapter.stream_parser(protocol), [data])
    streamed = parser.answer()
    assert streamed is not None and parser.error is None
    assert bool(streamed.tool_calls) == with_tools
    counts = normalize_usage(streamed.usage_raw)
    assert counts.input_tokens > 0 and counts.output_tokens > 0
    whole_body = {k: v for k, v in body.items() if k != "stream_options"}
    whole = adapter.parse_answer(orjson.loads(call(http, emu, protocol, whole_path, whole_body).content), protocol)
    assert answer_fields(streamed) == answer_fields(whole)


@pytest.mark.parametrize("protocol", list(CASES))
@pytest.mark.parametrize("fault", ["stream_error_after=2", "cut_stream_after=3"])
def test_faulty_streams_are_never_complete(emu: EmulatorSet, http: httpx2.Client, protocol: str, fault: str) -> None:
    adapter = get_adapter(protocol)
    stream_path, _, body = CASES[protocol]
    body = {k: v for k, v in body.items() if k != "tools"}  # a long text answer: many events to break into
    emu.state.output_tokens = 120
    try:
        data = read_partial(http, emu, protocol, stream_path, stream_body(protocol, body), fault)
    finally:
        emu.state.output_tokens = 16
    _, parser = run_parser(lambda: adapter.stream_parser(protocol), [data])
    assert parser.answer() is None
    if fault.startswith("stream_error"):
        assert parser.error is not None


def test_usage_filter_restores_the_stream_the_client_asked_for(emu: EmulatorSet, http: httpx2.Client) -> None:
    adapter = get_adapter("openai_chat")
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Tell me about tea."}], "stream": True}
    upstream_body, sse_filter = adapter.upstream_stream_body(body)
    assert sse_filter is not None
    metered = call(http, emu, "openai_chat", "/chat/completions", upstream_body).content
    plain = call(http, emu, "openai_chat", "/chat/completions", body).content
    restored = [out for ev in split_events(metered) if (out := sse_filter(ev)) is not None]

    def shape(events: list[bytes]) -> list[Any]:
        out = []
        for ev in events:
            payload = ev[len(b"data: "):]
            if payload == b"[DONE]":
                out.append("[DONE]")
                continue
            obj = orjson.loads(payload)
            for volatile in ("id", "created", "obfuscation", "system_fingerprint"):
                obj.pop(volatile, None)
            out.append(obj)
        return out

    assert shape(restored) == shape(split_events(plain))
    _, parser = run_parser(lambda: adapter.stream_parser("openai"), [metered])
    assert parser.answer() is not None and parser.answer().usage_raw["prompt_tokens"] > 0  # type: ignore[union-attr]
    assert isinstance(UsageChunkFilter(), type(sse_filter))


@pytest.mark.parametrize(("upstream", "model"), [("anthropic_messages", "claude-sonnet-4-5"),
                                                 ("gemini", "gemini-2.5-flash")])
def test_openai_client_through_translation(emu: EmulatorSet, http: httpx2.Client, upstream: str, model: str) -> None:
    """Turn 1 (tool call) and turn 2 (tool result → text) of an OpenAI conversation, translated,
    served by the emulated vendor, rendered back as an OpenAI stream and read by the OpenAI SDK."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    chat = get_adapter("openai_chat")
    for turn in (1, 2):
        client_body = {"model": model, "messages": messages, "tools": TOOLS, "stream": True,
                       "stream_options": {"include_usage": True}}
        path, native = translate_request("openai_chat", upstream, client_body)
        data = call(http, emu, upstream, path, native).content
        parser = get_adapter(upstream).stream_parser(upstream)
        renderer = chat.stream_renderer(client_body, f"req{turn}", True)
        out = b"".join(renderer.render(e) for e in parser.feed(data))
        out += b"".join(renderer.render(e) for e in parser.end()) + renderer.close()
        assert parser.answer() is not None
        with openai_client(sse(out)).chat.completions.stream(model=model, messages=messages) as stream:
            for _ in stream:
                pass
            final = stream.get_final_completion()
        usage = normalize_usage(parser.answer().usage_raw)  # type: ignore[union-attr]
        assert final.usage.prompt_tokens == usage.input_tokens
        message = final.choices[0].message
        if turn == 1:
            assert final.choices[0].finish_reason == "tool_calls"
            call_ = message.tool_calls[0]
            assert call_.function.name == "get_weather" and "city" in orjson.loads(call_.function.arguments)
            messages.append({"role": "assistant", "content": message.content, "tool_calls": [
                {"id": call_.id, "type": "function",
                 "function": {"name": call_.function.name, "arguments": call_.function.arguments}}]})
            messages.append({"role": "tool", "tool_call_id": call_.id, "content": "18 degrees, sunny"})
        else:
            assert final.choices[0].finish_reason == "stop" and message.content


def test_responses_client_through_translation(emu: EmulatorSet, http: httpx2.Client) -> None:
    body = {"model": "claude-sonnet-4-5", "instructions": "Be brief.", "input": "Tell me about tea.",
            "max_output_tokens": 100, "stream": True}
    path, native = translate_request("openai_responses", "anthropic_messages", body)
    data = call(http, emu, "anthropic_messages", path, native).content
    parser = get_adapter("anthropic_messages").stream_parser("anthropic")
    renderer = get_adapter("openai_responses").stream_renderer(body, "req", False)
    out = b"".join(renderer.render(e) for e in [*parser.feed(data), *parser.end()]) + renderer.close()
    with openai_client(sse(out)).responses.stream(model="claude-sonnet-4-5", input="Tell me about tea.") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text == parser.answer().text  # type: ignore[union-attr]
    assert final.usage.input_tokens == normalize_usage(parser.answer().usage_raw).input_tokens  # type: ignore[union-attr]
