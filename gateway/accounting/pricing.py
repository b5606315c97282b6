"""Per-token prices and the cost formulas.

Prices come from litellm's bundled cost map (what `litellm.model_cost` holds offline, with
`LITELLM_LOCAL_MODEL_COST_MAP=True`), read from its file without importing litellm (see catalog.py),
overridden field by field from the config file (`prices:` at the top level, keyed by model name or
fnmatch pattern, and `upstreams[].prices`). `load_cost_map()` reads it once per process, off the
event loop, when the usage stage starts; lookups are cached per (provider, model).

Model names resolve robustly: exact; provider-prefixed the way litellm keys them (`gemini/…` is
the Gemini API's price, the bare name is Vertex's; `deepseek/…`); `models/` and dated suffixes
stripped (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`, `gemini-2.0-flash-001`).
Self-hosted vLLM models cost 0 unless the config prices them (a GPU-hour is not a per-token
price); any other model the map does not know also costs 0, and its records say
`price_source: "unknown"`.

Formulas (rates per token; `NormalizedUsage` never double counts, see normalize.py):
    cost = uncached·input + read·cache_read + write_short·cache_write + write_long·cache_write_long
           + output·output
    cost_without_cache = input_tokens·input + output·output
A missing cache-read price means no known discount (read at the input price); a missing write
price means writes cost the input price (OpenAI before GPT-5.6, DeepSeek, Gemini implicit) —
except on OpenAI's GPT-5.6 and later families, whose writes OpenAI bills at 1.25× the uncached
input rate (its prompt-caching guide): there a missing write price is 1.25× the input price.
Long-context tiers (litellm's `…_above_200k_tokens`, `…_above_272k_tokens`) price the whole
request at the tier rates once the prompt passes the threshold, as the vendors do.
Gemini explicit caches also bill storage per token-hour (Google's context-caching page); litellm's
map has no such field, so the list prices below are the default — third-party quotes of Google's
pricing page, not read on Google's own page: override them in the config (`storage_per_token_hour`).
Not modelled: batch/flex/priority service tiers and audio/image token rates (priced as text).
"""

from __future__ import annotations

import fnmatch
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gateway.accounting.catalog import read_cost_map
from gateway.accounting.normalize import NormalizedUsage

log = logging.getLogger("gateway.accounting.pricing")

# USD per token per hour of Gemini explicit-cache storage, by model family (no litellm field).
_GEMINI_STORAGE = (
    ("gemini-2.5-flash-lite*", 1.0e-6),
    ("gemini-2.5-flash*", 1.0e-6),
    ("gemini-2.5-pro*", 4.5e-6),
)

OPENAI_WRITE_RATIO = 1.25  # GPT-5.6+: "cache writes cost 1.25× the uncached input token rate"
_GPT = re.compile(r"^(?:openai/)?gpt-(\d+)(?:\.(\d+))?")


def openai_writes_billed(model: str) -> bool:
    """GPT-5.6 and later families bill cache writes."""
    m = _GPT.match(model)
    return bool(m) and (int(m.group(1)), int(m.group(2) or 0)) >= (5, 6)


_DATED = (
    re.compile(r"-\d{4}-\d{2}-\d{2}$"),  # gpt-4o-2024-08-06
    re.compile(r"-\d{8}$"),  # claude-sonnet-4-5-20250929
    re.compile(r"@\d{8}$"),  # vertex style claude-...@20250929
    re.compile(r"-\d{3}$"),  # gemini-2.0-flash-001
    re.compile(r"-(preview|exp)-\d{2}-\d{2}$"),  # gemini-2.5-flash-preview-05-20
)
_PREFIX_FIRST = {"gemini": "gemini/", "deepseek": "deepseek/"}
_KNOWN_PREFIXES = ("openai/", "anthropic/", "gemini/", "deepseek/", "vllm/", "models/", "azure/", "vertex_ai/",
                   "bedrock/")
_TIER = re.compile(r"^input_cost_per_token_above_(\d+)k_tokens$")


