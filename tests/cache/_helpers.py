"""Request contexts built the way the handler builds them, for the response-cache tests."""

from __future__ import annotations

import uuid
from typing import Any

from gateway.answer import Answer
from gateway.cache.stage import ResponseCacheStage
from gateway.context import RequestContext
from gateway.pipeline import Hit
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


BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "What is 2+2?"}]}


def answer(text: str = "4", finish: str = "stop") -> Answer:
    return Answer(text=text, model="gpt-4o-mini-2024-07-18", finish_reason=finish, provider="openai",
                  usage_raw={"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10})


async def serve(stage: ResponseCacheStage, ctx: RequestContext, answer: Answer | None,
                 calls: list[str] | None = None) -> Hit | None:
    """One request: before(); on a miss the 'upstream' answers (or fails); then after()."""
    hit = await stage.before(ctx)
    if hit is None:
        if calls is not None:
            calls.append(ctx.request_id)
        if answer is not None:
            ctx.answer, ctx.answered_by = answer, "upstream"
        else:
            ctx.status, ctx.error = 500, "upstream status 500"
    else:
        ctx.answer = hit.answer
        ctx.answered_by = "response-cache" if hit.status == "response-hit" else "single-flight"
    await stage.after(ctx)
    return hit


async def lookup(stage: ResponseCacheStage, ctx: RequestContext) -> Hit | None:
    """A request that only looks: before(), then after() as the handler always runs it."""
    hit = await stage.before(ctx)
    if hit is not None:
        ctx.answer = hit.answer
        ctx.answered_by = "response-cache" if hit.status == "response-hit" else "single-flight"
    await stage.after(ctx)
    return hit
