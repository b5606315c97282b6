"""The OpenAI emulator driven by the official `openai` SDK (3.57.0) over loopback HTTP: Chat Completions,
Responses, embeddings, models; the prompt-caching rules of OpenAI's guide."""

from __future__ import annotations

import base64
import json

import httpx2
import numpy as np
import openai
import pytest

from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)

LONG_SYSTEM = (
    "You are the support assistant of Acme Corp. Follow the handbook below exactly and cite the section. "
    + " ".join(f"Section {i}: customers may return items within {i + 10} days if the receipt is kept."
               for i in range(80))
)


@pytest.fixture(scope="module")
def client(emu: EmulatorSet) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-test-1", max_retries=0)


def _msgs(question: str, system: str = LONG_SYSTEM) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def test_chat_non_stream_parses_with_the_sdk_types(client: openai.OpenAI, sdk_check) -> None:
    r = client.chat.completions.create(model="gpt-4o", messages=_msgs("How long is the return window?"))
    sdk_check(r)
    assert r.object == "chat.completion" and r.choices[0].finish_reason == "stop"
    assert r.choices[0].message.role == "assistant" and "return window" in r.choices[0].message.content
    u = r.usage
    assert u.prompt_tokens > 1024 and u.completion_tokens > 10
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    assert u.prompt_tokens_details.cached_tokens == 0 and u.prompt_tokens_details.audio_tokens == 0
    assert u.completion_tokens_details.reasoning_tokens == 0


def test_chat_stream_with_include_usage(client: openai.OpenAI, sdk_check) -> None:
    kwargs = {"model": "gpt-4o", "messages": _msgs("What about refunds?")}
    whole = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True}))
    for c in chunks:
        sdk_check(c)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.usage is None for c in chunks[:-1])
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.model_dump() == whole.usage.model_dump() | {
        "prompt_tokens_details": last.usage.prompt_tokens_details.model_dump()}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content  # the answer is a function of the request
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_chat_stream_without_include_usage_sends_no_usage(emu: EmulatorSet) -> None:
    body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "hello"}]}
    with httpx2.stream("POST", f"{emu.openai_base_url}/chat/completions", json=body,
                       headers={"authorization": "Bearer sk-x"}) as resp:
        raw = resp.read().decode()
    frames = [f for f in raw.split("\n\n") if f]
    assert all(f.startswith("data: ") for f in frames)
    assert frames[-1] == "data: [DONE]"
    assert all("usage" not in json.loads(f[6:]) for f in frames[:-1])


