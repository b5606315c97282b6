"""The Anthropic emulator driven by the official `anthropic` SDK (2.14.0): messages stream and not,
cache_control breakpoints, TTLs, the 20-block lookback, usage fields, auth styles, errors."""

from __future__ import annotations

import warnings

import anthropic
import httpx2
import pytest

from gateway_dev.emulators import EmulatorSet

pytestmark = [pytest.mark.timeout(60), pytest.mark.filterwarnings("ignore::DeprecationWarning")]
warnings.filterwarnings("ignore", category=DeprecationWarning)

MODEL = "claude-sonnet-4-6"  # minimum cacheable length 1024 in the newest table
EPH = {"type": "ephemeral"}


@pytest.fixture(scope="module")
def client(emu: EmulatorSet) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="sk-ant-1", max_retries=0)


def _system(text: str, cc: dict | None = EPH) -> list[dict]:
    block: dict = {"type": "text", "text": text}
    if cc is not None:
        block["cache_control"] = cc
    return [block]


def _create(client: anthropic.Anthropic, long_system: str, question: str = "Can I return shoes?", **kw):
    kw.setdefault("system", _system(long_system))
    return client.messages.create(model=kw.pop("model", MODEL), max_tokens=200,
                                  messages=[{"role": "user", "content": question}], **kw)


def test_messages_non_stream_parse_and_cache_write_then_read(client, long_system, sdk_check) -> None:
    total = client.messages.count_tokens(model=MODEL, system=_system(long_system),
                                         messages=[{"role": "user", "content": "Can I return shoes?"}]).input_tokens
    first = _create(client, long_system)
    sdk_check(first)
    assert first.type == "message" and first.role == "assistant" and first.stop_reason == "end_turn"
    assert first.content[0].type == "text" and first.content[0].text
    u = first.usage
    assert u.cache_read_input_tokens == 0 and u.cache_creation_input_tokens > 1024
    assert u.cache_creation.ephemeral_5m_input_tokens == u.cache_creation_input_tokens
    assert u.cache_creation.ephemeral_1h_input_tokens == 0
    assert u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens == total
    assert 0 < u.input_tokens < 20  # only what follows the breakpoint
    plain = _create(client, long_system, system=_system(long_system, cc=None))  # no cache_control at all
    assert plain.content[0].text == first.content[0].text  # cache hints never change the answer
    second = _create(client, long_system, "Can I return socks?")
    v = second.usage
    assert v.cache_read_input_tokens == u.cache_creation_input_tokens and v.cache_creation_input_tokens == 0
    assert second.content[0].text != first.content[0].text


def test_stream_event_sequence_and_cumulative_usage(emu, client, long_system, sdk_check) -> None:
    kw = {"model": MODEL, "max_tokens": 200, "system": _system(long_system),
          "messages": [{"role": "user", "content": "Stream please"}]}
    whole = client.messages.create(**kw)
    events = list(client.messages.create(**kw, stream=True))
    for ev in events:
        sdk_check(ev)
    kinds = [e.type for e in events]
    assert kinds[:2] == ["message_start", "content_block_start"] and kinds[-2:] == ["message_delta", "message_stop"]
    start_usage, delta = events[0].message.usage, events[-2]
    assert start_usage.cache_read_input_tokens == whole.usage.cache_creation_input_tokens
    assert delta.usage.output_tokens == whole.usage.output_tokens
    assert delta.usage.cache_read_input_tokens == start_usage.cache_read_input_tokens  # cumulative totals
    assert delta.delta.stop_reason == "end_turn"
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    assert text == whole.content[0].text
    # raw framing: every event has an `event:` line and a ping follows the first block start
    with httpx2.stream("POST", f"{emu.anthropic_base_url}/v1/messages", json={**kw, "stream": True},
                       headers={"x-api-key": "sk-ant-1", "anthropic-version": "2023-06-01"}) as resp:
        frames = [f for f in resp.read().decode().split("\n\n") if f]
    assert all(f.startswith("event: ") and "\ndata: " in f for f in frames)
    assert [f.split("\n")[0][7:] for f in frames][:3] == ["message_start", "content_block_start", "ping"]
    # the SDK's stream helper accumulates the same usage
    with client.messages.stream(**kw) as s:
        final = s.get_final_message()
    assert final.usage.cache_read_input_tokens == start_usage.cache_read_input_tokens
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_prompt_under_the_model_minimum_is_not_cached(client, long_system) -> None:
    # Haiku 4.5 needs 4096 tokens: the ~1,500-token system prompt is written and read by no one.
    for _ in range(2):
        u = _create(client, long_system, model="claude-haiku-4-5").usage
        assert u.cache_creation_input_tokens == 0 and u.cache_read_input_tokens == 0 and u.input_tokens > 1024


