"""Block chains of rendered prompts (prefix.py), their comparison and causes (breaks.py), and prefix
families (family.py), without a gateway."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.provider_cache.breaks import Previous, checkpoints, classify, to_previous
from gateway.provider_cache.family import family_id
from gateway.provider_cache.prefix import PARTS, TURN_PIECE, common_pieces, dump, render, turn_layout
from gateway.rewrite.detect import detector_for

HANDBOOK = " ".join(f"Rule {i}: returns within {i + 10} days with a receipt." for i in range(400))
DETECTOR = detector_for(())


def chat(system: str = HANDBOOK, turns: int = 3, model: str = "gpt-4o", **extra: Any) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for t in range(turns):
        msgs += [{"role": "user", "content": f"question {t} " * 300}, {"role": "assistant", "content": f"a{t} " * 300}]
    msgs.append({"role": "user", "content": "final"})
    return {"model": model, "messages": msgs, **extra}


def prev_of(body: dict[str, Any], tokens: int = 10_000, protocol: str = "openai_chat") -> Previous:
    return to_previous("gw-prev", render(protocol, body["model"], body), tokens, DETECTOR, None, None)


def cls(body: dict[str, Any], previous: Previous, protocol: str = "openai_chat") -> tuple[int, Any]:
    return classify(render(protocol, body["model"], body), previous, DETECTOR, 1024, 0, None, None)


def test_parts_in_cache_order_and_pieces() -> None:
    b = render("openai_chat", "gpt-4o", chat(tools=[{"type": "function", "function": {"name": "f"}}]))
    assert [PARTS[p] for p in sorted(set(b.parts))] == list(PARTS)
    assert b.parts == sorted(b.parts)  # model, tools, system, then the turns
    assert all(len(p) <= TURN_PIECE for p, part in zip(b.pieces, b.parts, strict=True) if part == 3)
    assert b.ends[-1] == sum(len(p) for p in b.pieces)
    ends, _ = turn_layout(b)
    assert len(ends) == len(b.turns) == 7 and ends[-1] == b.size  # the closing bracket is left out


def test_cache_hints_do_not_change_the_chain() -> None:
    plain = chat()
    marked = chat()
    marked["messages"][3] = {"role": "assistant", "content": [{"type": "text", "text": marked["messages"][3]["content"],
                                                               "cache_control": {"type": "ephemeral"}}]}
    plain["messages"][3] = {"role": "assistant", "content": [{"type": "text", "text": plain["messages"][3]["content"]}]}
    assert render("openai_chat", "gpt-4o", marked).hashes == render("openai_chat", "gpt-4o", plain).hashes
    marked_part = {"type": "text", "text": "x", "prompt_cache_breakpoint": {"mode": "explicit"}}
    assert dump(marked_part) == b'{"type":"text","text":"x"}'


def test_append_only_is_no_break_even_inside_the_last_piece() -> None:
    first = chat(turns=1)
    grown = chat(turns=1)
    grown["messages"] += [{"role": "assistant", "content": "short"}, {"role": "user", "content": "next"}]
    previous = prev_of(first)
    common, brk = cls(grown, previous)
    assert brk is None and common == len(previous.hashes)
    assert common_pieces(render("openai_chat", "gpt-4o", grown), previous.hashes, previous.ends) == common


@pytest.mark.parametrize(("edit", "part", "cause", "index"), [
    (lambda b: b.update(model="gpt-4.1"), "model", "model_changed", None),
    (lambda b: b.update(tools=[{"type": "function", "function": {"name": "g"}}]), "tools", "tools_changed", None),
    (lambda b: b["messages"][0].update(content=HANDBOOK.replace("Rule 300:", "Rule 300 (new):")), "system",
     "system_changed", None),
    (lambda b: b["messages"][3].update(content="edited"), "messages", "history_edited", 3),
    (lambda b: b["messages"].__delitem__(slice(5, 7)), "messages", "history_edited", 5),
    (lambda b: b["messages"][0].update(content="Today: 2026-11-06. " + HANDBOOK), "system", "volatile_value", None),
])
def test_causes(edit: Any, part: str, cause: str, index: int | None) -> None:
    base = chat(tools=[{"type": "function", "function": {"name": "f"}}])
    base["messages"][0]["content"] = "Today: 2026-11-05. " + HANDBOOK if cause == "volatile_value" else HANDBOOK
    previous = prev_of(base)
    changed = chat(tools=[{"type": "function", "function": {"name": "f"}}])
    changed["messages"][0]["content"] = base["messages"][0]["content"]
    edit(changed)
    common, brk = cls(changed, previous)
    assert (brk["part"], brk["cause"], brk["message_index"]) == (part, cause, index)
    assert 0 < brk["tokens_lost"] <= previous.tokens
    if part == "system" and cause == "system_changed":
        assert 0 < previous.tokens_at(common) < previous.tokens  # the edit sits in the middle


def test_a_volatile_value_in_the_first_user_turn() -> None:
    base = chat()
    base["messages"][1]["content"] = "Request req_7f3k2m9x placed 2026-11-05. " + base["messages"][1]["content"]
    previous = prev_of(base)
    changed = chat()
    changed["messages"][1]["content"] = "Request req_1a2b3c4d placed 2026-11-06. " + changed["messages"][1]["content"]
    _, brk = cls(changed, previous)
    assert (brk["cause"], brk["message_index"]) == ("volatile_value", 1)


def test_the_same_tools_reordered_is_marked() -> None:
    tools = [{"type": "function", "function": {"name": n}} for n in ("a", "b")]
    body = chat(tools=tools)
    previous = to_previous("gw-p", render("openai_chat", "gpt-4o", body), 9000, DETECTOR, 123, None)
    swapped = chat(tools=list(reversed(tools)))
    _, brk = classify(render("openai_chat", "gpt-4o", swapped), previous, DETECTOR, 1024, 0, None, lambda: 123)
    assert brk["cause"] == "tools_changed" and brk["reordered"] is True


def test_previous_round_trip_and_checkpoints() -> None:
    previous = prev_of(chat())
    again = Previous.loads(previous.dumps())
    assert again == previous
    assert Previous.loads(b"not json") is None
    assert checkpoints(10) == [0, 1, 3, 7] and checkpoints(1) == [0]


def test_families_ignore_volatile_values_tool_order_and_the_rewrites_placeholders() -> None:
    tools = [{"type": "function", "function": {"name": n, "description": "d"}} for n in ("a", "b")]
    a = family_id("openai_chat", chat("Now: 2026-11-05T10:00:00Z. " + HANDBOOK, tools=tools), DETECTOR)
    b = family_id("openai_chat", chat("Now: 2026-11-07T08:30:12Z. " + HANDBOOK, tools=list(reversed(tools))), DETECTOR)
    rewritten = family_id("openai_chat", chat("Now: [[gw:1]]. " + HANDBOOK, tools=tools), DETECTOR)
    assert a == b == rewritten
    assert family_id("openai_chat", chat("Another assistant. " + HANDBOOK), DETECTOR) != a
    assert family_id("openai_chat", {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
                     DETECTOR) is None
