"""Stored entries: compressed, versioned, bound to their tenant and key, never holding a key."""

from __future__ import annotations

import pytest
import zstandard

from gateway.answer import Answer, ToolCall
from gateway.cache import entry


def _answer() -> Answer:
    return Answer(
        text="Paris is the capital of France. " * 20,
        model="gpt-4o-mini-2024-07-18",
        finish_reason="tool_calls",
        tool_calls=[ToolCall("call_1", "lookup", '{"city": "Paris"}')],
        provider="openai",
        usage_raw={"prompt_tokens": 12, "completion_tokens": 200, "prompt_tokens_details": {"cached_tokens": 0}},
        extra={"openai_chat": {"system_fingerprint": "fp_1"}},
    )


def test_round_trip_is_exact() -> None:
    answer = _answer()
    blob = entry.encode(answer, "acme", "ab" * 32)
    assert entry.decode(blob, "acme", "ab" * 32) == answer


def test_compressed_with_version_byte() -> None:
    answer = _answer()
    blob = entry.encode(answer, "acme", "ab" * 32)
    assert blob[:1] == entry.VERSION
    assert len(blob) < len(answer.text) / 2  # repetitive text compresses
    assert zstandard.ZstdDecompressor().decompress(blob[1:]).startswith(b"{")


def test_small_entries_are_stored_uncompressed_and_both_kinds_read() -> None:
    small = Answer(text="Paris.", model="gpt-4o-mini", finish_reason="stop", provider="openai", usage_raw={})
    blob = entry.encode(small, "acme", "ab" * 32)
    assert blob[:1] == entry.VERSION_PLAIN and blob[1:].startswith(b"{")
    assert entry.decode(blob, "acme", "ab" * 32) == small
    # an entry written compressed (by an earlier version, or large) still reads
    framed = entry.VERSION + zstandard.ZstdCompressor().compress(blob[1:])
    assert entry.decode(framed, "acme", "ab" * 32) == small
    with pytest.raises(entry.BadEntry):
        entry.decode(blob, "globex", "ab" * 32)


def test_entry_of_another_tenant_or_key_is_refused() -> None:
    blob = entry.encode(_answer(), "acme", "ab" * 32)
    with pytest.raises(entry.BadEntry):
        entry.decode(blob, "globex", "ab" * 32)
    with pytest.raises(entry.BadEntry):
        entry.decode(blob, "acme", "cd" * 32)


@pytest.mark.parametrize("blob", [b"", b"\x02whatever", b"\x01not zstd", entry.VERSION + zstandard.compress(b"[1]"),
                                  b"\x02[1]", b"\x03{}"])
def test_unreadable_entries_raise_bad_entry(blob: bytes) -> None:
    with pytest.raises(entry.BadEntry):
        entry.decode(blob, "acme", "ab" * 32)


def test_entry_holds_the_answer_only() -> None:
    doc = entry.decode_doc(entry.encode(_answer(), "acme", "ab" * 32))
    assert set(doc) == {"t", "k", "at", "a"}
    assert set(doc["a"]) == {"text", "model", "finish_reason", "tool_calls", "provider", "usage_raw", "extra"}


def test_a_repeated_read_is_remembered_and_still_checked() -> None:
    blob = entry.encode(_answer(), "acme", "ef" * 32, ttl=30.0)
    first, at, ttl = entry.decode_entry(blob, "acme", "ef" * 32)
    again, at2, ttl2 = entry.decode_entry(bytes(blob), "acme", "ef" * 32)
    assert again is first and (at2, ttl2) == (at, ttl) == (at, 30.0)
    # The memo answers only for the tenant and key stored in the entry.
    with pytest.raises(entry.BadEntry):
        entry.decode_entry(blob, "globex", "ef" * 32)
    with pytest.raises(entry.BadEntry):
        entry.decode_entry(blob, "acme", "00" * 32)


def test_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entry, "_memo", {})
    monkeypatch.setattr(entry, "_memo_bytes", 0)
    monkeypatch.setattr(entry, "MEMO_ENTRIES", 4)
    for i in range(20):
        blob = entry.encode(Answer(text=f"answer {i}", model="m"), "acme", "ab" * 32)
        assert entry.decode(blob, "acme", "ab" * 32).text == f"answer {i}"
    assert len(entry._memo) == 4
    assert entry._memo_bytes == sum(len(b) for b in entry._memo)
