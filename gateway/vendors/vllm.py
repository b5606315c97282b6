"""The vLLM replica pool: OpenAI-compatible, names from the pool's `/v1/models` or `vllm/<name>`.

The route stage picks the replica (and sets the base URL); the rewrite layer leaves the body alone,
since a self-hosted model's chat template may refuse a system or second user message mid-conversation
and cache-aware routing already keys on the prefix."""

from __future__ import annotations

from gateway.vendors.spec import VendorSpec, static_key

SPEC = VendorSpec(
    name="vllm",
    title="vLLM",
    family="openai",
    speaks=("openai_chat",),
    native_paths={"openai_chat": "/chat/completions"},
    route_prefix="vllm/",
    default_key="EMPTY",  # vLLM accepts any key unless started with --api-key
    signer=static_key("authorization", "Bearer"),
    pooled=True,
    rewrite=None,
)
