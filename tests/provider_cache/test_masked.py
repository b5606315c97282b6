"""The masked hash of a piece is remembered by the piece's own hash: the same bytes never pay for
the volatile-value detector twice, and different bytes never share a value."""

from __future__ import annotations

import pytest
import xxhash

from gateway.provider_cache import breaks
from gateway.provider_cache.family import mask
from gateway.rewrite.detect import VolatileDetector


def test_masked_crc_is_computed_once_per_piece_and_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    detector, other = VolatileDetector(), VolatileDetector(["acme-[0-9]+"])
    scans: list[str] = []
    real = VolatileDetector.spans

    def counting(self: VolatileDetector, text: str) -> list:  # type: ignore[type-arg]
        scans.append(text)
        return real(self, text)

    monkeypatch.setattr(VolatileDetector, "spans", counting)
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
