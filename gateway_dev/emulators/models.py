"""Per-model tables the emulators' caching rules depend on.

The vendors change these often (Anthropic's Sonnet 4.6 minimum moved 2048 -> 1024; Gemini 2.5 Pro's
4096 -> 2048), so they are plain dicts a test or a benchmark may edit, matched by longest name prefix.
"""

from __future__ import annotations

import re

# ---- OpenAI --------------------------------------------------------------------------------------
OPENAI_MODELS = [
    "gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5", "gpt-5-mini", "gpt-5-nano",
    "gpt-5-chat-latest", "gpt-5.1", "gpt-5.2", "gpt-5.4", "gpt-5.5", "gpt-5.5-pro", "gpt-5.6", "o3", "o3-mini",
    "o4-mini", "text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002",
]
# Every model id the OpenAI emulator serves besides OPENAI_MODELS (a `-YYYY-MM-DD` snapshot of any of them
# too); any other name is a 404 model_not_found, as at the API.
OPENAI_KNOWN = {
    *OPENAI_MODELS, "gpt-4", "gpt-4-turbo", "gpt-3.5-turbo", "chatgpt-4o-latest", "gpt-4o-search-preview",
    "gpt-4o-mini-search-preview", "gpt-5-pro", "gpt-5-codex", "gpt-5.1-chat-latest", "gpt-5.1-codex",
    "gpt-5.1-codex-mini", "gpt-5.1-codex-max", "gpt-5.2-pro", "gpt-5.2-chat-latest", "gpt-5.2-codex",
    "gpt-5.3-codex", "gpt-5.3-chat-latest", "gpt-5.4-mini", "gpt-5.4-nano", "gpt-5.4-pro", "o1", "o1-mini",
    "o1-pro", "o3-pro",
}
# Models listed for `prompt_cache_retention: "24h"` (OpenAI prompt-caching guide).
OPENAI_EXTENDED_RETENTION = {
    "gpt-5.5", "gpt-5.5-pro", "gpt-5.4", "gpt-5.2", "gpt-5.1-codex-max", "gpt-5.1", "gpt-5.1-codex",
    "gpt-5.1-codex-mini", "gpt-5.1-chat-latest", "gpt-5", "gpt-5-codex", "gpt-4.1",
}
_DATE_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_GPT_VERSION = re.compile(r"^gpt-(\d+)(?:\.(\d+))?")
EMBEDDING_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


def is_openai_model(model: str) -> bool:
    """A model the emulator serves: a known id, its dated snapshot, or a fine-tune of one (`ft:<base>:...`)."""
    if model.startswith("ft:"):
        model = model[3:].split(":", 1)[0]
    return base_name(model) in OPENAI_KNOWN


def base_name(model: str) -> str:
    return _DATE_SUFFIX.sub("", model)


def gpt_version(model: str) -> tuple[int, int] | None:
    m = _GPT_VERSION.match(model)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else None


def openai_breakpoint_regime(model: str) -> bool:
    """GPT-5.6 and later: explicit breakpoints, `cache_write_tokens`, no 128-token rounding."""
    v = gpt_version(model)
    return v is not None and v >= (5, 6)


def openai_retentions(model: str) -> tuple[str, ...]:
    """The `prompt_cache_retention` values a model accepts; the first is its default (non-ZDR org)."""
    name = base_name(model)
    v = gpt_version(name)
    if v is not None and v >= (5, 5):  # "For gpt-5.5, gpt-5.5-pro, and future models, only 24h is supported"
        return ("24h",)
    if name in OPENAI_EXTENDED_RETENTION:
        return ("24h", "in_memory")  # orgs without ZDR default to 24h (current guide)
    return ("in_memory",)


def openai_is_reasoning(model: str) -> bool:
    """o-series and GPT-5 models (not the -chat ones): hidden reasoning, `max_completion_tokens` only,
    temperature fixed at 1."""
    name = base_name(model)
    return bool(re.match(r"^o\d", name)) or (name.startswith("gpt-5") and "chat" not in name)


def openai_reasoning_tokens(model: str, effort: str | None) -> int:
    """Hidden reasoning tokens billed as output."""
    if not openai_is_reasoning(model):
        return 0
    return {"none": 0, "minimal": 0, "low": 16, "medium": 48, "high": 128, "xhigh": 192}.get(effort or "medium", 48)


