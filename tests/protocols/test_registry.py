"""The adapter registry (gateway.protocols): names, vendors, and the full ProtocolAdapter surface."""

from __future__ import annotations

import pytest

from gateway.protocols import ADAPTERS, get_adapter

METHODS = ("model_of", "is_stream", "conversation", "parse_answer", "stream_parser", "render_answer",
           "stream_renderer", "error_body", "upstream_stream_body", "parse_error", "replay", "stream_error")


@pytest.mark.parametrize(("name", "vendor"), [("openai_chat", "openai"), ("openai_responses", "openai"),
                                              ("anthropic_messages", "anthropic"), ("gemini", "gemini"),
                                              ("bedrock_converse", "bedrock")])
def test_adapters(name: str, vendor: str) -> None:
    adapter = get_adapter(name)
    assert adapter is get_adapter(name) and adapter.name == name and adapter.vendor == vendor
    for method in METHODS:
        assert callable(getattr(adapter, method)), method
    parser = adapter.stream_parser("p")
    for method in ("feed", "end", "answer"):
        assert callable(getattr(parser, method))
    assert parser.error is None
    renderer = adapter.stream_renderer({"model": "m"}, "r", True)
    for method in ("render", "close", "error"):
        assert callable(getattr(renderer, method))


def test_registry_is_complete_and_strict() -> None:
    assert set(ADAPTERS) == {"openai_chat", "openai_responses", "anthropic_messages", "gemini",
                            "bedrock_converse"}
    with pytest.raises(KeyError):
        get_adapter("cohere")


@pytest.mark.parametrize("name", ["openai_chat", "openai_responses", "anthropic_messages", "gemini"])
def test_stream_error_bytes(name: str) -> None:
    out = get_adapter(name).stream_error("upstream broke off")
    assert b"upstream broke off" in out and out.endswith(b"\n")
