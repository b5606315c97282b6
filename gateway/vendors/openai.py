"""OpenAI: Chat Completions and Responses, `prompt_cache_key` / retention / GPT-5.6+ breakpoints."""

from __future__ import annotations

from gateway.provider_cache.plugins import OPENAI_CACHE
from gateway.vendors.spec import LintHints, RewritePlugin, VendorSpec, static_key

SPEC = VendorSpec(
    name="openai",
    title="OpenAI",
    family="openai",
    speaks=("openai_chat", "openai_responses"),
    native_paths={"openai_chat": "/chat/completions", "openai_responses": "/responses"},
    models=("gpt-*", "chatgpt-*", "text-embedding-*", "omni-moderation-*", "davinci-*", "babbage-*"),
    model_regex=r"o\d",
    key_env="OPENAI_API_KEY",
    base_url_env="GATEWAY_OPENAI_BASE_URL",
    default_base_url="https://api.openai.com/v1",
    signer=static_key("authorization", "Bearer"),
    error_shape="openai",
    # OpenAI's prefix cache reads across a system message placed late in the conversation.
    rewrite=RewritePlugin(context_role="system"),
    provider_cache=OPENAI_CACHE,
    lint=LintHints(prefix_fields={"openai_chat": ("tools", "response_format"),
                                  "openai_responses": ("tools", "text", "instructions")},
                   default_model="gpt-4o"),
)
