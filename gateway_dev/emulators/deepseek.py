"""The DeepSeek emulator: OpenAI-compatible `/chat/completions` (also under `/v1`) for `deepseek-*` models,
with DeepSeek's context caching on disk (api-docs.deepseek.com/guides/kv_cache).

Documented rules, as implemented:
- A request hits only when it fully matches a persisted *cache prefix unit*; the hit is that unit's length
  (`usage.prompt_cache_hit_tokens`, the rest `prompt_cache_miss_tokens`).
- Each request persists two units: at the end of the user input and at the end of the model output (the
  output rendered as the next turn's assistant message renders it, so a follow-up turn matches it).
- A common prefix detected between a request and earlier ones is persisted as its own unit
  ("A+B" then "A+C" misses but persists "A"; "A+D" then hits "A").
- Long inputs/outputs get units at fixed token intervals.
Assumptions where the page leaves room (docs/emulators.md): the interval is 1024 tokens; units shorter than
64 tokens are not kept (the earlier page's "64 tokens storage unit"); a unit is dropped after 24 h unused
("a few hours to a few days"); units are per API key; they are usable as soon as the response begins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from gateway_dev.emulators.answers import ToolSpec, generate
from gateway_dev.emulators.chat_wire import ChatOutcome, completion_body, completion_chunks
from gateway_dev.emulators.clock import Clock
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.models import DEEPSEEK_MODELS, deepseek_reasoning_tokens
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
    mask_key,
    new_id,
)

BOS, USER, ASSISTANT, EOS = "<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>"


@dataclass
class DeepSeekPrompt:
    tokens: list[int] = field(default_factory=list)
    user_input_end: int = 0
    segments: list[str] = field(default_factory=list)
    question: str = ""
    tool_result: str | None = None
    tools: list[ToolSpec] = field(default_factory=list)

    def text(self, s: str) -> None:
        if s:
            self.tokens.extend(encode(s))
            self.segments.append(s)


def render_assistant(content: str | None, tool_calls: list[dict[str, Any]] | None) -> str:
    calls = "".join(f"<｜tool▁call▁begin｜>{(c.get('function') or {}).get('name', '')}\n"
                    f"{(c.get('function') or {}).get('arguments', '')}<｜tool▁call▁end｜>" for c in tool_calls or [])
    return ASSISTANT + (content or "") + (f"<｜tool▁calls▁begin｜>{calls}<｜tool▁calls▁end｜>" if calls else "") + EOS


def render(body: dict[str, Any]) -> DeepSeekPrompt:
    p = DeepSeekPrompt()
    p.text(BOS)
    for tool in body.get("tools") or []:
        fn = tool.get("function") or {}
        if fn.get("name"):
            p.tools.append(ToolSpec(fn["name"], fn.get("description", ""), fn.get("parameters") or {}))
        p.text("<｜tool▁sep｜>" + canon(tool))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise EmulatorError("deepseek", 400, "Messages must be a non-empty array", type="invalid_request_error")
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        role = m.get("role")
        if role == "system":
            p.text(content or "")
        elif role == "user":
            p.text(USER + (content or ""))
            p.question, p.tool_result = content or "", None
        elif role == "assistant":
            p.text(render_assistant(content, m.get("tool_calls")))
        elif role == "tool":
            p.text(f"<｜tool▁output▁begin｜>{content or ''}<｜tool▁output▁end｜>")
            p.tool_result = content or ""
        else:
            raise EmulatorError("deepseek", 400, f"Invalid role: {role!r}", type="invalid_request_error")
    p.user_input_end = len(p.tokens)
    p.text(ASSISTANT)
    return p


@dataclass(slots=True)
class _History:
    tokens: list[int]
    chain: list[int]


class DeepSeekContextCache:
    def __init__(self, clock: Clock, *, interval: int = 1024, min_unit: int = 64, idle_ttl_s: float = 86400.0,
                 history: int = 256, granule: int = 64) -> None:
        self.clock = clock
        self.interval, self.min_unit, self.idle_ttl_s, self.history_len = interval, min_unit, idle_ttl_s, history
        self.granule = granule
        self._units: dict[tuple[str, int, int], float] = {}  # (key, length, prefix hash) -> last used
        self._lengths: dict[str, set[int]] = {}
        self._history: dict[str, list[_History]] = {}

    def _chain(self, tokens: list[int]) -> list[int]:
        g, h, out = self.granule, 0, [0]
        for k in range(len(tokens) // g):
            h = hash((h, tuple(tokens[k * g:(k + 1) * g])))
            out.append(h)
        return out

    def _prefix_hash(self, tokens: list[int], chain: list[int], length: int) -> int:
        k = length // self.granule
        return hash((chain[k], tuple(tokens[k * self.granule:length])))

    def lookup(self, key: str, tokens: list[int]) -> int:
        """Length of the longest live unit the request fully matches (0: miss); touches it."""
        now = self.clock.now()
        chain = self._chain(tokens)
        for length in sorted((n for n in self._lengths.get(key, ()) if n <= len(tokens)), reverse=True):
            ukey = (key, length, self._prefix_hash(tokens, chain, length))
            last = self._units.get(ukey)
            if last is None:
                continue
            if now - last > self.idle_ttl_s:
                del self._units[ukey]
                continue
            self._units[ukey] = now
            return length
        return 0

    def persist(self, key: str, prompt: list[int], user_input_end: int, full: list[int]) -> None:
        """Units for one finished request: user-input end, output end, intervals, common prefixes."""
        now = self.clock.now()
        chain = self._chain(full)
        lengths = {user_input_end, len(full)}
        lengths.update(range(self.interval, len(full) + 1, self.interval))
        lengths.add(self._common_prefix(key, prompt[:user_input_end]))
        for length in lengths:
            if length >= self.min_unit:
                self._units[(key, length, self._prefix_hash(full, chain, length))] = now
                self._lengths.setdefault(key, set()).add(length)

    def _common_prefix(self, key: str, user_input: list[int]) -> int:
        """Longest common prefix with a recent request's input (then remembers this one)."""
        chain = self._chain(user_input)
        best = 0
        hist = self._history.setdefault(key, [])
        for h in hist:
            lo, hi = 0, min(len(chain), len(h.chain)) - 1  # chains agree up to some index: binary search
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if chain[mid] == h.chain[mid]:
                    lo = mid
                else:
                    hi = mid - 1
            n = lo * self.granule
            limit = min(len(user_input), len(h.tokens))
            while n < limit and user_input[n] == h.tokens[n]:
                n += 1
            if n < len(user_input) and n < len(h.tokens):  # a strict common prefix, not a full unit
                best = max(best, n)
        hist.append(_History(user_input, chain))
        if len(hist) > self.history_len:
            del hist[0]
        return best

    def clear(self) -> None:
        self._units.clear()
        self._lengths.clear()
        self._history.clear()


