"""The OpenAI Responses rewrite."""

from __future__ import annotations

from gateway.rewrite import openai_responses

from ._bodies import QUESTION
from ._bodies import responses as make
from ._checks import check_all, run


def test_information_kept_final_question_untouched_prefix_stable() -> None:
    check_all(openai_responses, make, ("tools", "instructions"), "assistant")


def test_string_input_becomes_context_then_the_same_question() -> None:
    body = {"model": "gpt-4o", "instructions": "Now: 2026-11-05T10:23:45Z.", "input": QUESTION}
    out, lay = run(openai_responses, body)
    assert out["instructions"] == "Now: [[gw:1]]."
    assert out["input"][-1] == {"role": "user", "content": QUESTION}
    assert "2026-11-05T10:23:45Z" in out["input"][lay.context_index]["content"]


def test_function_call_outputs_keep_their_calls() -> None:
    body = make(0, 2)
    tail = [{"type": "function_call", "call_id": "c1", "name": "zeta_lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
    body["input"] += tail
    out, lay = run(openai_responses, body)
    assert out["input"][lay.tail_start:] == tail
