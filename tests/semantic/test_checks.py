"""The stage's off-loop checks: loaded at start, careful while a part is missing."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.semantic import paraphrase, structure
from gateway.semantic.checks import OffLoopChecks
from gateway.semantic.guard import GuardParams

LANG_Q = "How do I change the language of the mobile app?"
LANG_R = "The mobile app is in the wrong language, how can I change it?"


async def test_loaded_checks_answer_from_the_parse_and_the_model() -> None:
    spawned: list[Any] = []
    checks = OffLoopChecks(GuardParams(), spawned.append)
    await checks.load_all()
    assert structure.ready("en") and structure.ready("zh") and paraphrase.ready()
    assert await checks.confident(LANG_Q, LANG_R, "en", 0.9)
    assert await checks.agree(LANG_Q, LANG_R, "en") is True
    assert not await checks.roles_agree("Can I add my daughter to my phone plan?",
                                        "Can my daughter add me to her phone plan?")
    assert not await OffLoopChecks(GuardParams(reworded_bar_en=2.0), spawned.append).confident(
        LANG_Q, LANG_R, "en", 0.9)  # above 1: evidence only
    assert not spawned


async def test_a_part_still_loading_gives_the_careful_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(structure, "_loaded", set())  # as if the start had not loaded the parsers
    spawned: list[Any] = []
    checks = OffLoopChecks(GuardParams(), spawned.append)
    assert await checks.confident(LANG_Q, LANG_R, "en", 0.9) is False  # no confident hit meanwhile
    assert await checks.agree(LANG_Q, LANG_R, "en") is None
    assert await checks.roles_agree("Can I add my daughter to my phone plan?",
                                    "Can my daughter add me to her phone plan?") is True  # same-content as before
    for task in spawned:
        await task  # the loads it started in worker threads
    assert spawned and structure.ready("en")
