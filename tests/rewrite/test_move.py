"""Placeholders, the context block, tool sorting, canonical schemas and the stable hash."""

from __future__ import annotations

import subprocess
import sys

from gateway.rewrite.detect import VolatileDetector
from gateway.rewrite.move import (
    CONTEXT_CLOSE,
    CONTEXT_OPEN,
    Mover,
    canonical,
    contains_placeholder,
    is_canonical,
    sort_by_name,
    stable_hash,
)


def test_placeholders_numbered_in_order_and_restated_verbatim() -> None:
    mover = Mover(VolatileDetector())
    a = mover.text("at 2026-11-05T10:00:00Z request id rq-77aa21bq", "system")
    b = mover.text("then 2026-11-06", "tools.x.description")
    assert a == "at [[gw:1]] request id [[gw:2]]" and b == "then [[gw:3]]"
    block = mover.context_block()
    assert block is not None and block.startswith(CONTEXT_OPEN) and block.endswith(CONTEXT_CLOSE)
    assert "[[gw:1]] = 2026-11-05T10:00:00Z" in block and "[[gw:3]] = 2026-11-06" in block
    assert [m.summary() for m in mover.moved][2] == {"where": "tools.x.description", "kind": "date", "chars": 10}
    assert Mover(VolatileDetector()).context_block() is None


def test_canonical_sorts_keys_but_not_lists() -> None:
    schema = {"type": "object", "required": ["b", "a"], "properties": {"b": {"type": "string"}, "a": {"enum": [2, 1]}}}
    out = canonical(schema)
    assert list(out) == ["properties", "required", "type"] and list(out["properties"]) == ["a", "b"]
    assert out["required"] == ["b", "a"] and out["properties"]["a"]["enum"] == [2, 1]
    assert not is_canonical(schema) and is_canonical(out)


def test_sort_by_name_keeps_unnamed_last_and_reports_changes() -> None:
    items = [{"n": "b"}, {"x": 1}, {"n": "a"}]
    ordered, changed = sort_by_name(items, lambda i: i.get("n"))
    assert ordered == [{"n": "a"}, {"n": "b"}, {"x": 1}] and changed
    assert sort_by_name(ordered, lambda i: i.get("n")) == (ordered, False)


def test_stable_hash_is_the_same_in_another_process() -> None:
    here = stable_hash("p", {"b": 1, "a": [1, 2]})
    code = "from gateway.rewrite.move import stable_hash; print(stable_hash('p', {'a': [1, 2], 'b': 1}))"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert here == there


def test_contains_placeholder() -> None:
    assert contains_placeholder({"m": ["x [[gw:2]] y"]}) and not contains_placeholder({"m": "[[other]]"})
