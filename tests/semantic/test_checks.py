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
    checks = OffLoopChecks(GuardParams(reworded_bar_en=0.80), spawned.append)  # the lane opted in
    await checks.load_all()
    assert structure.ready("en") and paraphrase.ready()
    assert await checks.confident(LANG_Q, LANG_R, "en", 0.9)
    assert await checks.agree(LANG_Q, LANG_R, "en") is True
    assert not await checks.roles_agree("Can I add my daughter to my phone plan?",
                                        "Can my daughter add me to her phone plan?")
    assert not await OffLoopChecks(GuardParams(), spawned.append).confident(
        LANG_Q, LANG_R, "en", 0.9)  # the default bar is above 1: evidence only
    assert not spawned


async def test_a_part_still_loading_gives_the_careful_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    spawned: list[Any] = []
    checks = OffLoopChecks(GuardParams(), spawned.append)
    daughter = ("Can I add my daughter to my phone plan?", "Can my daughter add me to her phone plan?")
    for call, careful in ((checks.confident(LANG_Q, LANG_R, "en", 0.9), False),  # no confident hit meanwhile
                          (checks.agree(LANG_Q, LANG_R, "en"), None),  # the evidence path waits
                          (checks.roles_agree(*daughter), True)):  # the same-content lane as before
        monkeypatch.setattr(structure, "_loaded", set())  # as if the start had not loaded the parsers
        assert await call is careful
    for task in spawned:
        await task  # the one load it started in a worker thread
    assert len(spawned) == 2  # the parser and the model, loaded once however often asked


async def test_the_chinese_tagger_loads_on_the_first_chinese_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(structure, "_loaded", set())
    spawned: list[Any] = []
    checks = OffLoopChecks(GuardParams(), spawned.append)
    await checks.load_all()
    assert structure.ready("en") and not structure.ready("zh")  # nothing Chinese asked yet
    pair = ("怎么修改登录密码？", "登录密码怎么修改？")
    assert await checks.agree(*pair, "zh") is None  # the careful answer while it loads
    for task in spawned:
        await task
    assert len(spawned) == 1 and structure.ready("zh")
    assert await checks.agree(*pair, "zh") is not None


async def test_the_decision_runs_in_the_checks_thread_with_the_same_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    # The guard's placement rule parses both questions: on the event loop that parse would stall
    # every other request, so the stage asks for the decision through the checks' worker thread.
    import threading

    from gateway.semantic import guard

    threads: list[str] = []
    real = guard.decide

    def recording(*args: Any) -> guard.Verdict:
        threads.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr("gateway.semantic.checks.decide", recording)
    checks = OffLoopChecks(GuardParams(), [].append)
    await checks.load_all()
    moved = ("Can I get my shirts washed but not ironed?", "Can I get my shirts ironed but not washed?")
    verdict = await checks.decide(*moved, 1.0, 0.5)
    assert verdict == real(*moved, 1.0, 0.5)
    assert not verdict.hit
    assert threads and threads[0].startswith("semantic-checks")
    await checks.batch.close()
