"""The structure checks and the second opinion, run off the event loop for the stage.

The English parser and the paraphrase model are loaded by `load_all` with the rest of the layer,
before it reports ready (≈ 2–3 s): loaded beside live lookups they would hold the GIL, and those
would time out into misses. Chinese's tagger (jieba's dictionary, ≈ 110 MB resident) loads on the
first Chinese pair that needs it, so a gateway whose tenants ask in English never holds it. Should a
check find its part unloaded (that first Chinese pair, or a start that failed half-way), it loads it
in a worker thread and answers the careful way meanwhile (a reworded pair waits for evidence).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from gateway.semantic import paraphrase, structure
from gateway.semantic.batch_checks import CheckBatcher
from gateway.semantic.guard import GuardParams, Verdict, decide


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
        verdict: Verdict = await self.batch.run(decide, *args, parse=args[:2] if lang == "en" else ())
        return verdict

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
        return bool(await self.batch.run(paraphrase.confident, cached, query, lang, cosine, g.reworded_bar_en,
                                         g.reworded_bar_zh, g.reworded_any_verb_en,
                                         vectors=(cached, query) if lang == "en" else ()))

    def _preload(self, lang: str) -> None:
        if lang in self._loading:
            return
        self._loading.add(lang)
        loop = asyncio.get_running_loop()
        self._spawn(loop.run_in_executor(None, structure.load, lang))
        if lang == "en":
            self._spawn(loop.run_in_executor(None, paraphrase.load))
