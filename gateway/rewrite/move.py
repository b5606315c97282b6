"""Move volatile spans out of the stable prefix into one labelled context block.

Each volatile value in the prefix is replaced by a numbered placeholder (`[[gw:1]]`, `[[gw:2]]`, ...
in order of appearance) and restated, byte for byte, in a context block that the protocol module
inserts just before the final user turn. Two requests that differ only in those values then share
a byte-identical prefix, and no information is lost: the model reads the placeholder in place and
its value a few lines later.

Also here: the protocol-neutral helpers the protocol modules share — sorting tools by name and
rewriting JSON-schema objects with their keys in a canonical (sorted) order, so that a client that
builds its tool list from a dict or a set still sends the same bytes every time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.rewrite.detect import VolatileDetector

PLACEHOLDER_PREFIX = "[[gw:"
CONTEXT_OPEN = "<gateway-context>"
CONTEXT_CLOSE = "</gateway-context>"
CONTEXT_HEADER = (
    "Values moved here from earlier in this prompt so that its beginning stays identical between "
    "requests; each [[gw:N]] marker above stands for the value given below."
)


def placeholder(n: int) -> str:
    return f"{PLACEHOLDER_PREFIX}{n}]]"


@dataclass(frozen=True, slots=True)
class Moved:
    placeholder: str
    value: str
    where: str  # "system", "system.1", "tools.get_weather.description", "messages.0.content.0" ...
    kind: str

    def summary(self) -> dict[str, Any]:
        """What the usage record keeps: never the value itself (it may be personal data)."""
        return {"where": self.where, "kind": self.kind, "chars": len(self.value)}


@dataclass
class Mover:
    detector: VolatileDetector
    moved: list[Moved] = field(default_factory=list)

    def text(self, s: str, where: str) -> str:
        """`s` with every volatile span replaced by its placeholder (recorded in `moved`)."""
        spans = self.detector.spans(s)
        if not spans:
            return s
        out: list[str] = []
        pos = 0
        for span in spans:
            out.append(s[pos:span.start])
            ph = placeholder(len(self.moved) + 1)
            self.moved.append(Moved(ph, s[span.start:span.end], where, span.kind))
            out.append(ph)
            pos = span.end
        out.append(s[pos:])
        return "".join(out)

    def context_block(self) -> str | None:
        """The labelled block restating every moved value; None when nothing moved."""
        if not self.moved:
            return None
        lines = [CONTEXT_OPEN, CONTEXT_HEADER]
        lines += [f"{m.placeholder} = {m.value}" for m in self.moved]
        lines.append(CONTEXT_CLOSE)
        return "\n".join(lines)


def rewrite_texts(parts: list[Any], is_text: Callable[[Any], bool], mover: Mover, where: str,
                  preamble_only: bool) -> list[Any] | None:
    """A copy of a content list with volatile spans moved out of each text part (`is_text` says
    which parts are, per protocol); None when nothing changed, so that the caller keeps the very
    same object. `preamble_only` leaves the last text part alone: that one is the turn's question,
    not a preamble."""
    idx = [j for j, p in enumerate(parts) if is_text(p)]
    if preamble_only:
        idx = idx[:-1]
    out = list(parts)
    changed = False
    for j in idx:
        new = mover.text(out[j]["text"], f"{where}.{j}")
        if new != out[j]["text"]:
            out[j] = {**out[j], "text": new}  # a copy: the input body is never mutated
            changed = True
    return out if changed else None


# ---- tools and schemas -------------------------------------------------------------------------


def canonical(value: Any) -> Any:
    """`value` with every object's keys in sorted order (recursively); lists keep their order, since
    in JSON Schema list order can matter (`enum`, `anyOf`, `prefixItems`)."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def is_canonical(value: Any) -> bool:
    if isinstance(value, dict):
        keys = list(value)
        return keys == sorted(keys) and all(is_canonical(v) for v in value.values())
    if isinstance(value, list):
        return all(is_canonical(v) for v in value)
    return True


def sort_by_name(items: Sequence[Any], name_of: Callable[[Any], str | None]) -> tuple[list[Any], bool]:
    """Items sorted by name (unnamed ones after, in their order); True when the order changed."""
    keyed = [(name_of(item) is None, name_of(item) or "", i, item) for i, item in enumerate(items)]
    ordered = [item for *_, item in sorted(keyed, key=lambda k: (k[0], k[1], k[2]))]
    return ordered, any(a is not b for a, b in zip(ordered, items, strict=True))


def rewrite_description(obj: dict[str, Any], mover: Mover, where: str) -> dict[str, Any]:
    """A copy of a schema-like object with volatile spans moved out of every `description`."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key == "description" and isinstance(value, str):
            out[key] = mover.text(value, f"{where}.description")
        elif isinstance(value, dict):
            out[key] = rewrite_description(value, mover, f"{where}.{key}")
        elif isinstance(value, list):
            out[key] = [rewrite_description(v, mover, f"{where}.{key}.{i}") if isinstance(v, dict) else v
                        for i, v in enumerate(value)]
        else:
            out[key] = value
    return out


# ---- hashing -------------------------------------------------------------------------------------


def stable_hash(*parts: Any) -> str:
    """Hex digest of the canonical JSON of `parts`: identical parts give identical hashes in every
    process (no Python `hash()`, which is salted per process)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(orjson.dumps(part, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))
        h.update(b"\x1e")
    return h.hexdigest()


def contains_placeholder(value: Any) -> bool:
    """True when `value` already contains our placeholder syntax (then rewriting would make it
    ambiguous, and the stage leaves the request as it is)."""
    return PLACEHOLDER_PREFIX.encode() in orjson.dumps(value)