@dataclass(slots=True, frozen=True)
class Prices:
    """USD per token. None: not priced separately (see the module doc for the fallbacks)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float | None = None
    cache_write: float | None = None  # Anthropic 5m, OpenAI (GPT-5.6+) default retention
    cache_write_long: float | None = None  # Anthropic 1h, OpenAI 12h
    storage_per_token_hour: float = 0.0  # Gemini explicit CachedContent
    tier_threshold: int | None = None  # prompt tokens above which `tier` applies
    tier: Prices | None = None
    source: str = "unknown"  # "litellm:<key>", "config", "litellm:<key>+config", "self-hosted", "unknown"

    def for_prompt(self, input_tokens: int) -> Prices:
        if self.tier is not None and self.tier_threshold is not None and input_tokens > self.tier_threshold:
            return self.tier
        return self

    @property
    def read_rate(self) -> float:
        return self.input if self.cache_read is None else self.cache_read

    @property
    def write_rate(self) -> float:
        return self.input if self.cache_write is None else self.cache_write

    @property
    def write_long_rate(self) -> float:
        return self.write_rate if self.cache_write_long is None else self.cache_write_long


@dataclass(slots=True, frozen=True)
class Cost:
    cost_usd: float
    cost_without_cache_usd: float
    read_saving_usd: float  # what reads saved against the input price
    write_premium_usd: float  # what writes cost over the input price (≥ 0)


def cost_breakdown(u: NormalizedUsage, prices: Prices) -> Cost:
    p = prices.for_prompt(u.input_tokens)
    read, write, write_long = p.read_rate, p.write_rate, p.write_long_rate
    short = u.cache_write_short_tokens
    paid = (u.uncached_input_tokens * p.input + u.cached_input_tokens * read + short * write
            + u.cache_write_long_tokens * write_long + u.output_tokens * p.output)
    without = u.input_tokens * p.input + u.output_tokens * p.output
    premium = short * (write - p.input) + u.cache_write_long_tokens * (write_long - p.input)
    return Cost(paid, without, u.cached_input_tokens * (p.input - read), max(0.0, premium))


def cost(u: NormalizedUsage, prices: Prices) -> float:
    """What the request cost, cache reads and writes at their own rates."""
    return cost_breakdown(u, prices).cost_usd


def cost_without_cache(u: NormalizedUsage, prices: Prices) -> float:
    """The same request priced as if nothing had been cached: every prompt token at the input
    price, no write premium."""
    return cost_breakdown(u, prices).cost_without_cache_usd


# ---- the cost map -----------------------------------------------------------------------------

_cost_map: Mapping[str, Mapping[str, Any]] | None = None
_cost_map_lock = threading.Lock()


def load_cost_map() -> Mapping[str, Mapping[str, Any]]:
    """litellm's bundled cost map, prices only (a file read, once per process; call it off the loop)."""
    global _cost_map
    if _cost_map is None:
        with _cost_map_lock:
            if _cost_map is None:
                _cost_map = read_cost_map()
    return _cost_map


def _from_entry(entry: Mapping[str, Any], suffix: str = "") -> dict[str, float | None]:
    def get(key: str) -> float | None:
        value = entry.get(key + suffix)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    write = get("cache_creation_input_token_cost")
    # litellm writes 0.0 for "no write cost" on some DeepSeek rows: that means no premium, not free.
    return {
        "input": get("input_cost_per_token"),
        "output": get("output_cost_per_token"),
        "cache_read": get("cache_read_input_token_cost"),
        "cache_write": write if write else None,
        "cache_write_long": get("cache_creation_input_token_cost_above_1hr")
        or get("cache_creation_input_token_cost_above_12hr"),
    }


def prices_from_litellm(entry: Mapping[str, Any], key: str) -> Prices:
    base = _from_entry(entry)
    prices = Prices(
        input=base["input"] or 0.0, output=base["output"] or 0.0, cache_read=base["cache_read"],
        cache_write=base["cache_write"], cache_write_long=base["cache_write_long"], source=f"litellm:{key}",
    )
    thresholds = sorted(int(m.group(1)) for k in entry if (m := _TIER.match(k)))
    if thresholds:
        t = thresholds[0]
        above = _from_entry(entry, f"_above_{t}k_tokens")
        tier = replace(prices, **{k: v for k, v in above.items() if v is not None})
        prices = replace(prices, tier_threshold=t * 1000, tier=tier)
    return prices


def _name_variants(model: str) -> list[str]:
    names = [model]
    bare = model
    for prefix in _KNOWN_PREFIXES:
        if bare.startswith(prefix):
            bare = bare[len(prefix):]
    if bare not in names:
        names.append(bare)
    stripped = bare
    changed = True
    while changed:
        changed = False
        for pattern in _DATED:
            shorter = pattern.sub("", stripped)
            if shorter != stripped and shorter:
                stripped, changed = shorter, True
                names.append(stripped)
    return list(dict.fromkeys(names))