def test_repeated_long_prefix_reports_cached_tokens_in_128_token_steps(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(model="gpt-4o", messages=_msgs("Can I return shoes?"))
    n = first.usage.prompt_tokens
    assert n > 1024 and first.usage.prompt_tokens_details.cached_tokens == 0
    again = client.chat.completions.create(model="gpt-4o", messages=_msgs("Can I return shoes?"))
    assert again.usage.prompt_tokens_details.cached_tokens == n // 128 * 128
    # The next turn extends the first prompt: the whole earlier prompt is a cached prefix.
    follow = client.chat.completions.create(model="gpt-4o", messages=[
        *_msgs("Can I return shoes?"), {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "And socks?"}])
    cached = follow.usage.prompt_tokens_details.cached_tokens
    assert cached == n // 128 * 128 and cached % 128 == 0 and cached < follow.usage.prompt_tokens


def test_prefix_under_1024_tokens_is_never_cached(client: openai.OpenAI) -> None:
    msgs = _msgs("Short question?", system="You are terse. " * 150)
    first = client.chat.completions.create(model="gpt-4o", messages=msgs)
    assert 600 < first.usage.prompt_tokens < 1024
    second = client.chat.completions.create(model="gpt-4o", messages=msgs)
    assert second.usage.prompt_tokens_details.cached_tokens == 0


def test_cache_is_scoped_by_api_key_and_prompt_cache_key(emu: EmulatorSet, client: openai.OpenAI) -> None:
    msgs = _msgs("Scoping?")
    client.chat.completions.create(model="gpt-4o", messages=msgs, prompt_cache_key="tenant-a")
    other_key = openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-test-2", max_retries=0)
    assert other_key.chat.completions.create(model="gpt-4o", messages=msgs, prompt_cache_key="tenant-a") \
        .usage.prompt_tokens_details.cached_tokens == 0
    assert client.chat.completions.create(model="gpt-4o", messages=msgs, prompt_cache_key="tenant-b") \
        .usage.prompt_tokens_details.cached_tokens == 0
    assert client.chat.completions.create(model="gpt-4o", messages=msgs, prompt_cache_key="tenant-a") \
        .usage.prompt_tokens_details.cached_tokens >= 1024


def test_in_memory_retention_idle_timeout_and_one_hour_cap(emu: EmulatorSet, client: openai.OpenAI) -> None:
    msgs = _msgs("Retention?")

    def cached() -> int:
        return client.chat.completions.create(model="gpt-4o", messages=msgs).usage.prompt_tokens_details.cached_tokens

    assert cached() == 0  # written at t0 (gpt-4o only offers in_memory)
    emu.clock.advance(299)
    assert cached() > 0  # within 5 min of inactivity; the hit touches it
    emu.clock.advance(301)
    assert cached() == 0  # idle > 5 min: gone, rewritten now (t1)
    for _ in range(14):  # used every 4 min: never idle long, but...
        emu.clock.advance(240)
        assert cached() > 0
    emu.clock.advance(241)  # ... t1 + 3601 s: past the 1 h maximum
    assert cached() == 0


def test_24h_retention_and_the_old_in_memory_spelling(emu: EmulatorSet, client: openai.OpenAI) -> None:
    msgs = _msgs("Extended?")

    def cached(retention: str) -> int:
        return client.chat.completions.create(model="gpt-4.1", messages=msgs, prompt_cache_retention=retention) \
            .usage.prompt_tokens_details.cached_tokens

    assert cached("24h") == 0
    emu.clock.advance(23 * 3600)
    assert cached("24h") > 0
    emu.clock.advance(3600 + 1)
    assert cached("24h") == 0
    emu.reset(caches=True)
    assert cached("in-memory") == 0  # SDK 2.x spelling is still accepted
    emu.clock.advance(301)
    assert cached("in-memory") == 0


def test_retention_values_a_model_does_not_support_are_refused(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="gpt-4o", messages=_msgs("x"), prompt_cache_retention="24h")
    assert e.value.body["param"] == "prompt_cache_retention"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="gpt-4.1", messages=_msgs("x"), prompt_cache_retention="forever")
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="gpt-4o", messages=_msgs("x"), prompt_cache_options={"mode": "explicit"})
    assert e.value.body["code"] == "unsupported_parameter"


def _bp_messages(question: str) -> list[dict]:
    return [{"role": "system", "content": [{"type": "text", "text": LONG_SYSTEM,
                                            "prompt_cache_breakpoint": {"mode": "explicit"}}]},
            {"role": "user", "content": question}]


def test_gpt_5_6_breakpoints_and_cache_write_tokens(client: openai.OpenAI) -> None:
    def usage(question: str, **kw):
        return client.chat.completions.create(model="gpt-5.6", messages=_bp_messages(question),
                                              prompt_cache_key="k", **kw).usage.prompt_tokens_details

    first = usage("Question one?")
    assert first.cached_tokens == 0 and first.cache_write_tokens > 1024  # explicit + implicit breakpoints written
    again = usage("Question one?")
    assert again.cached_tokens == first.cache_write_tokens and again.cache_write_tokens == 0
    other = usage("A different question entirely?")
    explicit_end = other.cached_tokens  # only the explicit breakpoint (end of the system part) matches
    assert 1024 <= explicit_end < first.cache_write_tokens
    assert other.cache_write_tokens > 0  # the new latest-message breakpoint, from the read position on
    # explicit mode without markers: no caching, no writes
    plain = client.chat.completions.create(model="gpt-5.6", messages=_msgs("No markers"),
                                           prompt_cache_options={"mode": "explicit"}).usage.prompt_tokens_details
    assert plain.cached_tokens == 0 and plain.cache_write_tokens == 0
    with pytest.raises(openai.BadRequestError):  # chat only offers ttl 30m
        usage("x", prompt_cache_options={"ttl": "12h"})