class DeepSeekEmulator:
    vendor = "deepseek"

    def __init__(self, state: EmulatorState, faults: FaultController) -> None:
        self.state, self.faults = state, faults
        self.cache = DeepSeekContextCache(state.clock)

    def key_of(self, request: Request) -> str:
        key = bearer(request)
        if not key or (self.state.valid_keys is not None and key not in self.state.valid_keys):
            raise EmulatorError("deepseek", 401, f"Authentication Fails, Your api key: {mask_key(key or '')} is "
                                "invalid", type="authentication_error", code="invalid_request_error")
        return key

    async def chat(self, request: Request) -> EmulatorResponse:
        call = await begin(request, self.state, self.faults, emulator="deepseek", endpoint="deepseek.chat",
                           vendor="deepseek", key_of=self.key_of)
        body = call.body
        check(ChatCompletionRequest, body, "deepseek")
        model = body.get("model")
        if model not in DEEPSEEK_MODELS:
            raise EmulatorError("deepseek", 400, "Model Not Exist", type="invalid_request_error",
                                code="invalid_request_error")
        prompt = render(body)
        hit = self.cache.lookup(call.api_key, prompt.tokens)
        stop = body.get("stop")
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            choice = (choice.get("function") or {}).get("name")
        reasoning = deepseek_reasoning_tokens(model)
        fmt = body.get("response_format") or {}
        g = generate(model=model, conversation_key="\x1e".join(prompt.segments), question=prompt.question,
                     target_tokens=call.target_tokens, max_tokens=body.get("max_tokens"),
                     stop=[stop] if isinstance(stop, str) else list(stop or []), tools=prompt.tools,
                     tool_choice=choice, tool_result=prompt.tool_result, json_object=fmt.get("type") == "json_object",
                     reasoning_tokens=reasoning, reasoning_text=bool(reasoning))
        n_in, n_out = len(prompt.tokens), g.output_tokens
        usage: dict[str, Any] = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out,
                                 "prompt_tokens_details": {"cached_tokens": hit},
                                 "prompt_cache_hit_tokens": hit, "prompt_cache_miss_tokens": n_in - hit}
        if reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": g.reasoning_tokens}
        outcome = ChatOutcome(new_id("", 32), model, int(self.state.clock.now()), [g], usage,
                              system_fingerprint="fp_emulated_prod0820_fp8_kvcache",
                              reasoning_field="reasoning_content" if reasoning else None)
        calls = [{"function": {"name": c.name, "arguments": c.arguments_json}} for c in g.tool_calls]
        full = prompt.tokens[:prompt.user_input_end] + list(encode(render_assistant(g.text or None, calls)))

        def commit() -> None:
            self.cache.persist(call.api_key, prompt.tokens, prompt.user_input_end, full)

        ttft = call.latency.ttft(n_in - hit, hit)
        if body.get("stream"):
            async def prefill() -> None:
                await pause(ttft)
                commit()

            opts = body.get("stream_options") or {}
            chunks = completion_chunks(outcome, include_usage=bool(opts.get("include_usage")),
                                       inter_token_s=call.latency.inter_token_s, before_first=prefill,
                                       error_after=call.fault.stream_error_after if call.fault else None,
                                       error_body=error_body(EmulatorError("deepseek", 500)))
            return EmulatorResponse(chunks=chunks, fault=call.fault)
        await pause(ttft)
        commit()
        await pause(call.latency.decode(n_out))
        return json_response(completion_body(outcome), fault=call.fault)
