"""Request contexts built the way the handler builds them, for the response-cache tests."""

from __future__ import annotations

import uuid
from typing import Any

from gateway.context import RequestContext
from gateway.policy.models import ResponseCachePolicy, TenantPolicy
from gateway.protocols import get_adapter

ENDPOINTS = {"openai_chat": "chat", "openai_responses": "responses", "anthropic_messages": "messages",
             "gemini": "generate"}
PROVIDERS = {"openai_chat": "openai", "openai_responses": "openai", "anthropic_messages": "anthropic",
             "gemini": "gemini"}
API_KEY = "sk-test-" + "s3cr3t" * 6


def policy(tenant: str, **response_cache: Any) -> TenantPolicy:
    return TenantPolicy(tenant=tenant, api_keys=["sha256:" + "0" * 64],
                        response_cache=ResponseCachePolicy(**response_cache))


def make_ctx(body: dict[str, Any], *, protocol: str = "openai_chat", tenant: str = "acme",
             pol: TenantPolicy | None = None, user: str | None = None, stream: bool = False,
             model: str | None = None, headers: dict[str, str] | None = None, request_id: str | None = None,
             no_cache: bool = False, no_store: bool = False) -> RequestContext:
    """A context as it stands after authentication, policy and the protocol adapter stage."""
    ctx = RequestContext(
        request_id=request_id or "gw-" + uuid.uuid4().hex,
        adapter=get_adapter(protocol),
        headers=dict(headers or {}),
        query={},
        body=body,
    )
    ctx.endpoint = ENDPOINTS[protocol]
    ctx.api_key = API_KEY
    ctx.tenant = tenant
    ctx.policy = pol or policy(tenant)
    ctx.user = user
    ctx.model = model or str(body.get("model", "gemini-2.5-flash"))
    ctx.provider = PROVIDERS[protocol]
    ctx.stream = stream
    ctx.no_cache, ctx.no_store = no_cache, no_store
    return ctx
