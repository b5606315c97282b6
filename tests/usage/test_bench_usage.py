"""The usage benchmark runs and measures both sides (its figures are printed, not asserted)."""

from __future__ import annotations

from gateway.accounting.pricing import PriceBook
from gateway_dev.bench.usage import contexts, direct


async def test_direct_measures_on_and_off(book: PriceBook) -> None:
    result = await direct(400, book, None)
    assert result["on"]["p50"] > 0 and result["off"]["p50"] > 0
    assert result["on"]["p50"] > result["off"]["p50"]  # recording does work; off does none
    assert result["flush_per_record_us"]["memory"] > 0


def test_contexts_cover_every_protocol_hits_and_errors() -> None:
    ctxs = contexts()
    assert {c.adapter.name for c in ctxs} == {"openai_chat", "openai_responses", "anthropic_messages", "gemini"}
    assert any(c.answered_by == "response-cache" for c in ctxs) and any(c.status >= 400 for c in ctxs)
