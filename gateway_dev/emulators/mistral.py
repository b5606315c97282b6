"""The Mistral emulator: OpenAI-compatible `POST /v1/chat/completions` for Mistral's models, with Mistral's
prompt cache and usage object (sources in docs/emulators.md).

Documented rules, as implemented:
- Requests sharing a prefix reuse its computed tokens; `prompt_cache_key` raises the chance of a hit but does
  not guarantee one. Cache blocks are 64 tokens: a prompt under 64 tokens never hits.
- The usage object has `prompt_tokens`, `completion_tokens`, `total_tokens`, `prompt_audio_seconds` (null for
  text), and on a hit `prompt_tokens_details.cached_tokens`, which is part of `prompt_tokens`. There is no
  write count and no separate reasoning count.
Assumptions where the pages leave room: a prefix is reusable once the request that computed it has been
answered; reuse is per API key and `prompt_cache_key` (a request without one shares the key's default
partition); entries unused for an hour are dropped; a stream's usage comes in a final chunk as OpenAI's does
when `stream_options.include_usage` is set.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from gateway_dev.emulators.answers import generate
from gateway_dev.emulators.chat_wire import ChatOutcome, completion_body, completion_chunks
from gateway_dev.emulators.clock import Clock
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.openai_render import canon
from gateway_dev.emulators.shapes import check
from gateway_dev.emulators.shapes_openai import ChatCompletionRequest
from gateway_dev.emulators.tokens import encode
from gateway_dev.emulators.web import (
    EmulatorError,
    EmulatorResponse,
    EmulatorState,
    bearer,
    begin,
    error_body,
    json_response,
    new_id,
)

MISTRAL_MODELS = ("mistral-small-latest", "mistral-medium-latest", "mistral-large-latest", "magistral-medium-latest",
                  "codestral-latest", "ministral-8b-latest")
BLOCK = 64


def is_mistral_model(model: str) -> bool:
    return model.split("-", 1)[0] in ("mistral", "magistral", "codestral", "ministral", "devstral", "pixtral")


class MistralPromptCache:
    """Prefix blocks of 64 tokens per (API key, prompt_cache_key), as chained hashes."""

    def __init__(self, clock: Clock, idle_ttl_s: float = 3600.0) -> None:
        self.clock, self.idle_ttl_s = clock, idle_ttl_s
        self._blocks: dict[tuple[str, str, int], float] = {}

    @staticmethod
    def _chain(tokens: list[int]) -> list[int]:
        h, out = 0, []
        for k in range(len(tokens) // BLOCK):
            h = hash((h, tuple(tokens[k * BLOCK:(k + 1) * BLOCK])))
            out.append(h)
        return out

    def lookup(self, key: str, partition: str, tokens: list[int]) -> int:
        now, cached = self.clock.now(), 0
        for h in self._chain(tokens):
            last = self._blocks.get((key, partition, h))
            if last is None or now - last > self.idle_ttl_s:
                break
            self._blocks[(key, partition, h)] = now
            cached += BLOCK
        return cached

    def store(self, key: str, partition: str, tokens: list[int]) -> None:
        now = self.clock.now()
        for h in self._chain(tokens):
            self._blocks[(key, partition, h)] = now

    def clear(self) -> None:
        self._blocks.clear()


def render(body: dict[str, Any]) -> tuple[list[int], str, str]:
    """The prompt's tokens (tools, then messages in order), the question and the conversation key."""
    segments = [canon(tool) for tool in body.get("tools") or []]
    question = ""
    for m in body.get("messages") or []:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        segments.append(f"[{m.get('role')}]{content or ''}")
        if m.get("role") == "user":
            question = content or ""
    return list(encode("".join(segments))), question, "\x1e".join(segments)


class MistralEmulator:
    vendor = "mistral"

    def __init__(self, state: EmulatorState, faults: FaultController) -> None:
        self.state, self.faults = state, faults
        self.cache = MistralPromptCache(state.clock)

    def key_of(self, request: Request) -> str:
        key = bearer(request)
        if not key or (self.state.valid_keys is not None and key not in self.state.valid_keys):
            raise EmulatorError("openai", 401, "Unauthorized", type="authentication_error")
        return key

    async def chat(self, request: Request) -> EmulatorResponse:
        call = await begin(request, self.state, self.faults, emulator="mistral", endpoint="mistral.chat",
                           vendor="openai", key_of=self.key_of)
        body = call.body
        check(ChatCompletionRequest, body, "openai")
        model = body.get("model")
        if model not in MISTRAL_MODELS:
            raise EmulatorError("openai", 400, f"Invalid model: {model}", type="invalid_model", code="1500")
        if not body.get("messages"):
            raise EmulatorError("openai", 400, "messages: at least one message is required",
                                type="invalid_request_error")
        tokens, question, conversation = render(body)
        partition = str(body.get("prompt_cache_key") or "")
        cached = self.cache.lookup(call.api_key, partition, tokens)
        g = generate(model=model, conversation_key=conversation, question=question, target_tokens=call.target_tokens,
                     max_tokens=body.get("max_tokens"))
        n_in, n_out = len(tokens), g.output_tokens
        usage: dict[str, Any] = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out,
                                 "prompt_audio_seconds": None}
        if cached:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        outcome = ChatOutcome(new_id("", 32), model, int(self.state.clock.now()), [g], usage)
        ttft = call.latency.ttft(n_in - cached, cached)
        if body.get("stream"):
            async def prefill() -> None:
                await pause(ttft)
                self.cache.store(call.api_key, partition, tokens)

            opts = body.get("stream_options") or {}
            chunks = completion_chunks(outcome, include_usage=bool(opts.get("include_usage")),
                                       inter_token_s=call.latency.inter_token_s, before_first=prefill,
                                       error_after=call.fault.stream_error_after if call.fault else None,
                                       error_body=error_body(EmulatorError("openai", 500)))
            return EmulatorResponse(chunks=chunks, fault=call.fault)
        await pause(ttft)
        await pause(call.latency.decode(n_out))
        self.cache.store(call.api_key, partition, tokens)
        return json_response(completion_body(outcome), fault=call.fault)
