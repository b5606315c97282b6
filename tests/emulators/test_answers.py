"""Deterministic answers: a pure function of the request; max_tokens, stop, tool calls, JSON."""

from __future__ import annotations

import json

from gateway_dev.emulators.answers import ToolSpec, generate
from gateway_dev.emulators.tokens import count, get_tokenizer

WEATHER = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {
    "city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"enum": ["C", "F"]}},
    "required": ["city", "days", "unit"]})


def test_same_request_same_answer_and_readable() -> None:
    a = generate(model="m", conversation_key="k", question="How do refunds work for damaged parcels?")
    assert a == generate(model="m", conversation_key="k", question="How do refunds work for damaged parcels?")
    q = "How do refunds work for damaged parcels?"
    assert a.text != generate(model="m", conversation_key="k2", question=q).text
    assert a.text != generate(model="m2", conversation_key="k", question=q).text
    assert "refunds" in a.text and a.finish == "stop" and 35 <= len(a.tokens) <= 70
    assert get_tokenizer().encode_uncached(a.text) == a.tokens  # the ids are the text's own tokens
    assert len(generate(model="m", conversation_key="k", question="q", target_tokens=200).tokens) >= 200


def test_max_tokens_stop_and_reasoning_budget() -> None:
    cut = generate(model="m", conversation_key="k", question="Explain caching", max_tokens=7)
    assert cut.finish == "length" and len(cut.tokens) == 7
    full = generate(model="m", conversation_key="k", question="Explain caching")
    stop = full.text.split()[4]
    s = generate(model="m", conversation_key="k", question="Explain caching", stop=["zzz", stop])
    assert s.finish == "stop" and s.stop_sequence == stop and full.text.startswith(s.text)
    r = generate(model="m", conversation_key="k", question="Explain caching", max_tokens=50, reasoning_tokens=48)
    assert r.reasoning_tokens == 48 and len(r.tokens) == 2 and r.finish == "length"
    assert r.output_tokens == 50


def test_tool_calls_and_json_output() -> None:
    call = generate(model="m", conversation_key="k", question="Please use get weather for Oslo", tools=[WEATHER])
    assert call.finish == "tool_calls" and call.tool_calls[0].arguments == {"city": "Oslo", "days": call.tool_calls[0]
                                                                            .arguments["days"], "unit": "C"}
    assert generate(model="m", conversation_key="k", question="Hello", tools=[WEATHER]).finish == "stop"
    assert generate(model="m", conversation_key="k", question="Hello", tools=[WEATHER],
                    tool_choice="required").tool_calls[0].name == "get_weather"
    assert not generate(model="m", conversation_key="k", question="use get_weather", tools=[WEATHER],
                        tool_choice="none").tool_calls
    after = generate(model="m", conversation_key="k", question="use get_weather", tools=[WEATHER],
                     tool_result="14 degrees")
    assert after.finish == "stop" and "14 degrees" in after.text
    obj = json.loads(generate(model="m", conversation_key="k", question="q", json_schema=WEATHER.parameters).text)
    assert set(obj) == {"city", "days", "unit"}
    assert "answer" in json.loads(generate(model="m", conversation_key="k", question="q", json_object=True).text)


def test_cjk_questions_get_cjk_answers_streamable_per_token() -> None:
    a = generate(model="m", conversation_key="k", question="退货政策是什么？")
    assert "退货政策是什么" in a.text
    pieces = get_tokenizer().pieces(a.tokens)
    assert "".join(pieces) == a.text and all("\ufffd" not in p for p in pieces)
    assert count("hello world") == 2
