"""Cross-protocol request translation: a client may call any model through the OpenAI protocols.

    upstream = spec.upstream_protocol("openai_chat")   # "anthropic_messages" (gateway/vendors/spec.py)
    path, native_body = translate_request("openai_chat", upstream, ctx.body)

Only the request needs translating. The answer comes back through the upstream adapter
(`parse_answer` / `stream_parser` → neutral `Answer` / events) and out through the client
adapter (`render_answer` / `stream_renderer`), which writes the usage in the client's dialect.

Supported (client → upstream): openai_chat → anthropic_messages | gemini; openai_responses →
openai_chat (DeepSeek, vLLM, OpenAI-compatible upstreams) | anthropic_messages | gemini (through
Chat) | bedrock_converse; anthropic_messages → bedrock_converse (Claude on Bedrock). Native Gemini
clients always go to their own vendor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.errors import GatewayError
from gateway.protocols.translate import (
    anthropic_messages_to_converse,
    openai_chat_to_anthropic,
    openai_chat_to_converse,
    openai_chat_to_gemini,
    openai_responses_to_chat,
)
from gateway.protocols.translate.common import preload

Translator = Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]


def _via_chat(to_vendor: Translator) -> Translator:
    def translate(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return to_vendor(openai_responses_to_chat.responses_to_chat(body))

    return translate


PAIRS: dict[tuple[str, str], Translator] = {
    ("openai_chat", "anthropic_messages"): openai_chat_to_anthropic.translate_request,
    ("openai_chat", "gemini"): openai_chat_to_gemini.translate_request,
    ("openai_responses", "openai_chat"): openai_responses_to_chat.translate_request,
    ("openai_responses", "anthropic_messages"): _via_chat(openai_chat_to_anthropic.translate_request),
    ("openai_responses", "gemini"): _via_chat(openai_chat_to_gemini.translate_request),
    ("openai_chat", "bedrock_converse"): openai_chat_to_converse.translate_request,
    ("openai_responses", "bedrock_converse"): _via_chat(openai_chat_to_converse.translate_request),
    ("anthropic_messages", "bedrock_converse"): anthropic_messages_to_converse.translate_request,
}


_BY_VENDOR = {"anthropic": "anthropic_messages", "gemini": "gemini", "openai": "openai_chat",
              "bedrock": "bedrock_converse"}


def translate_request(
    client: str, upstream: str, body: dict[str, Any], model: str | None = None, stream: bool | None = None
) -> tuple[str, dict[str, Any]]:
    """The client's body → (upstream path relative to the provider's base URL, native body).

    `upstream` is the upstream protocol (adapter name) or the provider's vendor dialect
    (openai | anthropic | gemini). `model` / `stream`, when given, override the body's (the
    resolved model name; Gemini takes the stream flag from the path). `body` is not modified.
    Raises GatewayError(400) for a request the upstream cannot honour, in words the client can act on."""
    upstream = _BY_VENDOR.get(upstream, upstream)
    translator = PAIRS.get((client, upstream))
    if translator is None:
        raise GatewayError(400, f"Requests in the {client} protocol cannot be served by a {upstream} upstream.",
                           "unsupported_protocol")
    if not isinstance(body, dict):
        raise GatewayError(400, "The request body must be a JSON object.")
    if model is not None or stream is not None:
        body = dict(body)
        if model is not None:
            body["model"] = model
        if stream is not None:
            if stream:
                body["stream"] = True
            else:
                body.pop("stream", None)
    return translator(body)


__all__ = ["PAIRS", "preload", "translate_request"]
