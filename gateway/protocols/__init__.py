"""Protocol adapters: one stateless singleton per client protocol, found by name.

    from gateway.protocols import get_adapter
    adapter = get_adapter("openai_chat")   # | "openai_responses" | "anthropic_messages" | "gemini" | "bedrock_converse"
"""

from __future__ import annotations

from gateway.protocols.anthropic_messages import adapter as _anthropic
from gateway.protocols.base import ProtocolAdapter
from gateway.protocols.bedrock_converse import adapter as _bedrock
from gateway.protocols.gemini import adapter as _gemini
from gateway.protocols.openai_chat import adapter as _openai_chat
from gateway.protocols.openai_responses import adapter as _openai_responses

ADAPTERS: dict[str, ProtocolAdapter] = {
    a.name: a for a in (_openai_chat, _openai_responses, _anthropic, _gemini, _bedrock)  # type: ignore[misc]
}


def get_adapter(name: str) -> ProtocolAdapter:
    """The adapter for protocol `name`; KeyError for an unknown name (a programming error)."""
    return ADAPTERS[name]


__all__ = ["ADAPTERS", "ProtocolAdapter", "get_adapter"]
