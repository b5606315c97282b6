"""The prefix-break explainer stage: for every request that goes to a vendor or a vLLM replica, what
its prompt broke against the conversation's previous request (`breaks.py`), in the usage record
(`prefix`), in the `x-gateway-prefix-break` response header, and summed by cause and template in
the usage aggregates (`GET /admin/usage/breaks`).

`before()` renders the block chain of the body about to go upstream (after the rewrite; the
gateway's own context turn left out), finds the previous request (one store read, bounded by the
store timeout; none found or no answer: no comparison) and classifies the first difference. With
the policy's `provider_cache.vendor_diagnostics`, it also asks the vendor for its own verdict:
Anthropic `diagnostics.previous_message_id`, OpenAI (Responses, GPT-5.6+)
`prompt_cache_options.comparison_response_id`. `after()` adds `expired` (the prefix matched, the
vendor read nothing) and the vendor's answer, fills the record, and stores this request's chain
for the next one (in the background).
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import orjson
import xxhash

from gateway.context import RequestContext
from gateway.pipeline import Hit, Stage
from gateway.provider_cache.breaks import BreakStore, PrefixCheck, answer_usage, classify, to_previous
from gateway.provider_cache.family import sorted_tools
from gateway.provider_cache.prefix import render
from gateway.provider_cache.tables import gpt_breakpoints, min_tokens, prices_for
from gateway.rewrite.detect import VolatileDetector, detector_for
from gateway.rewrite.layout import Layout
from gateway.stores.base import KVStore

SESSION_TTL_S = 3600.0  # the routing layer's default session TTL
_SYSTEM_ROLES = frozenset({"system", "developer"})


def tools_set(body: dict[str, Any]) -> int | None:
    """A checksum of the tools in name order: equal for the same tools sent in another order."""
    tools = body.get("tools")
    return xxhash.xxh3_64_intdigest(orjson.dumps(sorted_tools(tools), option=orjson.OPT_SORT_KEYS)) if tools else None


def _turn_offset(ctx: RequestContext) -> int:
    """Client message index − upstream turn index: a translation to Anthropic or Gemini moves the
    client's leading system messages out of the turns."""
    if not ctx.translated or ctx.upstream_adapter is None or ctx.upstream_adapter.name not in (
            "anthropic_messages", "gemini"):
        return 0
    turns = ctx.body.get("messages") if ctx.adapter.name == "openai_chat" else ctx.body.get("input")
    n = 0
    for t in turns if isinstance(turns, list) else []:
        if not isinstance(t, dict) or t.get("role") not in _SYSTEM_ROLES:
            break
        n += 1
    return n


def _asks_vendor(ctx: RequestContext, protocol: str) -> bool:
    """True when `_ask_vendor` may add the previous request's id to the upstream body (it must be known first)."""
    return (protocol == "anthropic_messages" and ctx.provider == "anthropic") or (
        protocol == "openai_responses" and ctx.provider == "openai")


