"""Properties every protocol module's rewrite must have (called by each protocol's test file)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType
from typing import Any

import orjson

from gateway.rewrite.detect import VolatileDetector
from gateway.rewrite.layout import Layout, RewriteOptions
from gateway.rewrite.move import CONTEXT_OPEN, Mover, is_canonical

from ._bodies import QUESTION, values

Make = Callable[[int, int], dict[str, Any]]


def run(mod: ModuleType, body: dict[str, Any], options: RewriteOptions | None = None) -> tuple[dict[str, Any], Layout]:
    return mod.rewrite(body, Mover(VolatileDetector()), options or RewriteOptions())


def stable_bytes(body: dict[str, Any], lay: Layout, top_keys: tuple[str, ...]) -> bytes:
    """Everything the vendor sees before the context turn, serialized."""
    assert lay.context_index is not None
    return orjson.dumps([body.get(k) for k in top_keys] + [body[lay.turns_key][:lay.context_index]])


def check_all(mod: ModuleType, make: Make, top_keys: tuple[str, ...], assistant_role: str) -> None:
    for turns in (1, 3):
        originals = [make(i, turns) for i in (0, 1)]
        snapshots = [copy.deepcopy(b) for b in originals]
        results = [run(mod, b) for b in originals]
        for original, snapshot, (out, lay) in zip(originals, snapshots, results, strict=True):
            assert original == snapshot, "the input body must not be mutated"
            turns_out = out[lay.turns_key]
            turns_in = original[lay.turns_key]
            # the final user turn is byte-identical, and still last
            assert orjson.dumps(turns_out[lay.tail_start:]) == orjson.dumps(turns_in[lay.stable_end:])
            assert QUESTION.encode() in orjson.dumps(turns_out[-1])
            # assistant turns are untouched
            assistants_in = [t for t in turns_in if isinstance(t, dict) and t.get("role") == assistant_role]
            assistants_out = [t for t in turns_out if isinstance(t, dict) and t.get("role") == assistant_role]
            assert orjson.dumps(assistants_out) == orjson.dumps(assistants_in)
            # every moved value is restated, verbatim, in the context turn
            context = orjson.dumps(turns_out[lay.context_index]).decode()
            assert CONTEXT_OPEN in context
            assert lay.moved
            for m in lay.moved:
                assert orjson.dumps(m.value).decode()[1:-1] in context
                assert m.placeholder in context
            # the known volatile values are gone from the stable part
            stable = stable_bytes(out, lay, top_keys).decode()
            for value in values(results.index((out, lay))).values():
                assert value not in stable
            # tools sorted by name, every schema in canonical key order
            assert lay.tools_sorted
            assert is_canonical(out["tools"])
        # requests that differ only in volatile values share a byte-identical stable prefix
        (a, la), (b, lb) = results
        assert stable_bytes(a, la, top_keys) == stable_bytes(b, lb, top_keys)
        assert la.prefix_hash == lb.prefix_hash
        assert la.conversation_hash == lb.conversation_hash
