"""Builders of finished request contexts, as the request path leaves them for the usage stage."""

from __future__ import annotations

from typing import Any

from gateway.answer import Answer
from gateway.context import RequestContext
from gateway.protocols import get_adapter

CHAT_USAGE = {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
              "prompt_tokens_details": {"cached_tokens": 1920}}
ANTHROPIC_USAGE = {"input_tokens": 50, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 248,
                   "cache_creation": {"ephemeral_5m_input_tokens": 148, "ephemeral_1h_input_tokens": 100},
                   "output_tokens": 503}


def finished(*, tenant: str = "acme", protocol: str = "openai_chat", upstream_protocol: str | None = None,
             provider: str = "openai", model: str = "gpt-4o", usage: dict[str, Any] | None = None,
             answered_by: str = "upstream", cache_status: str = "miss", status: int = 200,
             template: tuple[str, str] | None = None, stream: bool = False, created_at: float | None = None,
             record: dict[str, Any] | None = None, answer_provider: str | None = None,
             request_id: str = "gw-test") -> RequestContext:
    ctx = RequestContext(request_id=request_id, adapter=get_adapter(protocol), headers={}, query={},
                         body={"model": model})
    ctx.tenant, ctx.provider, ctx.model, ctx.stream = tenant, provider, model, stream
    ctx.upstream_adapter = get_adapter(upstream_protocol or protocol)
    ctx.upstream_base_url = "http://upstream.test/v1"
    ctx.cache_status, ctx.answered_by, ctx.status = cache_status, answered_by, status
    if created_at is not None:
        ctx.created_at = created_at
    if template:
        ctx.template_id, ctx.template_version = template
    if usage is not None and status < 400:
        ctx.answer = Answer(text="hi", model=model, provider=answer_provider or provider, usage_raw=usage)
    elif status >= 400:
        ctx.error = f"upstream status {status}"
    ctx.ttft_s, ctx.latency_s = 0.05, 0.25
    if record:
        ctx.record.update(record)
    return ctx
