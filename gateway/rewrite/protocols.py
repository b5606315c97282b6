"""The rewrite module of each native protocol, found by the protocol's name."""

from __future__ import annotations

from types import ModuleType

from gateway.rewrite import anthropic, gemini, openai_chat, openai_responses

MODULES: dict[str, ModuleType] = {mod.PROTOCOL: mod for mod in (openai_chat, openai_responses, anthropic, gemini)}


def module_for(protocol: str) -> ModuleType | None:
    """The protocol module for a native protocol name; None for an unknown one."""
    return MODULES.get(protocol)
