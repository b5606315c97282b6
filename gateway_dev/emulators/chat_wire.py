"""The Chat Completions wire format, shared by the OpenAI, DeepSeek and vLLM emulators.

Non-stream: one `chat.completion` object. Stream: `data: <chunk>\\n\\n` lines, the first delta carrying
the role, one token per chunk, a last choice chunk with `finish_reason`, then - only when
`stream_options.include_usage` is true - a chunk with `choices: []` and the usage (every other chunk then
carries `"usage": null`), then `data: [DONE]`.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from gateway_dev.emulators.answers import Generated
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.tokens import get_tokenizer
from gateway_dev.emulators.web import sse_data


@dataclass
class ChatOutcome:
    id: str
    model: str
    created: int
    choices: list[Generated]
    usage: dict[str, Any]
    system_fingerprint: str | None = None
    service_tier: str | None = None
    reasoning_field: str | None = None  # DeepSeek: "reasoning_content"
    obfuscation: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def tool_call_id(g_seed: str, index: int, prefix: str = "call_") -> str:
    return prefix + hashlib.sha256(f"{g_seed}:{index}".encode()).hexdigest()[:24]


def fingerprint(model: str) -> str:
    return "fp_" + hashlib.sha256(model.encode()).hexdigest()[:10]


def _message(g: Generated, reasoning_field: str | None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": g.text if not g.tool_calls else None, "refusal": None,
                           "annotations": []}
    if g.tool_calls:
        msg["tool_calls"] = [
            {"id": tool_call_id(c.id_seed, i), "type": "function",
             "function": {"name": c.name, "arguments": c.arguments_json}}
            for i, c in enumerate(g.tool_calls)
        ]
    if reasoning_field:
        msg[reasoning_field] = g.reasoning_text
    return msg


def completion_body(o: ChatOutcome) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": o.id,
        "object": "chat.completion",
        "created": o.created,
        "model": o.model,
        "choices": [
            {"index": i, "message": _message(g, o.reasoning_field), "logprobs": None, "finish_reason": g.finish}
            for i, g in enumerate(o.choices)
        ],
        "usage": o.usage,
    }
    if o.service_tier is not None:
        body["service_tier"] = o.service_tier
    if o.system_fingerprint is not None:
        body["system_fingerprint"] = o.system_fingerprint
    body.update(o.extra)
    return body


async def completion_chunks(
    o: ChatOutcome,
    *,
    include_usage: bool,
    inter_token_s: float,
    before_first: Callable[[], Awaitable[None]] | None = None,
    error_after: int | None = None,
    error_body: dict[str, Any] | None = None,
) -> AsyncIterator[bytes]:
    """The SSE chunks of a streamed completion; `before_first` runs before anything is sent (the prefill)."""
    if before_first is not None:
        await before_first()
    base: dict[str, Any] = {"id": o.id, "object": "chat.completion.chunk", "created": o.created, "model": o.model}
    if o.service_tier is not None:
        base["service_tier"] = o.service_tier
    if o.system_fingerprint is not None:
        base["system_fingerprint"] = o.system_fingerprint
    tok = get_tokenizer()
    sent = 0

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
        c = dict(base)
        c["choices"] = [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]
        if include_usage:
            c["usage"] = None
        if o.obfuscation:
            c["obfuscation"] = "x" * (1 + (sent * 7) % 11)
        return sse_data(c)

    for i, g in enumerate(o.choices):
        first: dict[str, Any] = {"role": "assistant", "content": "" if not g.tool_calls else None, "refusal": None}
        parts: list[dict[str, Any]] = []
        if o.reasoning_field and g.reasoning_text:
            first["content"] = None
            parts += [{o.reasoning_field: p} for p in tok.pieces(tok.encode(g.reasoning_text))]
        parts += [{"content": p} for p in tok.pieces(g.tokens)]
        for t, call in enumerate(g.tool_calls):
            args = call.arguments_json
            parts.append({"tool_calls": [{"index": t, "id": tool_call_id(call.id_seed, t), "type": "function",
                                          "function": {"name": call.name, "arguments": ""}}]})
            step = max(1, len(args) // 4)
            parts += [{"tool_calls": [{"index": t, "function": {"arguments": args[k:k + step]}}]}
                      for k in range(0, len(args), step)]
        for n, delta in enumerate([first, *parts]):
            if error_after is not None and sent >= error_after:
                yield sse_data(error_body or {"error": {"message": "stream error", "type": "server_error"}})
                return
            if n > 1:
                await pause(inter_token_s)
            yield chunk(i, delta)
            sent += 1
        yield chunk(i, {}, g.finish)
        sent += 1
    if include_usage:
        c = dict(base)
        c["choices"] = []
        c["usage"] = o.usage
        if o.obfuscation:
            c["obfuscation"] = "x"
        yield sse_data(c)
    yield b"data: [DONE]\n\n"