def test_a_fifth_breakpoint_gets_the_400(client, long_system) -> None:
    blocks = [{"type": "text", "text": f"Part {i}. " + long_system[:200], "cache_control": EPH} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model=MODEL, max_tokens=50, system=blocks,
                               messages=[{"role": "user", "content": "hi"}])
    assert e.value.body["error"]["message"] == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    assert e.value.body["error"]["type"] == "invalid_request_error"
    # four explicit ones plus top-level automatic caching is five too
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model=MODEL, max_tokens=50, system=blocks[:4], cache_control=EPH,
                               messages=[{"role": "user", "content": "hi"}])
    assert "Found 5" in e.value.body["error"]["message"]


def test_ttl_expiry_refresh_on_hit_and_one_hour(emu, client, long_system) -> None:
    assert _create(client, long_system).usage.cache_creation_input_tokens > 0
    emu.clock.advance(290)
    assert _create(client, long_system).usage.cache_read_input_tokens > 0  # the hit restarts the 5 min
    emu.clock.advance(290)
    assert _create(client, long_system).usage.cache_read_input_tokens > 0  # 580 s after the write, 290 after use
    emu.clock.advance(301)
    u = _create(client, long_system).usage
    assert u.cache_read_input_tokens == 0 and u.cache_creation_input_tokens > 0  # expired, rewritten
    one_hour = _system(long_system + " (v2)", {"type": "ephemeral", "ttl": "1h"})
    u = _create(client, long_system, system=one_hour).usage
    assert u.cache_creation.ephemeral_1h_input_tokens == u.cache_creation_input_tokens > 0
    emu.clock.advance(3000)
    assert _create(client, long_system, system=one_hour).usage.cache_read_input_tokens > 0
    emu.clock.advance(3601)
    assert _create(client, long_system, system=one_hour).usage.cache_read_input_tokens == 0


def test_automatic_caching_moves_forward_and_the_20_block_lookback(client, long_system) -> None:
    turns = [{"role": "user", "content": long_system}]
    for i in range(1, 17):
        turns += [{"role": "assistant", "content": f"Answer {i}."}, {"role": "user", "content": f"Question {i}?"}]
    # 33 blocks, automatic breakpoint on the last one
    first = client.messages.create(model=MODEL, max_tokens=50, cache_control=EPH, messages=turns[:33])
    assert first.usage.cache_creation_input_tokens > 1024
    grown = [*turns[:33], {"role": "assistant", "content": "More."}, {"role": "user", "content": "Next?"}]
    second = client.messages.create(model=MODEL, max_tokens=50, cache_control=EPH, messages=grown)
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens  # within 20 blocks
    far = grown + [m for k in range(12) for m in ({"role": "assistant", "content": f"A{k}."},
                                                   {"role": "user", "content": f"Q{k}?"})]
    third = client.messages.create(model=MODEL, max_tokens=50, cache_control=EPH, messages=far)
    # breakpoint now at block 58: positions 58..39 hold no entry (the last one is at 34): a miss
    assert third.usage.cache_read_input_tokens == 0 and third.usage.cache_creation_input_tokens > 0