# ---- Anthropic -----------------------------------------------------------------------------------
# Minimum cacheable prompt length (newest table, id 58801560604).
ANTHROPIC_MIN_CACHEABLE = {
    "claude-opus-5": 512, "claude-fable-5": 512, "claude-mythos-5": 512,
    "claude-mythos-preview": 2048, "claude-opus-4-7": 2048,
    "claude-opus-4-6": 4096, "claude-opus-4-5": 4096,
    "claude-opus-4-8": 1024, "claude-sonnet-5": 1024, "claude-sonnet-4-6": 1024, "claude-sonnet-4-5": 1024,
    "claude-opus-4-1": 1024, "claude-opus-4": 1024, "claude-sonnet-4": 1024, "claude-3-7-sonnet": 1024,
    "claude-haiku-4-5": 4096, "claude-3-5-haiku": 2048, "claude-3-haiku": 2048,
}
ANTHROPIC_DEFAULT_MIN = 1024
ANTHROPIC_MODELS = ["claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6", "claude-sonnet-4-5",
                    "claude-haiku-4-5", "claude-opus-5", "claude-sonnet-5"]
# Every model id the emulator serves (as an alias, with a `-YYYYMMDD` snapshot date, or `-latest`);
# any other name is a 404 not_found_error, as at the API.
ANTHROPIC_KNOWN = {*ANTHROPIC_MIN_CACHEABLE, *ANTHROPIC_MODELS, "claude-3-5-sonnet", "claude-3-opus"}
_ANTHROPIC_SUFFIX = re.compile(r"-(\d{8}|latest)$")


def is_anthropic_model(model: str) -> bool:
    return _ANTHROPIC_SUFFIX.sub("", model) in ANTHROPIC_KNOWN


def longest_prefix(table: dict[str, int], model: str, default: int) -> int:
    best = ""
    for prefix in table:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return table[best] if best else default


def anthropic_min_cacheable(model: str) -> int:
    return longest_prefix(ANTHROPIC_MIN_CACHEABLE, model, ANTHROPIC_DEFAULT_MIN)


# ---- Gemini --------------------------------------------------------------------------------------
# Minimum tokens for implicit and explicit caching (latest table seen).
GEMINI_MIN_CACHE = {
    "gemini-2.5-flash": 2048, "gemini-2.5-pro": 2048, "gemini-2.5-flash-lite": 2048,
    "gemini-3": 4096, "gemini-3.1-pro": 4096, "gemini-2.0": 4096, "gemini-1.5": 32768,
}
GEMINI_DEFAULT_MIN = 4096
GEMINI_MODELS = ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite", "gemini-3-flash-preview",
                 "gemini-3.1-pro-preview", "gemini-2.0-flash"]
# Served besides GEMINI_MODELS (also as a `-NNN` stable version); any other name is a 404 NOT_FOUND.
GEMINI_KNOWN = {*GEMINI_MODELS, "gemini-3-pro-preview", "gemini-2.0-flash-lite", "gemini-flash-latest",
                "gemini-flash-lite-latest", "gemini-pro-latest", "gemini-embedding-001"}
_GEMINI_VERSION = re.compile(r"-\d{3}$")


def is_gemini_model(model: str) -> bool:
    return _GEMINI_VERSION.sub("", model.removeprefix("models/")) in GEMINI_KNOWN


def gemini_min_cache(model: str) -> int:
    return longest_prefix(GEMINI_MIN_CACHE, model, GEMINI_DEFAULT_MIN)


def gemini_implicit_caching(model: str) -> bool:
    """"Implicit caching is enabled by default for all Gemini 2.5 and newer models"."""
    m = re.match(r"^gemini-(\d+)(?:\.(\d+))?", model)
    return bool(m) and (int(m.group(1)), int(m.group(2) or 0)) >= (2, 5)


def gemini_thinking_tokens(model: str, budget: int | None) -> int:
    """2.5+ models think by default (dynamic budget); a budget of 0 turns it off where allowed."""
    if not gemini_implicit_caching(model) or budget == 0:
        return 0
    return 32 if budget is None or budget < 0 else min(budget, 32)


# ---- DeepSeek ------------------------------------------------------------------------------------
DEEPSEEK_MODELS = ["deepseek-chat", "deepseek-reasoner"]


def is_deepseek_model(model: str) -> bool:
    return model.startswith("deepseek-")


def deepseek_reasoning_tokens(model: str) -> int:
    return 48 if "reasoner" in model else 0