class PriceBook:
    """Prices per (provider, model): litellm's cost map with the config's overrides."""

    def __init__(self, settings: Any = None, cost_map: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._settings = settings
        self._map = cost_map
        self._cache: dict[tuple[str, str], Prices] = {}
        self._warned: set[tuple[str, str]] = set()

    @property
    def cost_map(self) -> Mapping[str, Mapping[str, Any]]:
        if self._map is None:
            self._map = load_cost_map()
        return self._map

    def lookup(self, provider: str, model: str) -> Prices:
        key = (provider, model)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._resolve(provider, model)
        return found

    def _resolve(self, provider: str, model: str) -> Prices:
        override = self._override(provider, model)
        prices: Prices | None = None
        if provider != "vllm":
            prices = self._litellm(provider, model)
        if prices is None:
            source = "self-hosted" if provider == "vllm" else "unknown"
            prices = Prices(source=source)
            if override is None and key_not_warned(self._warned, provider, model):
                # A self-hosted (vLLM) model costs 0 by design: worth a note, not a warning.
                log.log(logging.INFO if source == "self-hosted" else logging.WARNING,
                        "no price for model %s (%s); its cost is recorded as 0 (set `prices:` in the config)",
                        model, provider, extra={"provider": provider, "model": model})
        if provider == "gemini" and not prices.storage_per_token_hour:
            bare = _name_variants(model)[-1]
            rate = next((r for pattern, r in _GEMINI_STORAGE if fnmatch.fnmatchcase(bare, pattern)), 0.0)
            prices = replace(prices, storage_per_token_hour=rate)
        if override is not None:
            fields = {k: v for k, v in override.model_dump().items() if v is not None}
            if "cache_write_1h" in fields:
                fields["cache_write_long"] = fields.pop("cache_write_1h")
            source = "config" if prices.source in ("unknown", "self-hosted") else f"{prices.source}+config"
            # An override replaces the base prices; a tier from the map would contradict it.
            prices = replace(prices, **fields, source=source, tier=None, tier_threshold=None)
        if provider in ("openai", "azure") and prices.cache_write is None and prices.input \
                and openai_writes_billed(model):
            prices = replace(prices, cache_write=prices.input * OPENAI_WRITE_RATIO)
        return prices

    def _litellm(self, provider: str, model: str) -> Prices | None:
        cost_map = self.cost_map
        first = _PREFIX_FIRST.get(provider)
        for name in _name_variants(model):
            candidates = [f"{first}{name}", name] if first and not name.startswith(first) else [name]
            for candidate in candidates:
                entry = cost_map.get(candidate)
                if entry and isinstance(entry.get("input_cost_per_token"), int | float):
                    return prices_from_litellm(entry, candidate)
        return None

    def _override(self, provider: str, model: str) -> Any:
        settings = self._settings
        if settings is None:
            return None
        tables: list[Mapping[str, Any]] = []
        for upstream in getattr(settings, "upstreams", ()):
            if upstream.name == provider:
                tables.append(upstream.prices)
        tables.append(getattr(settings, "prices", {}) or {})
        names = [model, f"{provider}/{model}"]
        for table in tables:
            for name in names:  # exact names win over patterns
                if name in table:
                    return table[name]
            for pattern, override in table.items():
                if any(fnmatch.fnmatchcase(name, pattern) for name in names):
                    return override
        return None

    def storage_cost(self, tokens: int, hours: float, model: str, provider: str = "gemini") -> float:
        """USD to keep `tokens` in an explicit provider cache for `hours` (Gemini CachedContent)."""
        return max(0, tokens) * max(0.0, hours) * self.lookup(provider, model).storage_per_token_hour


def key_not_warned(warned: set[tuple[str, str]], provider: str, model: str) -> bool:
    if (provider, model) in warned:
        return False
    warned.add((provider, model))
    return True


# The book the usage stage installs, for layers that price something outside a request's usage
# (the provider-cache layer pricing a CachedContent's storage).
_installed: PriceBook | None = None


def install(book: PriceBook) -> None:
    global _installed
    _installed = book


def default_book() -> PriceBook:
    global _installed
    if _installed is None:
        _installed = PriceBook()
    return _installed


def storage_cost(tokens: int, hours: float, model: str, provider: str = "gemini") -> float:
    """Storage cost with the installed price book (see `PriceBook.storage_cost`)."""
    return default_book().storage_cost(tokens, hours, model, provider)