def test_responses_non_stream_and_stream(client: openai.OpenAI, sdk_check) -> None:
    r = client.responses.create(model="gpt-4o", instructions=LONG_SYSTEM, input="Is there a restocking fee?")
    sdk_check(r)
    assert r.status == "completed" and r.output_text
    assert r.usage.input_tokens_details.cached_tokens == 0 and r.usage.input_tokens_details.cache_write_tokens == 0
    events = list(client.responses.create(model="gpt-4o", instructions=LONG_SYSTEM,
                                          input="Is there a restocking fee?", stream=True))
    for ev in events:
        sdk_check(ev)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert all(e.response.usage is None for e in events if e.type in ("response.created", "response.in_progress"))
    final = events[-1].response
    assert final.usage.input_tokens == r.usage.input_tokens
    assert final.usage.input_tokens_details.cached_tokens == r.usage.input_tokens // 128 * 128
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == r.output_text


def test_responses_previous_response_id_continues_the_conversation(client: openai.OpenAI) -> None:
    first = client.responses.create(model="gpt-4o", instructions=LONG_SYSTEM, input="First question?")
    second = client.responses.create(model="gpt-4o", instructions=LONG_SYSTEM, input="Second question?",
                                     previous_response_id=first.id)
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens
    assert second.usage.input_tokens_details.cached_tokens == first.usage.input_tokens // 128 * 128
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="gpt-4o", input="x", previous_response_id="resp_unknown")


def test_tool_calls_stream_and_non_stream(client: openai.OpenAI, sdk_check) -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                               "parameters": {"type": "object", "properties": {
                                                   "city": {"type": "string"}}, "required": ["city"]}}}]
    msgs = [{"role": "user", "content": "Please call get_weather for Berlin."}]
    r = client.chat.completions.create(model="gpt-4o", messages=msgs, tools=tools)
    sdk_check(r)
    call = r.choices[0].message.tool_calls[0]
    assert r.choices[0].finish_reason == "tool_calls" and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Berlin"}
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=msgs, tools=tools, stream=True))
    args = "".join(tc.function.arguments or "" for c in chunks for tc in (c.choices[0].delta.tool_calls or []))
    assert args == call.function.arguments and chunks[-1].choices[0].finish_reason == "tool_calls"
    # after the tool result the model answers in text
    done = client.chat.completions.create(model="gpt-4o", tools=tools, messages=[
        *msgs, r.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "12 degrees, cloudy"}])
    assert done.choices[0].finish_reason == "stop" and "12 degrees" in done.choices[0].message.content


def test_max_tokens_and_stop(client: openai.OpenAI) -> None:
    cut = client.chat.completions.create(model="gpt-4o", messages=_msgs("Long answer please"), max_tokens=5)
    assert cut.choices[0].finish_reason == "length" and cut.usage.completion_tokens == 5
    full = client.chat.completions.create(model="gpt-4o", messages=_msgs("Long answer please"))
    word = full.choices[0].message.content.split()[3]
    stopped = client.chat.completions.create(model="gpt-4o", messages=_msgs("Long answer please"), stop=[word])
    assert stopped.choices[0].finish_reason == "stop"
    assert full.choices[0].message.content.startswith(stopped.choices[0].message.content)
    assert word not in stopped.choices[0].message.content


