"""The Anthropic Messages rewrite."""

from __future__ import annotations

from gateway.rewrite import anthropic

from ._bodies import anthropic as make
from ._checks import check_all, run


def test_information_kept_final_question_untouched_prefix_stable() -> None:
    check_all(anthropic, make, ("tools", "system"), "assistant")


def test_system_blocks_are_rewritten_and_keep_client_markers() -> None:
    body = make(0)
    body["system"] = [{"type": "text", "text": "Policy v3 of 2026-11-05.", "cache_control": {"type": "ephemeral"}}]
    out, _ = run(anthropic, body)
    assert out["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "2026-11-05" not in out["system"][0]["text"]


def test_tools_with_a_client_marker_keep_their_order() -> None:
    body = make(0)
    body["tools"][1]["cache_control"] = {"type": "ephemeral"}
    out, lay = run(anthropic, body)
    assert [t["name"] for t in out["tools"]] == ["zeta_lookup", "alpha_search"]
    assert out["tools"][1]["cache_control"] == {"type": "ephemeral"}
    assert lay.tools_unsorted_kept and not lay.tools_sorted


def test_tool_result_tail_keeps_tool_use_adjacent() -> None:
    body = make(0, 2)
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_1", "name": "zeta_lookup", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "ok"}]}
    body["messages"] += [use, result]
    out, lay = run(anthropic, body)
    assert out["messages"][lay.tail_start:] == [use, result]
    assert out["messages"][lay.context_index]["role"] == "user"
