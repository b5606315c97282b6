"""The usage record of one finished request (the contract's fields, plus the vendor's raw usage).

A record is built for every request that entered the pipeline, hit or miss, success or error:

- a live answer (`ctx.answered_by == "upstream"`): the vendor's usage, normalized; `cost_usd` at the
  cache rates; `saved_usd` = `cost_without_cache_usd − cost_usd` (the provider cache's net saving,
  negative when a write premium or storage was not yet paid back), `saved_layer` "provider" when
  the vendor read or wrote its cache;
- a gateway hit (response cache, semantic cache, or a single-flight follower that rode another
  request's upstream call): the ORIGINAL answer's token counts, `cost_usd` 0, `saved_usd` = the
  original answer's whole cost, `saved_layer` = the layer. A stage may override the original's
  usage with `ctx.record["saved_from"] = {"usage_raw": ..., "provider": ..., "model": ...}`;
- an error or an incomplete stream: zero tokens, cost 0, with `status` and `error`.

Whatever else stages put in `ctx.record` (provider-cache decisions, rewrite template ids) is kept:
the known keys (`prompt_cache_key`, `cache_retention`, `prompt_template_id`,
`prompt_template_version`, `storage_cost_usd`) fill their own fields, the rest goes under `details`.
"""

from __future__ import annotations

import math
import os
import socket
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gateway.accounting.normalize import OPENAI_CHAT, ZERO, NormalizedUsage, expected_dialect, normalize, sniff_dialect
from gateway.accounting.pricing import Cost, PriceBook, Prices, cost_breakdown
from gateway.provider_cache.family import template_name

if TYPE_CHECKING:
    from gateway.context import RequestContext

GATEWAY_INSTANCE = f"{socket.gethostname()}:{os.getpid()}"

# answered_by (gateway/respond.py) → the layer that saved the whole cost
HIT_LAYERS = {"response-cache": "response", "semantic-cache": "semantic", "single-flight": "single-flight"}
_STATUS_LAYERS = {"response-hit": "response", "semantic-hit": "semantic"}
_LIFTED = ("prompt_cache_key", "cache_retention", "prompt_template_id", "prompt_template_version",
           "storage_cost_usd", "saved_from", "prefix", "stale")


@dataclass(slots=True)
class UsageRecord:
    request_id: str
    tenant: str
    provider: str
    model: str
    upstream: str | None
    gateway_cache: str  # the x-gateway-cache value
    prompt_template_id: str | None
    prompt_template_version: str | None
    input_tokens: int
    cached_input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_write_long_tokens: int  # written at the long TTL (Anthropic 1h, OpenAI 12h)
    output_tokens: int
    reasoning_tokens: int
    total_tokens: int
    time_to_first_token_s: float | None
    latency_s: float | None
    prompt_cache_key: str | None
    cache_retention: str | None
    cost_usd: float
    cost_without_cache_usd: float
    saved_usd: float
    saved_layer: str | None  # response | semantic | single-flight | provider | None
    storage_cost_usd: float
    created_at: str  # ISO 8601, UTC
    ts: float  # the same instant as epoch seconds (bucketing)
    status: int
    error: str | None
    stream: bool
    protocol: str  # the client's protocol
    endpoint: str
    answered_by: str
    usage_dialect: str | None
    price_source: str
    usage_raw: dict[str, Any]
    replica: str | None = None  # the vLLM replica that answered
    similarity: float | None = None
    gateway_instance: str = GATEWAY_INSTANCE
    kind: str = "request"  # "request" | "storage" (a provider-cache storage charge)
    details: dict[str, Any] = field(default_factory=dict)
    # What the prompt broke against the conversation's previous request (provider_cache/breaks.py):
    # {previous_request_id, common_tokens, break: null | {part, cause, message_index, tokens_lost,
    # cost_lost_usd}}; None for requests the explainer did not see (hits, short-circuits).
    prefix: dict[str, Any] | None = None
    # An expired response-cache answer served because the vendor failed (gateway/cache/stale.py):
    # {reason: "stale-if-error", age_s, upstream_status}; None for every other answer.
    stale: dict[str, Any] | None = None

    @property
    def is_hit(self) -> bool:
        return self.saved_layer in ("response", "semantic", "single-flight")