def test_answers_depend_on_the_request_not_on_cache_hints(client: openai.OpenAI) -> None:
    def text(**kw) -> str:
        return client.chat.completions.create(model="gpt-4o", **kw).choices[0].message.content

    base = text(messages=_msgs("Where is my order?"))
    assert text(messages=_msgs("Where is my order?"), prompt_cache_key="abc") == base
    assert text(messages=_msgs("Where is my order?", system="You are a pirate.")) != base
    assert text(messages=_msgs("Where is my parcel?")) != base


def test_reasoning_models(client: openai.OpenAI) -> None:
    r = client.chat.completions.create(model="gpt-5", messages=_msgs("Think first"), max_completion_tokens=500)
    d = r.usage.completion_tokens_details
    assert d.reasoning_tokens > 0 and r.usage.completion_tokens > d.reasoning_tokens
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="gpt-5", messages=_msgs("x"), max_tokens=10)
    assert "max_completion_tokens" in e.value.message


def test_errors_in_openai_shape(emu: EmulatorSet, client: openai.OpenAI) -> None:
    no_key = httpx2.post(f"{emu.openai_base_url}/chat/completions", json={"model": "gpt-4o", "messages": []})
    assert no_key.status_code == 401 and "didn't provide an API key" in no_key.json()["error"]["message"]
    emu.state.valid_keys = {"sk-good"}
    with pytest.raises(openai.AuthenticationError) as e:
        client.chat.completions.create(model="gpt-4o", messages=_msgs("x"))
    assert e.value.code == "invalid_api_key"
    emu.state.valid_keys = None
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="no-such-model", messages=_msgs("x"))
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="gpt-4o", messages=[])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="gpt-4o", messages=_msgs("x"), stream_options={"include_usage": True})
    bad = httpx2.post(f"{emu.openai_base_url}/chat/completions", content=b"{not json",
                      headers={"authorization": "Bearer k", "content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"


def test_embeddings_and_models(client: openai.OpenAI) -> None:
    e = client.embeddings.create(model="text-embedding-3-small",
                                 input=["how do I reset my password", "resetting my password", "the weather in Oslo"])
    vecs = [np.array(d.embedding) for d in e.data]
    assert len(vecs[0]) == 1536 and e.usage.prompt_tokens > 0
    assert abs(np.linalg.norm(vecs[0]) - 1) < 1e-5
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]
    raw = client.embeddings.with_raw_response.create(model="text-embedding-3-large", input="x",
                                                     encoding_format="base64", dimensions=256)
    data = raw.http_response.json()["data"][0]["embedding"]
    assert len(np.frombuffer(base64.b64decode(data), dtype="<f4")) == 256
    ids = {m.id for m in client.models.list()}
    assert {"gpt-4o", "gpt-5.6", "text-embedding-3-small"} <= ids


def test_responses_function_calls_and_incomplete(client: openai.OpenAI, sdk_check) -> None:
    tools = [{"type": "function", "name": "lookup_order", "description": "Find an order",
              "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                             "required": ["order_id"]}}]
    r = client.responses.create(model="gpt-4o", input="Please call lookup_order for order 42", tools=tools)
    sdk_check(r)
    call = r.output[-1]
    assert call.type == "function_call" and call.name == "lookup_order" and json.loads(call.arguments)
    events = list(client.responses.create(model="gpt-4o", input="Please call lookup_order for order 42",
                                          tools=tools, stream=True))
    for ev in events:
        sdk_check(ev)
    args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert args == call.arguments
    follow = client.responses.create(model="gpt-4o", tools=tools, previous_response_id=r.id, input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": "shipped yesterday"}])
    assert "shipped yesterday" in follow.output_text
    cut = client.responses.create(model="gpt-4o", input="Write at length", max_output_tokens=16)
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    assert cut.usage.output_tokens == 16
    kinds = [e.type for e in client.responses.create(model="gpt-4o", input="Write at length",
                                                     max_output_tokens=16, stream=True)]
    assert kinds[-1] == "response.incomplete"
