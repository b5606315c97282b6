"""Mistral: OpenAI-compatible Chat Completions at `https://api.mistral.ai/v1`, with a prefix cache of its own.

Its usage object (`UsageInfo`) has `prompt_tokens`, `completion_tokens`, `total_tokens` and
`prompt_audio_seconds` (seconds of audio input, not tokens), plus `prompt_tokens_details.cached_tokens` on
a cache hit. The cached tokens are part of `prompt_tokens`; there is no write count (cached prefixes are
built at no premium and read at a tenth of the input price), and reasoning tokens are not reported apart
from `completion_tokens`. Sources in docs/emulators.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.accounting.normalize import NormalizedUsage, build, count, section
from gateway.vendors.spec import LintHints, UsageDialect, VendorSpec, static_key


def read_usage(u: Mapping[str, Any]) -> NormalizedUsage:
    prompt = count(u.get("prompt_tokens"))
    cached = count(section(u.get("prompt_tokens_details")).get("cached_tokens"))
    output = count(u.get("completion_tokens"))
    return build(prompt, cached, 0, 0, output, 0, count(u.get("total_tokens")) or None)


USAGE = UsageDialect("mistral", read_usage)

SPEC = VendorSpec(
    name="mistral",
    title="Mistral",
    family="openai",
    speaks=("openai_chat",),
    native_paths={"openai_chat": "/chat/completions"},
    models=("mistral-*", "magistral-*", "ministral-*", "codestral-*", "devstral-*", "pixtral-*", "voxtral-*",
            "open-mistral-*", "open-mixtral-*"),
    key_env="MISTRAL_API_KEY",
    base_url_env="GATEWAY_MISTRAL_BASE_URL",
    default_base_url="https://api.mistral.ai/v1",
    signer=static_key("authorization", "Bearer"),
    usage=USAGE,
    price_prefix="mistral/",  # litellm's cost map lists its models as `mistral/<name>`
    lint=LintHints(default_model="mistral-small-latest"),
)