_KNOWN_MAX = 1024  # replayed usage objects whose counts and prices are remembered
_second: tuple[int, str] = (-1, "")  # the last whole second formatted: records come many per second


def iso(ts: float) -> str:
    """`ts` as ISO 8601 UTC with milliseconds (`2026-12-02T08:05:01.123Z`), as datetime.isoformat writes
    it: the fraction rounded to microseconds first, then cut to milliseconds."""
    global _second
    whole = math.floor(ts)
    micro = round((ts - whole) * 1e6)
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    if _second[0] != whole:
        _second = (whole, datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{_second[1]}.{micro // 1000:03d}Z"


class RecordBuilder:
    """Builds records with one price book and the settings that name usage dialects."""

    def __init__(self, prices: PriceBook, settings: Any = None) -> None:
        self.prices = prices
        self.settings = settings
        # (usage object's id, how it is read and priced) -> (the object, dialect, usage, prices, cost);
        # the object itself is kept, so its id cannot be reused while the entry lives
        self._known: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    @staticmethod
    def _usage(usage_raw: dict[str, Any], expected: str, own_dialect: bool) -> tuple[str | None, NormalizedUsage]:
        if not usage_raw:
            return None, ZERO
        # The field names are unambiguous: trust them over the expected protocol (a cached
        # answer may come from a request that went elsewhere).
        dialect = sniff_dialect(usage_raw) or expected
        if dialect == OPENAI_CHAT and own_dialect:
            dialect = expected  # a vendor's own dialect extends Chat's field names (DeepSeek's hit/miss)
        return dialect, normalize(dialect, usage_raw)

    def _price(self, provider: str, *models: str) -> Prices:
        found: Prices | None = None
        for model in models:
            if model:
                found = self.prices.lookup(provider, model)
                if found.source != "unknown":
                    return found
        return found or Prices()

    def build(self, ctx: RequestContext) -> tuple[UsageRecord, Cost]:
        extra = ctx.record
        answer = ctx.answer
        layer = HIT_LAYERS.get(ctx.answered_by) or _STATUS_LAYERS.get(ctx.cache_status)
        saved_from = found if isinstance(found := extra.get("saved_from"), dict) else None
        usage_raw: dict[str, Any] = {}
        provider, model, served = ctx.provider, ctx.model, ""
        if saved_from is not None and layer is not None:
            usage_raw = saved_from.get("usage_raw") or {}
            provider = saved_from.get("provider") or provider
            served = saved_from.get("model") or ""
        elif answer is not None:
            usage_raw = answer.usage_raw or {}
            if layer is not None:  # a cached answer: priced as its original provider served it
                provider = answer.provider or provider
            served = answer.model
        if not isinstance(usage_raw, dict):
            usage_raw = {}

        expected = expected_dialect(ctx)
        prefix = ctx.vendor.price_prefix if ctx.vendor is not None else None
        own_dialect = ctx.vendor is not None and ctx.vendor.usage is not None
        # A replayed answer's usage object is the same dict on every hit of a popular entry (the
        # response cache's decoded-entry memo): its counts and prices are known after the first hit.
        known_key = (id(usage_raw), expected, own_dialect, provider, prefix, served, model) \
            if layer is not None and usage_raw else None
        known = self._known.get(known_key) if known_key is not None else None
        if known is not None and known[0] is usage_raw:
            _, dialect, usage, prices, money = known
        else:
            dialect, usage = self._usage(usage_raw, expected, own_dialect)
            prices = self._price(provider, *((f"{prefix}{served or model}",) if prefix else ()), served, model)
            money = cost_breakdown(usage, prices)
            if known_key is not None:
                if len(self._known) >= _KNOWN_MAX:  # FIFO: popular entries come straight back
                    del self._known[next(iter(self._known))]
                self._known[known_key] = (usage_raw, dialect, usage, prices, money)
        storage = _float(extra.get("storage_cost_usd"))

        hit = layer is not None
        if hit:
            paid, without, saved, storage = 0.0, money.cost_without_cache_usd, money.cost_usd, 0.0
            money = Cost(0.0, without, 0.0, 0.0)
        else:
            paid = money.cost_usd + storage
            without = money.cost_without_cache_usd
            saved = without - paid
            if usage.cached_input_tokens or usage.cache_creation_input_tokens or storage:
                layer = "provider"

        body = ctx.body
        ts = ctx.created_at
        rec = UsageRecord(
            request_id=ctx.request_id,
            tenant=ctx.tenant,
            provider=provider,
            model=model or served,
            upstream=ctx.replica or ctx.upstream_base_url or None,
            gateway_cache=ctx.cache_status,
            # Without x-gateway-template: the prompt's family (hits and misses of one prompt alike)
            prompt_template_id=ctx.template_id or template_name(ctx) or _str(extra.get("prompt_template_id")),
            prompt_template_version=ctx.template_version or _str(extra.get("prompt_template_version")),
            input_tokens=usage.input_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cached_input_tokens,
            cache_write_long_tokens=usage.cache_write_long_tokens,
            output_tokens=usage.output_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            total_tokens=usage.total_tokens,
            time_to_first_token_s=ctx.ttft_s,
            latency_s=ctx.latency_s if ctx.latency_s is not None else ctx.elapsed(),
            prompt_cache_key=_str(extra.get("prompt_cache_key")) or _str(body.get("prompt_cache_key")),
            cache_retention=_str(extra.get("cache_retention")) or _str(body.get("prompt_cache_retention")),
            cost_usd=paid,
            cost_without_cache_usd=without,
            saved_usd=saved,
            saved_layer=layer,
            storage_cost_usd=storage,
            created_at=iso(ts),
            ts=ts,
            status=ctx.status,
            error=ctx.error,
            stream=ctx.stream,
            protocol=ctx.adapter.name,
            endpoint=ctx.endpoint,
            answered_by=ctx.answered_by,
            usage_dialect=dialect,
            price_source=prices.source,
            usage_raw=usage_raw,
            replica=ctx.replica,
            similarity=ctx.similarity,
            details={k: v for k, v in extra.items() if k not in _LIFTED} if extra else {},
            prefix=extra.get("prefix") if isinstance(extra.get("prefix"), dict) else None,
            stale=extra.get("stale") if isinstance(extra.get("stale"), dict) else None,
        )
        if served and served != rec.model:
            rec.details["served_model"] = served
        return rec, money


def storage_record(tenant: str, provider: str, model: str, cost_usd: float, *, tokens: int, hours: float,
                   cache_name: str | None = None, request_id: str = "", ts: float | None = None) -> UsageRecord:
    """A provider-cache storage charge (Gemini CachedContent created or extended) outside a request.

    Counts in cost (and as a negative provider saving), not as a request."""
    ts = time.time() if ts is None else ts
    return UsageRecord(
        request_id=request_id, tenant=tenant, provider=provider, model=model, upstream=None, gateway_cache="",
        prompt_template_id=None, prompt_template_version=None, input_tokens=0, cached_input_tokens=0,
        cache_creation_input_tokens=0, cache_read_input_tokens=0, cache_write_long_tokens=0, output_tokens=0,
        reasoning_tokens=0, total_tokens=0, time_to_first_token_s=None, latency_s=None, prompt_cache_key=None,
        cache_retention=None, cost_usd=cost_usd, cost_without_cache_usd=0.0, saved_usd=-cost_usd,
        saved_layer="provider", storage_cost_usd=cost_usd, created_at=iso(ts), ts=ts, status=200, error=None,
        stream=False, protocol="", endpoint="", answered_by="", usage_dialect=None, price_source="",
        usage_raw={}, kind="storage", details={"cache_name": cache_name, "tokens": tokens, "hours": hours},
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
