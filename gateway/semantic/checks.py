"""The structure checks and the second opinion, run off the event loop for the stage.

The English parser (and the paraphrase model, where a deployment opts in to the English reworded
lane's second opinion: `reworded_bar_en` ≤ 1) is loaded by `load_all` with the rest of the layer,
before it reports ready (≈ 2–3 s): loaded beside live lookups they would hold the GIL, and those
would time out into misses. Chinese's tagger (jieba, its tables compact: `lean_tables`) loads in the
same load, when the guard's warm-up tags a Chinese pair. Should a check find its part unloaded (a
start that failed half-way), it loads it in a worker thread and answers the careful way meanwhile
(a reworded pair waits for evidence).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gateway.semantic import paraphrase, structure
from gateway.semantic.batch_checks import CheckBatcher
from gateway.semantic.guard import GuardParams, Verdict, decide
from gateway.semantic.lexical import analyze


class OffLoopChecks:
    def __init__(self, params: GuardParams, spawn: Callable[[Any], None], batch: CheckBatcher | None = None) -> None:
        self.params = params
        self.batch = batch or CheckBatcher()  # the checks of concurrent lookups, batched in one thread
        self._spawn = spawn
        self._loading: set[str] = set()

    async def load_all(self) -> None:
        loop = asyncio.get_running_loop()
        self._loading.add("en")
        await loop.run_in_executor(None, structure.load, "en")
        if self.params.reworded_bar_en <= 1.0:
            await loop.run_in_executor(None, paraphrase.load)

    async def decide(self, *args: Any, lang: str = "") -> Verdict:
        """`guard.decide` in the checks' worker thread: a rule may parse the questions (the same words
        in other places), and a parse (≈ 15 ms, longer while a tagger loads) must not stall the loop.
        English questions are parsed in the batch, once for this rule and the role check after it."""
        verdict, _ = await self.decide_same_content(*args, lang=lang)
        return verdict

    async def decide_same_content(self, *args: Any, lang: str = "") -> tuple[Verdict, bool | None]:
        """`decide` for a would-be same-content hit, and in the same worker call the role check that
        such an English hit meets next (`roles_agree`, from the parse the rule just read): one thread
        hop and one batch instead of two. The role answer is None when it was not made (not a hit,
        not an English pair, the parser not loaded): the caller asks `roles_agree` as before."""
        cached, query = args[0], args[1]
        parse = (cached, query) if lang == "en" else ()
        result: tuple[Verdict, bool | None] = await self.batch.run(_decide_and_roles, args, lang == "en",
                                                                   parse=parse)
        return result
    async def agree(self, cached: str, query: str, lang: str) -> bool | None:
        """Action and object agree (`structure.agree`); None while the parser loads."""
        if not structure.ready(lang):
            self._preload(lang)
            return None
        return await self.batch.run(structure.agree, cached, query, lang,
                                    parse=(cached, query) if lang == "en" else ())

    async def roles_agree(self, cached: str, query: str) -> bool:
        """The same-content lane's check that no party changed places (`I add my son` / `my son adds
        me`: the same words), from the English parse; True while the parser loads."""
        if not structure.may_swap_roles(cached, query):
            return True
        if not structure.ready("en"):
            self._preload("en")
            return True
        return await self.batch.run(structure.roles_agree, cached, query, "en", parse=(cached, query)) is not False

    async def confident(self, cached: str, query: str, lang: str, cosine: float) -> bool:
        """The reworded lane's second opinion (`paraphrase.confident`); False while a part loads."""
        g = self.params
        if (g.reworded_bar_en if lang == "en" else g.reworded_bar_zh) > 1.0:
            return False
        if not (structure.ready(lang) and (lang != "en" or paraphrase.ready())):
            self._preload(lang)
            return False
        english = lang == "en"

        def then_parse() -> tuple[str, ...]:
            # the parse the check makes only when MiniLM's score reached the bar: batched with the others'
            s = paraphrase.score(cached, query, lang, cosine)
            return (cached, query) if s is not None and s >= g.reworded_bar_en else ()

        return bool(await self.batch.run(paraphrase.confident, cached, query, lang, cosine, g.reworded_bar_en,
                                         g.reworded_bar_zh, g.reworded_any_verb_en,
                                         vectors=(cached, query) if english else (),
                                         then_parse=then_parse if english else None))

    def _preload(self, lang: str) -> None:
        if lang in self._loading:
            return
        self._loading.add(lang)
        loop = asyncio.get_running_loop()
        self._spawn(loop.run_in_executor(None, structure.load, lang))
        if lang == "en":
            self._spawn(loop.run_in_executor(None, paraphrase.load))


def _decide_and_roles(args: tuple[Any, ...], english: bool) -> tuple[Verdict, bool | None]:
    """In the worker: the verdict, then (an English same-content hit) whether no party changed places,
    exactly as `OffLoopChecks.roles_agree` answers it once the parser is loaded."""
    verdict = decide(*args)
    cached, query = args[0], args[1]
    if not (english and verdict.hit and cached != query and structure.ready("en")
            and analyze(cached).lang == "en"):
        return verdict, None
    if not structure.may_swap_roles(cached, query):
        return verdict, True
    return verdict, structure.roles_agree(cached, query, "en") is not False
