"""The masked hash of a piece is remembered by the piece's own hash: the same bytes never pay for
the volatile-value detector twice, and different bytes never share a value."""

from __future__ import annotations

import pytest
import xxhash

from gateway.provider_cache import breaks, family
from gateway.provider_cache.family import mask
from gateway.rewrite.detect import VolatileDetector


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the volatile-value detector scans from here on."""
    seen: list[str] = []
    real = VolatileDetector.spans

    def counting(self: VolatileDetector, text: str) -> list:  # type: ignore[type-arg]
        seen.append(text)
        return real(self, text)

    monkeypatch.setattr(VolatileDetector, "spans", counting)
    return seen


def test_masked_crc_is_computed_once_per_piece_and_detector(monkeypatch: pytest.MonkeyPatch,
                                                            scans: list[str]) -> None:
    detector, other = VolatileDetector(), VolatileDetector(["acme-[0-9]+"])
    monkeypatch.setattr(breaks, "_masked", {})
    piece = b'{"role":"user","content":"Today is 2026-12-02, ticket acme-42: why?"}'
    want = xxhash.xxh3_64_intdigest(mask(piece.decode(), detector).encode())
    scans.clear()
    assert breaks.masked_crc(piece, detector) == want
    assert breaks.masked_crc(piece, detector) == want and len(scans) == 1
    # another detector (tenant patterns) masks differently: its own entry
    assert breaks.masked_crc(piece, other) != want and len(scans) == 2
    # a date that changed masks to the same hash, but is its own piece
    assert breaks.masked_crc(piece.replace(b"2026-12-02", b"2026-12-03"), detector) == want and len(scans) == 3


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(breaks, "_masked", {})
    monkeypatch.setattr(breaks, "_MASKED_MAX", 4)
    detector = VolatileDetector()
    for i in range(10):
        breaks.masked_crc(f"piece {i}".encode(), detector)
    assert len(breaks._masked) == 4


def _family_unmemoized(protocol: str, body: dict, detector: VolatileDetector) -> str:  # type: ignore[type-arg]
    import hashlib

    digest = hashlib.blake2b(digest_size=8)
    for p in family.template_parts(protocol, body):
        digest.update(mask(p, detector).encode("utf-8", "surrogatepass"))
        digest.update(b"\x1e")
    return digest.hexdigest()


def test_a_family_is_masked_once_per_template_and_detector(monkeypatch: pytest.MonkeyPatch,
                                                           scans: list[str]) -> None:
    detector, other = VolatileDetector(), VolatileDetector(["acme-[0-9]+"])
    monkeypatch.setattr(family, "_families", {})
    rules = " ".join(f"Rule {i}: reply within {i} days." for i in range(300))
    system = "Now: 2026-12-02T10:00:00Z. Ticket acme-42. " + rules

    def body(system: str, user: str = "why?", tools: list | None = None) -> dict:  # type: ignore[type-arg]
        turns = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        out = {"model": "gpt-4o", "messages": turns}
        return {**out, "tools": tools} if tools else out

    want = _family_unmemoized("openai_chat", body(system), detector)
    want_other = _family_unmemoized("openai_chat", body(system), other)
    scans.clear()
    assert family.family_id("openai_chat", body(system), detector) == want and len(scans) == 1
    # the same template with another question: the same family, nothing masked again
    assert family.family_id("openai_chat", body(system, "and how?"), detector) == want and len(scans) == 1
    # another detector (tenant patterns) masks differently: its own entry, its own value
    assert family.family_id("openai_chat", body(system), other) == want_other != want and len(scans) == 2
    # a changed timestamp is a new text to mask, but the same family
    later = system.replace("2026-12-02T10:00:00Z", "2026-12-03T11:30:00Z")
    assert family.family_id("openai_chat", body(later), detector) == want and len(scans) == 3
    # where one part ends and the next begins is part of the key: the same characters split
    # differently between the tools and the instructions are another template
    tools = [{"type": "function", "function": {"name": "a", "description": "d"}}]
    split = family.family_id("openai_chat", body(system, tools=tools), detector)
    assert split == _family_unmemoized("openai_chat", body(system, tools=tools), detector) != want


def test_the_family_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(family, "_families", {})
    monkeypatch.setattr(family, "_FAMILIES_MAX", 4)
    detector = VolatileDetector()
    for i in range(10):
        family.family_id("openai_chat", {"messages": [{"role": "system", "content": f"template {i}"}]}, detector)
    assert len(family._families) == 4
