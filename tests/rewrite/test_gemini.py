"""The Gemini generateContent rewrite."""

from __future__ import annotations

from gateway.rewrite import gemini

from ._bodies import gemini as make
from ._checks import check_all, run


def test_information_kept_final_question_untouched_prefix_stable() -> None:
    check_all(gemini, make, ("systemInstruction", "tools", "toolConfig"), "model")


def test_function_declarations_sorted_inside_their_tool() -> None:
    out, lay = run(gemini, make(0))
    assert [d["name"] for d in out["tools"][0]["functionDeclarations"]] == ["alpha_search", "zeta_lookup"]
    assert lay.tools_sorted


def test_function_response_tail_keeps_its_call() -> None:
    body = make(0, 2)
    call = {"role": "model", "parts": [{"functionCall": {"name": "zeta_lookup", "args": {}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "zeta_lookup", "response": {"ok": True}}}]}
    body["contents"] += [call, answer]
    out, lay = run(gemini, body)
    assert out["contents"][lay.tail_start:] == [call, answer]
