"""DeepSeek: OpenAI-compatible Chat Completions; its context cache works by prefix on its own, and its
usage counts hits and misses in fields of its own (`prompt_cache_hit_tokens` / `_miss_tokens`)."""

from __future__ import annotations

from gateway.accounting.normalize import DEEPSEEK, reader
from gateway.vendors.spec import LintHints, UsageDialect, VendorSpec, static_key

USAGE = UsageDialect(DEEPSEEK, reader(DEEPSEEK))

SPEC = VendorSpec(
    name="deepseek",
    title="DeepSeek",
    family="openai",
    speaks=("openai_chat",),
    native_paths={"openai_chat": "/chat/completions"},
    models=("deepseek-*",),
    key_env="DEEPSEEK_API_KEY",
    base_url_env="GATEWAY_DEEPSEEK_BASE_URL",
    default_base_url="https://api.deepseek.com",
    signer=static_key("authorization", "Bearer"),
    usage=USAGE,
    lint=LintHints(default_model="deepseek-chat"),
)
