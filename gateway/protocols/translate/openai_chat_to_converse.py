"""OpenAI Chat Completions request → Amazon Bedrock Converse request.

Bedrock's Converse API is shaped after Anthropic's Messages (system apart, tool results in user turns, strictly
alternating roles, blocks that can end a cached prefix), so the request goes through the OpenAI → Anthropic
translator and then Anthropic → Converse: one mapping of each OpenAI parameter, the same refusals, and the same
content rules for every model on Bedrock. What differs is stated here: `max_tokens` is optional on Converse (sent
only when the client set one), and structured output has no Converse field.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.translate import anthropic_messages_to_converse, openai_chat_to_anthropic
from gateway.protocols.translate.common import max_tokens_of, refuse


def translate_request(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An OpenAI Chat body → (`/model/{id}/converse[-stream]`, the Converse body)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
        raise refuse("response_format is not supported for Bedrock models through the OpenAI API.",
                     "response_format")
    _, anthropic = openai_chat_to_anthropic.translate_request(body)
    if max_tokens_of(body) is None:
        anthropic.pop("max_tokens", None)
    if body.get("reasoning_effort") not in (None, "none") and "max_tokens" not in anthropic:
        anthropic["max_tokens"] = anthropic["thinking"]["budget_tokens"] + 4096  # Claude needs room beyond it
    return anthropic_messages_to_converse.translate_request(anthropic)
