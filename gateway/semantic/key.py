"""What must match exactly for a semantic hit, and which requests the layer takes at all.

Only the final user question is compared by meaning. Everything else is hashed into the context
hash, stored with each entry and filtered on (a hard partition, never a prefix in the embedded
text): server-side identity (tenant; the user when the response-cache scope is `user`), the client
protocol, endpoint and API version, provider and model, the vendor-behaviour headers, the system
text, every earlier turn, the tools, every other body parameter (the request body minus the prompt
and transport fields: a deny-list, like the response cache, so a new parameter splits entries
rather than leaking answers), the policy's knowledge `version`, the prompt template id and version,
and the embedder's name and dimension.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from gateway.keys import canonical_bytes, identity_material, unreplayable

if TYPE_CHECKING:
    from gateway.context import RequestContext
    from gateway.policy.models import SemanticCachePolicy

CONTEXT_VERSION = 1  # bump when the material changes: older entries then simply miss

_GENERATION_ENDPOINTS = frozenset({"chat", "responses", "messages", "generate", "converse"})

# Never written, never looked up: answers to these go stale or hold personal data. Built in and
# always on; a tenant adds its own through `semantic_cache.exclude_patterns`.
DEFAULT_EXCLUDE = (
    r"\b(today|tonight|tomorrow|yesterday|right now|currently|at the moment|this (week|morning|evening))\b",
    r"\b(latest|newest|most recent|up[- ]to[- ]date|real[- ]?time|live)\b",
    r"\bcurrent(ly)?\s+(price|rate|status|weather|time|score|stock)",
    r"\b(stock|share|exchange)\s+(price|rate)s?\b",
    r"今天|今日|明天|昨天|现在|目前|当前|最新|实时|此刻|刚刚|本周",
    r"[\w.+-]+@[\w-]+\.[\w.-]+",  # e-mail address
    r"(?<!\d)(?:\+?\d[\d -]{8,}\d)(?!\d)",  # phone / card / account numbers
    r"(?<![0-9A-Za-z])\d{17}[\dXx](?![0-9A-Za-z])",  # mainland China resident ID
    r"\b\d{3}-\d{2}-\d{4}\b",  # US SSN
)


@lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


def excluded(text: str, extra: Iterable[str] = ()) -> bool:
    """True when `text` must not be cached: time-sensitive or personal."""
    return bool(_compiled((*DEFAULT_EXCLUDE, *extra)).search(text))


def skip_reason(ctx: RequestContext, policy: SemanticCachePolicy | None, user_scope: bool,
                max_question_chars: int) -> str | None:
    """Why the layer does not take this request (lookup and write), or None."""
    if policy is None or not policy.enabled:
        return "disabled"
    if ctx.no_store:
        return "no-store"
    if ctx.endpoint not in _GENERATION_ENDPOINTS:
        return "endpoint"
    if user_scope and not ctx.user:
        return "no user"
    why = unreplayable(ctx)
    if why:
        return why
    body = ctx.body
    if ctx.adapter.name == "openai_responses" and (body.get("previous_response_id") or body.get("conversation")):
        return "server-side history"  # the earlier turns are not in the request: nothing to hash
    if ctx.adapter.name == "openai_responses" and body.get("store") is not False:
        # OpenAI stores this response and the client may chain `previous_response_id` from its id;
        # another question's answer cannot carry an id that continues this question's conversation.
        return "stored response"
    conv = ctx.conversation
    question = conv.final_user_text
    if not question or not question.strip():
        return "no user question"
    if len(question) > max_question_chars:
        return "question too long"
    if conv.has_tool_traffic and not policy.cache_tool_requests:
        return "tool traffic"
    if len(conv.turns) > policy.max_history_turns:
        return "history"
    if excluded(question, policy.exclude_patterns):
        return "excluded"
    return None


def context_material(ctx: RequestContext, user_scope: bool, version: str, embedder: tuple[str, int]) -> dict[str, Any]:
    # the prompt fields are in the `Conversation` view (system, turns, tools), hashed below one by one
    drop = ctx.adapter.transport_fields | ctx.adapter.prompt_fields
    conv = ctx.conversation
    return {
        "v": CONTEXT_VERSION,
        **identity_material(ctx, user_scope),
        "system": conv.system,
        "history": [[t.role, t.text] for t in conv.turns[:-1]],
        "tools": conv.tools,
        "params": {k: v for k, v in ctx.body.items() if k not in drop},
        "version": version,
        "template": [ctx.template_id, ctx.template_version],
        "embedder": list(embedder),
    }


def context_hash(ctx: RequestContext, user_scope: bool, version: str, embedder: tuple[str, int]) -> str:
    return hashlib.sha256(canonical_bytes(context_material(ctx, user_scope, version, embedder))).hexdigest()
