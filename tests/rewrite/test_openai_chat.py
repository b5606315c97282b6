"""The OpenAI Chat rewrite (also DeepSeek and OpenAI-compatible upstreams)."""

from __future__ import annotations

from gateway.rewrite import openai_chat
from gateway.rewrite.layout import RewriteOptions

from ._bodies import chat
from ._checks import check_all, run


def test_information_kept_final_question_untouched_prefix_stable() -> None:
    check_all(openai_chat, chat, ("tools", "response_format"), "assistant")


def test_tools_sorted_and_schema_keys_canonical() -> None:
    out, lay = run(openai_chat, chat(0))
    assert [t["function"]["name"] for t in out["tools"]] == ["alpha_search", "zeta_lookup"]
    assert list(out["tools"][0]) == ["function", "type"]
    assert list(out["tools"][1]["function"]["parameters"]) == ["properties", "required", "type"]
    assert lay.schemas_canonicalized == 2


def test_sorting_can_be_turned_off() -> None:
    out, lay = run(openai_chat, chat(0), RewriteOptions(sort_tools=False))
    assert [t["function"]["name"] for t in out["tools"]] == ["zeta_lookup", "alpha_search"]
    assert not lay.tools_sorted


def test_context_turn_role_and_position() -> None:
    out, lay = run(openai_chat, chat(0, 3), RewriteOptions(context_role="user"))
    assert lay.context_index == len(out["messages"]) - 2
    assert out["messages"][lay.context_index]["role"] == "user"
    out, _ = run(openai_chat, chat(0, 3), RewriteOptions(context_role="system"))
    assert out["messages"][-2]["role"] == "system"


def test_tool_results_keep_their_assistant_call_adjacent() -> None:
    body = chat(0)
    fn = {"name": "zeta_lookup", "arguments": "{}"}
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": fn}]}
    body["messages"] += [call, {"role": "tool", "tool_call_id": "call_1", "content": "shipped 2026-11-02"}]
    out, lay = run(openai_chat, body)
    assert out["messages"][lay.tail_start:] == [call, body["messages"][-1]]
    assert out["messages"][lay.context_index]["content"].startswith("<gateway-context>")


def test_preamble_of_the_first_user_turn_moves_but_its_question_stays() -> None:
    body = chat(0, 2)
    first = {"role": "user", "content": [{"type": "text", "text": "Context generated 2026-11-05T10:00:00Z."},
                                         {"type": "text", "text": "First question on 2026-11-05?"}]}
    body["messages"][1] = first
    out, lay = run(openai_chat, body)
    parts = out["messages"][1]["content"]
    assert "2026-11-05T10:00:00Z" not in parts[0]["text"]
    assert parts[1] == first["content"][1]
    assert any(m.where.startswith("messages.1") for m in lay.moved)


def test_nothing_volatile_means_no_context_turn() -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be brief."},
                                            {"role": "user", "content": "Hi"}]}
    out, lay = run(openai_chat, body)
    assert out["messages"] == body["messages"]
    assert lay.context_index is None and not lay.moved
