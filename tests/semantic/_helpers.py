"""Request contexts built the way the handler builds them, and a shared embedding model."""

from __future__ import annotations

import json
import os
import uuid
from functools import lru_cache
from typing import Any

from gateway.context import RequestContext
from gateway.policy.models import ResponseCachePolicy, SemanticCachePolicy, TenantPolicy
from gateway.protocols import get_adapter
from gateway.semantic.embedder import UniversalSentenceEncoder

ENDPOINTS = {"openai_chat": "chat", "openai_responses": "responses", "anthropic_messages": "messages",
             "gemini": "generate"}
PROVIDERS = {"openai_chat": "openai", "openai_responses": "openai", "anthropic_messages": "anthropic",
             "gemini": "gemini"}


@lru_cache(maxsize=1)
def use_backend() -> UniversalSentenceEncoder:
    """The packaged default model, loaded once per test session (≈2 s)."""
    backend = UniversalSentenceEncoder()
    backend.load()
    return backend


def policy(tenant: str, scope: str = "tenant", **semantic: Any) -> TenantPolicy:
    semantic.setdefault("enabled", True)
    # no sampled verification unless a test asks for it: with the default 2 % a would-be hit goes
    # upstream now and then, and a test that expects a hit would fail at random
    semantic.setdefault("verify_share", 0.0)
    return TenantPolicy(tenant=tenant, api_keys=["sha256:" + "0" * 64],
                        response_cache=ResponseCachePolicy(scope=scope),  # type: ignore[arg-type]
                        semantic_cache=SemanticCachePolicy(**semantic))


def chat(question: str, *, system: str | None = None, model: str = "gpt-4o-mini",
         history: list[tuple[str, str]] = (), **params: Any) -> dict[str, Any]:  # type: ignore[assignment]
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages += [{"role": r, "content": t} for r, t in history]
    messages.append({"role": "user", "content": question})
    return {"model": model, "messages": messages, **params}


def make_ctx(body: dict[str, Any], *, protocol: str = "openai_chat", tenant: str = "acme",
             pol: TenantPolicy | None = None, user: str | None = None, headers: dict[str, str] | None = None,
             no_cache: bool = False, no_store: bool = False, template: tuple[str, str] | None = None) -> RequestContext:
    ctx = RequestContext(request_id="gw-" + uuid.uuid4().hex, adapter=get_adapter(protocol),
                         headers=dict(headers or {}), query={}, body=body)
    ctx.endpoint = ENDPOINTS[protocol]
    ctx.tenant = tenant
    ctx.policy = pol or policy(tenant)
    ctx.user = user
    ctx.model = str(body.get("model", "gemini-2.5-flash"))
    ctx.provider = PROVIDERS[protocol]
    ctx.no_cache, ctx.no_store = no_cache, no_store
    if template:
        ctx.template_id, ctx.template_version = template
    return ctx


def eval_questions() -> list[str]:
    """Every question of the repository's labelled pairs (`tests/data/eval`, all splits), sorted."""
    folder = os.path.join(os.path.dirname(__file__), "..", "data", "eval")
    texts: set[str] = set()
    for dirpath, _, names in os.walk(folder):
        for name in names:
            if name.endswith(".jsonl"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    for line in f:
                        pair = json.loads(line)
                        texts.update((pair["cached"], pair["query"]))
    return sorted(texts)