class PrefixExplainStage(Stage):
    name = "prefix_explain"

    def __init__(self, settings: Any, store: KVStore, *, prices: Any = None) -> None:
        params = getattr(getattr(settings, "routing", None), "params", None) or {}
        ttl = float(params.get("session_ttl", SESSION_TTL_S))
        self.breaks = BreakStore(store, ttl, float(getattr(settings, "store_timeout", 0.1) or 0.1))
        self.book = prices
        self._saving: set[asyncio.Task[None]] = set()

    def _book(self) -> Any:
        if self.book is not None:
            return self.book
        from gateway.accounting import pricing

        return pricing.default_book()

    @staticmethod
    def _detector(ctx: RequestContext) -> VolatileDetector:
        patterns = tuple(ctx.policy.prompt_rewrite.volatile_patterns) if ctx.policy is not None else ()
        return detector_for(patterns)

    @staticmethod
    def _template(ctx: RequestContext) -> str | None:
        return f"{ctx.template_id}@{ctx.template_version or ''}" if ctx.template_id else None

    async def before(self, ctx: RequestContext) -> Hit | None:
        if ctx.policy is None or ctx.upstream_adapter is None or not ctx.upstream_body:
            return None
        protocol, body = ctx.upstream_adapter.name, ctx.upstream_body
        if protocol == "openai_responses" and body.get("previous_response_id"):
            return None  # the conversation lives upstream: the body holds only its newest items
        lay = ctx.rewrite
        context_turn = lay.context_index if isinstance(lay, Layout) else None
        # Rendered now: the body as it stands here is the one compared (later stages may replace it).
        blocks = render(protocol, ctx.model, body, skip_turn=context_turn)
        if ctx.policy.provider_cache.vendor_diagnostics and _asks_vendor(ctx, protocol):
            await self._check(ctx, body, blocks, context_turn)  # the upstream request carries the answer
            previous = ctx.prefix.previous if ctx.prefix is not None else None
            self._ask_vendor(ctx, protocol, previous.vendor_id if previous is not None else None)
            return None
        # Only the response's header and the record need the comparison: it runs beside the upstream call
        # (its store read and classification off the path to the send), started by beside(), awaited by
        # settle().
        ctx.scratch[self.name] = partial(self._check, ctx, body, blocks, context_turn)
        return None

    async def _check(self, ctx: RequestContext, body: dict[str, Any], blocks: Any, context_turn: int | None) -> None:
        assert ctx.upstream_adapter is not None
        previous = await self.breaks.find(ctx.tenant, ctx.session, self._template(ctx), blocks)
        minimum = min_tokens(ctx.upstream_adapter.vendor, ctx.model)
        common, brk = 0, None
        if previous is not None:
            common, brk = classify(blocks, previous, self._detector(ctx), minimum, _turn_offset(ctx), context_turn,
                                   lambda: tools_set(body))
        ctx.prefix = PrefixCheck(blocks, previous, common, brk, minimum)

    def beside(self, ctx: RequestContext) -> None:
        check = ctx.scratch.get(self.name)
        if isinstance(check, partial):  # not started, not settled yet
            ctx.scratch[self.name] = asyncio.get_running_loop().create_task(check())

    async def settle(self, ctx: RequestContext) -> None:
        task = ctx.scratch.get(self.name)
        if task is None:
            return
        if isinstance(task, partial):  # never started (an error before the upstream call): run it now
            del ctx.scratch[self.name]
            await task()
            return
        # Shielded: a client that leaves cancels the request, not the check its after() still records.
        try:
            await asyncio.shield(task)
        finally:
            if task.done():  # its outcome (or failure) is taken once
                ctx.scratch.pop(self.name, None)

    @staticmethod
    def _ask_vendor(ctx: RequestContext, protocol: str, previous_id: str | None) -> None:
        body = ctx.upstream_body
        if protocol == "anthropic_messages" and ctx.provider == "anthropic" and "diagnostics" not in body:
            # null on a first turn opts in, so the vendor keeps this request's fingerprint for the next
            ctx.upstream_body = {**body, "diagnostics": {"previous_message_id": previous_id}}
        elif protocol == "openai_responses" and ctx.provider == "openai" and gpt_breakpoints(ctx.model) \
                and previous_id and previous_id.startswith("resp_"):
            given = body.get("prompt_cache_options")
            options: dict[str, Any] = given if isinstance(given, dict) else {}
            if "comparison_response_id" not in options:
                ctx.upstream_body = {**body, "prompt_cache_options": {**options,
                                                                      "comparison_response_id": previous_id}}

    async def after(self, ctx: RequestContext) -> None:
        await self.settle(ctx)
        check = ctx.prefix
        if check is None:
            return
        answer = ctx.answer if ctx.answered_by == "upstream" else None
        protocol = ctx.upstream_adapter.name if ctx.upstream_adapter is not None else ""
        extra = (answer.extra.get(protocol) or {}) if answer is not None else {}
        vendor = extra.get("cache_diagnostics") or extra.get("prompt_cache_diagnostics")
        if isinstance(vendor, dict):
            check.vendor = {"source": ctx.provider, **vendor}
        prices = prices_for(ctx.provider, ctx.upstream_adapter.vendor if ctx.upstream_adapter else ctx.provider,
                            ctx.model, self._book())
        check.loss_rate = max(0.0, prices.input - prices.read)
        ctx.record["prefix"] = check.record(ctx)
        usage = answer_usage(ctx)
        if usage is None or usage.input_tokens <= 0:
            return  # an error or an unreadable answer: nothing the next request could compare with
        vendor_id = extra.get("vendor_message_id") or extra.get("id")
        body = ctx.upstream_body
        previous = to_previous(ctx.request_id, check.blocks, usage.input_tokens, self._detector(ctx),
                               tools_set(body), vendor_id if isinstance(vendor_id, str) else None)
        # Started, not awaited: the response cache's after() runs next in this same turn of the loop,
        # so its entry write and this save leave in one write to the store (stores/resp.py), a round
        # trip less per miss. stop() waits for the saves still running.
        task = asyncio.get_running_loop().create_task(
            self.breaks.save(ctx.tenant, ctx.session, self._template(ctx), check.blocks, previous))
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def stop(self) -> None:
        if self._saving:
            await asyncio.wait(list(self._saving), timeout=5.0)
