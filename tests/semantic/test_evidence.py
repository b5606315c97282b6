"""The evidence bound: Clopper-Pearson by hand, the served error rate under the tenant's bound, and
an entry shown wrong blocking its look-alikes."""

from __future__ import annotations

import random

import pytest

from gateway.semantic.evidence import EvidenceBook, lower_bound, upper_bound
from gateway.semantic.guard import REWORDED


def test_clopper_pearson_limits_by_hand() -> None:
    assert upper_bound(0, 10, 0.95) == pytest.approx(1 - 0.05 ** 0.1)  # 0.2589
    assert upper_bound(1, 20, 0.95) == pytest.approx(0.2161, abs=1e-3)  # tables: 0.2161
    assert upper_bound(5, 100, 0.95) == pytest.approx(0.1023, abs=1e-3)
    assert lower_bound(95, 100, 0.95) == pytest.approx(1 - 0.1023, abs=1e-3)
    assert upper_bound(0, 0, 0.95) == 1.0 and upper_bound(3, 3, 0.95) == 1.0


def test_no_evidence_no_hit() -> None:
    book = EvidenceBook()
    a = book.assess("t", "en", REWORDED, "e1", 0.9, 0.01)
    assert (a.serve, a.reason) == (False, "no_evidence")


def _stream(book: EvidenceBook, rng: random.Random, wrong_at: callable, n: int = 1000,  # type: ignore[valid-type]
            verify_share: float = 0.05) -> tuple[int, int, int]:
    """n would-be hits on many entries; each goes upstream (and teaches the book) unless the bound
    allows it, and a share of the allowed ones is verified anyway. Returns (served, served wrong, n)."""
    served = wrong_served = 0
    for i in range(n):
        sim = rng.uniform(0.60, 1.0)
        wrong = wrong_at(sim, rng)
        entry = f"e{i % 200}"
        allowed = book.assess("t", "en", REWORDED, entry, sim, 0.01).serve
        if allowed and rng.random() >= verify_share:
            served += 1
            wrong_served += wrong
            continue
        book.record("t", "en", REWORDED, entry, sim, not wrong)  # the fresh answer said so
    return served, wrong_served, n


def test_1000_would_be_hits_with_5_percent_wrong_stay_under_the_bound() -> None:
    """Wrong hits among the less similar ones (5 % of all): the lane opens above them and the
    served error rate stays under max_error_rate 0.01."""
    rng = random.Random(11)

    def wrong_at(sim: float, r: random.Random) -> bool:
        return sim < 0.72 and r.random() < 0.167  # ≈ 5 % of all would-be hits

    served, wrong, _ = _stream(EvidenceBook(), rng, wrong_at)
    # 0.01 at 95 % confidence needs ≈ 460 right observations in a window first: few are served in
    # the first 1,000, and none wrong
    assert served >= 10 and wrong / served < 0.01
    served, wrong, _ = _stream(EvidenceBook(), random.Random(12), wrong_at, n=4000)
    assert served > 1000 and wrong / served < 0.01  # the lane opens as evidence grows


def test_wrong_hits_spread_evenly_keep_the_lane_closed() -> None:
    """5 % wrong whatever the similarity: no window ever bounds the error under 0.01, nothing is served."""
    rng = random.Random(5)
    served, wrong, _ = _stream(EvidenceBook(), rng, lambda s, r: r.random() < 0.05)
    assert wrong == 0 and served <= 5


def test_an_entry_shown_wrong_blocks_look_alikes_of_the_same_kind() -> None:
    book = EvidenceBook()
    for i in range(2000):  # a neighbourhood with plenty of right hits at 0.80-0.99
        book.record("t", "en", REWORDED, f"other{i % 50}", 0.80 + 0.19 * (i / 2000), True)
    assert book.assess("t", "en", REWORDED, "e1", 0.90, 0.01).serve
    book.record("t", "en", REWORDED, "e1", 0.90, False)  # verification or feedback: wrong at 0.90
    assert book.assess("t", "en", REWORDED, "e1", 0.89, 0.01).reason == "entry_shown_wrong"
    assert book.assess("t", "en", REWORDED, "e1", 0.905, 0.01).reason == "entry_shown_wrong"
    assert book.assess("t", "en", REWORDED, "e1", 0.95, 0.01).serve  # much closer questions still may
    assert book.assess("t2", "en", REWORDED, "e9", 0.95, 0.01).reason == "no_evidence"  # tenants apart