def test_ttl_order_and_bad_cache_control_are_refused(client, long_system) -> None:
    blocks = [{"type": "text", "text": "a " * 600, "cache_control": EPH},
              {"type": "text", "text": "b " * 600, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model=MODEL, max_tokens=50, system=blocks, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(model=MODEL, max_tokens=50, system=[{"type": "text", "text": "x",
                                                                    "cache_control": {"type": "persistent"}}],
                               messages=[{"role": "user", "content": "x"}])


def test_auth_styles_and_errors(emu, long_system) -> None:
    url = f"{emu.anthropic_base_url}/v1/messages"
    body = {"model": MODEL, "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
    v = {"anthropic-version": "2023-06-01"}
    assert httpx2.post(url, json=body, headers={**v, "x-api-key": "k"}).status_code == 200
    assert httpx2.post(url, json=body, headers={**v, "authorization": "Bearer k"}).status_code == 200
    no_key = httpx2.post(url, json=body, headers=v)
    assert no_key.status_code == 401 and no_key.json()["error"]["type"] == "authentication_error"
    assert no_key.json()["type"] == "error" and no_key.headers["request-id"]
    assert httpx2.post(url, json=body, headers={"x-api-key": "k"}).status_code == 400  # anthropic-version required
    new_version = {"anthropic-version": "2026-10-21", "x-api-key": "k"}
    refused = httpx2.post(url, json={**body, "temperature": 0.5}, headers=new_version)
    assert refused.status_code == 400 and "temperature" in refused.json()["error"]["message"]
    assert httpx2.post(url, json={**body, "temperature": 0.5}, headers={**v, "x-api-key": "k"}).status_code == 200
    missing = httpx2.post(url, json={**body, "max_tokens": None}, headers=new_version)
    assert missing.status_code == 400 and missing.json()["error"]["message"] == "max_tokens: Field required"
    sdk = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.NotFoundError):
        sdk.messages.create(model="gpt-4o", max_tokens=20, messages=[{"role": "user", "content": "x"}])


def test_tool_use_stream_and_stop_reasons(client, sdk_check) -> None:
    tools = [{"name": "get_weather", "description": "Weather", "input_schema": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
    msgs = [{"role": "user", "content": "Use get_weather for Paris"}]
    r = client.messages.create(model=MODEL, max_tokens=200, tools=tools, messages=msgs)
    sdk_check(r)
    tool = r.content[-1]
    assert r.stop_reason == "tool_use" and tool.type == "tool_use" and tool.input == {"city": "Paris"}
    with client.messages.stream(model=MODEL, max_tokens=200, tools=tools, messages=msgs) as s:
        final = s.get_final_message()
    assert final.content[-1].input == {"city": "Paris"} and final.stop_reason == "tool_use"
    result = client.messages.create(model=MODEL, max_tokens=200, tools=tools, messages=[
        *msgs, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "21 C and sunny"}]}])
    assert result.stop_reason == "end_turn" and "21 C" in result.content[0].text
    cut = client.messages.create(model=MODEL, max_tokens=3, messages=[{"role": "user", "content": "Long answer"}])
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 3
    word = client.messages.create(model=MODEL, max_tokens=200, messages=[{"role": "user", "content": "Words"}]) \
        .content[0].text.split()[2]
    stop = client.messages.create(model=MODEL, max_tokens=200, stop_sequences=[word],
                                  messages=[{"role": "user", "content": "Words"}])
    assert stop.stop_reason == "stop_sequence" and stop.stop_sequence == word


def test_thinking_blocks(client) -> None:
    r = client.messages.create(model=MODEL, max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024},
                               messages=[{"role": "user", "content": "Think about pricing"}])
    assert [b.type for b in r.content] == ["thinking", "text"] and r.content[0].signature
    with client.messages.stream(model=MODEL, max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024},
                                messages=[{"role": "user", "content": "Think about pricing"}]) as s:
        final = s.get_final_message()
    assert final.content[0].thinking == r.content[0].thinking


def test_prefix_order_tools_system_messages(client, long_system) -> None:
    tools = [{"name": f"tool_{i}", "description": long_system[:1500], "input_schema": {"type": "object"}}
             for i in range(3)]
    tools[-1]["cache_control"] = EPH  # breakpoint after the tools
    kw = {"model": MODEL, "max_tokens": 50, "tools": tools, "messages": [{"role": "user", "content": "hi"}]}
    first = client.messages.create(**kw, system=_system("System prompt A. " * 80))
    u = first.usage
    assert u.cache_creation_input_tokens > 0 and u.cache_read_input_tokens == 0
    # a different system prompt: the tools entry (written by the first breakpoint) still matches
    second = client.messages.create(**kw, system=_system("System prompt B. " * 80))
    tools_only = second.usage.cache_read_input_tokens
    assert 0 < tools_only < u.cache_creation_input_tokens
    # a different tool: nothing matches any more
    changed = [dict(t) for t in tools]
    changed[0]["description"] = "changed"
    third = client.messages.create(**{**kw, "tools": changed}, system=_system("System prompt A. " * 80))
    assert third.usage.cache_read_input_tokens == 0
    assert [m.id for m in client.models.list()][:1] == ["claude-opus-4-7"]
