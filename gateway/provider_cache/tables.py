"""Per-model minimum cacheable lengths and the prices the break-even needs.

Minimums (docs/provider-caches.md): below them a vendor silently caches nothing
(Anthropic, OpenAI) or refuses to create the cache (Gemini's 400 "Cached content is too small").
The vendors change them often, so they are plain dicts matched by longest name prefix.

Prices come from the usage layer's price book (litellm's cost map plus the config's overrides),
once it has been loaded off the event loop; until then, and for models the map does not know,
the documented list-price ratios below stand in (relative to a nominal $1 per million input tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

ANTHROPIC_MIN = {
    "claude-opus-5": 512, "claude-fable-5": 512, "claude-mythos-5": 512,
    "claude-mythos-preview": 2048, "claude-opus-4-7": 2048,
    "claude-opus-4-6": 4096, "claude-opus-4-5": 4096,
    "claude-opus-4-8": 1024, "claude-sonnet-5": 1024, "claude-sonnet-4-6": 1024, "claude-sonnet-4-5": 1024,
    "claude-opus-4-1": 1024, "claude-opus-4": 1024, "claude-sonnet-4": 1024, "claude-3-7-sonnet": 1024,
    "claude-haiku-4-5": 4096, "claude-3-5-haiku": 2048, "claude-3-haiku": 2048,
}
GEMINI_MIN = {
    "gemini-2.5-flash": 2048, "gemini-2.5-pro": 2048, "gemini-2.5-flash-lite": 2048,
    "gemini-3": 4096, "gemini-3.1-pro": 4096, "gemini-2.0": 4096, "gemini-1.5": 32768,
}
DEFAULT_MIN = {"anthropic": 1024, "gemini": 4096, "openai": 1024, "deepseek": 64, "bedrock": 1000}
# Gemini answers 400 below its minimum, so a created cache gets this margin over our count (our
# tokenizer is not Gemini's); Anthropic and OpenAI just don't cache, so no margin there.
GEMINI_MARGIN = 1.10


def _longest_prefix(table: dict[str, int], model: str) -> int | None:
    best = max((p for p in table if model.startswith(p)), key=len, default=None)
    return table[best] if best is not None else None


def min_tokens(vendor: str, model: str) -> int:
    name = model.rsplit("/", 1)[-1]  # `models/…`, and the platforms' `vertex_ai/…`
    table = {"anthropic": ANTHROPIC_MIN, "gemini": GEMINI_MIN}.get(vendor)
    found = _longest_prefix(table, name) if table else None
    return found if found is not None else DEFAULT_MIN.get(vendor, 1024)


def gemini_implicit(model: str) -> bool:
    """Gemini 2.5 and newer cache implicitly (no storage charge, no guarantee)."""
    import re

    m = re.match(r"^(?:models/)?gemini-(\d+)(?:\.(\d+))?", model)
    return m is not None and (int(m.group(1)), int(m.group(2) or 0)) >= (2, 5)


def gpt_breakpoints(model: str) -> bool:
    """GPT-5.6 and later take explicit `prompt_cache_breakpoint` markers (older models refuse them)."""
    import re

    m = re.match(r"^gpt-(\d+)(?:\.(\d+))?", model)
    return m is not None and (int(m.group(1)), int(m.group(2) or 0)) >= (5, 6)


def openai_retentions(model: str) -> tuple[str, ...]:
    """`prompt_cache_retention` values a model accepts."""
    import re

    name = re.sub(r"-\d{4}-\d{2}-\d{2}$", "", model)
    m = re.match(r"^gpt-(\d+)(?:\.(\d+))?", name)
    if m and (int(m.group(1)), int(m.group(2) or 0)) >= (5, 5):
        return ("24h",)
    extended = {"gpt-5.4", "gpt-5.2", "gpt-5.1-codex-max", "gpt-5.1", "gpt-5.1-codex", "gpt-5.1-codex-mini",
                "gpt-5.1-chat-latest", "gpt-5", "gpt-5-codex", "gpt-4.1"}
    return ("24h", "in_memory") if name in extended else ("in_memory",)


@dataclass(frozen=True, slots=True)
class CachePrices:
    """USD per token (storage: per token-hour)."""

    input: float
    read: float
    write: float  # Anthropic 5m / OpenAI GPT-5.6 write; the input price where writes cost nothing extra
    write_long: float  # Anthropic 1h
    storage_hour: float  # Gemini explicit caches
    source: str


_NOMINAL = 1e-6
_RATIOS = {  # read, write, write_long relative to input
    "anthropic": (0.1, 1.25, 2.0),
    "gemini": (0.1, 1.0, 1.0),
    "openai": (0.5, 1.0, 1.0),
    "deepseek": (0.1, 1.0, 1.0),
}


def fallback_prices(vendor: str, model: str) -> CachePrices:
    read, write, write_long = _RATIOS.get(vendor, (0.5, 1.0, 1.0))
    if vendor == "openai" and gpt_breakpoints(model):
        read, write = 0.1, 1.25
    storage = 0.0
    if vendor == "gemini":  # list prices: storage $4.50 (Pro) / $1.00 (Flash) per M token-hours, input $1.25 / $0.30
        storage = (4.5 / 1.25 if "pro" in model else 1.0 / 0.30) * _NOMINAL
    return CachePrices(_NOMINAL, read * _NOMINAL, write * _NOMINAL, write_long * _NOMINAL, storage, "ratios")


def prices_for(provider: str, vendor: str, model: str, book: object | None) -> CachePrices:
    """Prices from the usage layer's `PriceBook` (`lookup(provider, model)`), else the ratios."""
    fallback = fallback_prices(vendor, model)
    if book is None:
        return fallback
    try:
        p = book.lookup(provider, model)  # type: ignore[attr-defined]
    except Exception:
        return fallback
    if not getattr(p, "input", 0.0):
        return fallback
    read = p.read_rate
    write = p.write_rate
    if vendor == "anthropic" and p.cache_write is None:
        write = p.input * 1.25
    write_long = p.write_long_rate if p.cache_write_long is not None else (
        p.input * 2.0 if vendor == "anthropic" else write)
    storage = p.storage_per_token_hour or fallback.storage_hour
    return CachePrices(p.input, read, write, write_long, storage, p.source)
