"""The Anthropic emulator: `POST /v1/messages` (stream and not) and `/v1/messages/count_tokens`.

Auth: `x-api-key` (anthropic 0.x) or `Authorization: Bearer` (anthropic 2.x). `anthropic-version` is required;
from `2026-10-21` on, `temperature`/`top_p`/`top_k` are refused.
Streaming: every event has an `event:` line; message_start (usage with the cache fields) -> content blocks
(ping after the first block starts) -> message_delta with cumulative usage -> message_stop; a stream fault
sends `event: error` (overloaded_error) mid-stream.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request

from gateway_dev.emulators.answers import Generated, ToolSpec, generate
from gateway_dev.emulators.anthropic_cache import (
    ABlock,
    AnthropicPlan,
    AnthropicPromptCache,
    apply_breakpoints,
    block_ttl,
)
from gateway_dev.emulators.diagnostics import AnthropicDiagnostics
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.models import ANTHROPIC_MODELS, anthropic_min_cacheable, is_anthropic_model
from gateway_dev.emulators.openai_render import canon
from gateway_dev.emulators.shapes import check
from gateway_dev.emulators.shapes_anthropic import CountTokensRequest, MessagesRequest
from gateway_dev.emulators.tokens import encode, get_tokenizer, synthetic_tokens
from gateway_dev.emulators.web import (
    Call,
    EmulatorError,
    EmulatorResponse,
    EmulatorState,
    bearer,
    begin,
    json_response,
    new_id,
    sse_event,
)

STRICT_SAMPLING_VERSION = "2026-10-21"
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _bad(message: str) -> EmulatorError:
    return EmulatorError("anthropic", 400, message, type="invalid_request_error")


class Flattened:
    def __init__(self) -> None:
        self.blocks: list[ABlock] = []
        self.first_message_block: int | None = None
        self.question = ""
        self.tool_result: str | None = None
        self.tools: list[ToolSpec] = []
        self.called: set[str] = set()  # tools the assistant already called in the conversation
        self.errors: list[str] = []

    def add(self, tokens: tuple[int, ...], identity: str, where: str, raw: dict[str, Any] | None,
            eligible: bool = True, run: str | None = None) -> None:
        b = ABlock(tokens, identity, where, eligible, run=run)
        cc = raw.get("cache_control") if raw else None
        if cc is not None:
            if not eligible:
                self.errors.append(f"{where}.cache_control: Extra inputs are not permitted")
            b.cache_ttl = block_ttl(cc, where, self.errors)
            b.explicit = True
        self.blocks.append(b)

    @property
    def key(self) -> str:
        return "\x1e".join(b.identity for b in self.blocks)


def _block(f: Flattened, block: Any, where: str, role: str) -> str:
    """Add one content block; returns its text for the question / tool result."""
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    if not isinstance(block, dict):
        f.errors.append(f"{where}: Input should be a valid dictionary")
        return ""
    kind = block.get("type")
    text = ""
    if kind == "text":
        text = block.get("text") or ""
        if not text:
            f.errors.append(f"{where}.text: text content blocks must be non-empty")
        f.add(encode(text), f"{role}:{text}", where, block)
    elif kind in ("image", "document") and (block.get("source") or {}).get("type") != "text":
        src = block.get("source") or {}
        content = src.get("data") or src.get("url") or src.get("file_id") or ""
        f.add(synthetic_tokens(content, 1000 if kind == "image" else 1500), f"{role}:{kind}:{content[:64]}",
              where, block)
    elif kind == "tool_use":
        if isinstance(block.get("name"), str):
            f.called.add(block["name"])
        ident = canon({"id": block.get("id"), "name": block.get("name"), "input": block.get("input")})
        f.add(encode(ident), f"{role}:{ident}", where, block, run="tool_use")
    elif kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
        text = content or ""
        ident = f"[tool_result {block.get('tool_use_id', '')}]{text}"
        f.add(encode(ident), f"{role}:{ident}", where, block, run="tool_result")
        f.tool_result = text
    elif kind in ("thinking", "redacted_thinking"):
        t = block.get("thinking") or block.get("data") or ""
        f.add(encode(t), f"{role}:{kind}:{t}", where, block, eligible=False)
    else:
        ident = canon({k: v for k, v in block.items() if k != "cache_control"})
        f.add(encode(ident), f"{role}:{ident}", where, block)
    return text


def flatten(body: dict[str, Any]) -> Flattened:
    f = Flattened()
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or not tool.get("name"):
            f.errors.append(f"tools.{i}.name: Field required")
            continue
        f.tools.append(ToolSpec(tool["name"], tool.get("description") or "", tool.get("input_schema") or {}))
        ident = canon({k: v for k, v in tool.items() if k != "cache_control"})
        f.add(encode(ident), "tool:" + ident, f"tools.{i}", tool)
    system = body.get("system")
    if isinstance(system, str):
        if system:
            f.add(encode(system), "system:" + system, "system", None)
    elif isinstance(system, list):
        for i, block in enumerate(system):
            _block(f, block, f"system.{i}", "system")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        f.errors.append("messages: Field required" if messages is None
                        else "messages: at least one message is required")
        return f
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            f.errors.append(f"messages.{i}.role: Input should be 'user' or 'assistant'")
            continue
        if f.first_message_block is None:
            f.first_message_block = len(f.blocks)
        content = m.get("content")
        parts = [content] if isinstance(content, str) else (content if isinstance(content, list) else [])
        if not parts:
            f.errors.append(f"messages.{i}: all messages must have non-empty content")
        texts = [_block(f, part, f"messages.{i}.content.{j}", m["role"]) for j, part in enumerate(parts)]
        if m["role"] == "user":
            has_result = any(isinstance(p, dict) and p.get("type") == "tool_result" for p in parts)
            if not has_result:
                f.question, f.tool_result = " ".join(t for t in texts if t), None
    return f


class AnthropicEmulator:
    vendor = "anthropic"

    def __init__(self, state: EmulatorState, faults: FaultController) -> None:
        self.state, self.faults = state, faults
        self.cache = AnthropicPromptCache(state.clock)
        self.diagnostics = AnthropicDiagnostics()

    def key_of(self, request: Request) -> str:
        key = request.headers.get("x-api-key") or bearer(request)
        if not key:
            raise EmulatorError("anthropic", 401, "x-api-key header is required", type="authentication_error")
        if self.state.valid_keys is not None and key not in self.state.valid_keys:
            raise EmulatorError("anthropic", 401, "invalid x-api-key", type="authentication_error")
        return key

    async def _begin(self, request: Request, endpoint: str, shape: type[CountTokensRequest]) -> tuple[Call, str]:
        call = await begin(request, self.state, self.faults, emulator="anthropic", endpoint=f"anthropic.{endpoint}",
                           vendor="anthropic", key_of=self.key_of)
        version = request.headers.get("anthropic-version")
        if not version:
            raise _bad("anthropic-version: header is required")
        body = call.body
        check(shape, body, "anthropic")
        model = body.get("model")
        if not model or not isinstance(model, str):
            raise _bad("model: Field required")
        if not is_anthropic_model(model):
            raise EmulatorError("anthropic", 404, f"model: {model}", type="not_found_error")
        return call, version

    def _flatten(self, body: dict[str, Any]) -> Flattened:
        f = flatten(body)
        if not f.errors:
            f.errors += apply_breakpoints(f.blocks, body.get("cache_control"))
        if f.errors:
            raise _bad(f.errors[0])
        return f

    async def models(self, request: Request) -> EmulatorResponse:
        call = await begin(request, self.state, self.faults, emulator="anthropic", endpoint="anthropic.models",
                           vendor="anthropic", key_of=self.key_of, json_body=False)
        data = [{"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
                for m in ANTHROPIC_MODELS]
        return json_response({"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]},
                             fault=call.fault)

    async def count_tokens(self, request: Request) -> EmulatorResponse:
        call, _ = await self._begin(request, "count_tokens", CountTokensRequest)
        f = self._flatten(call.body)
        return json_response({"input_tokens": sum(len(b.tokens) for b in f.blocks)}, fault=call.fault)

    async def messages(self, request: Request) -> EmulatorResponse:
        call, version = await self._begin(request, "messages", MessagesRequest)
        body = call.body
        model = body["model"]
        max_tokens = body["max_tokens"]  # an int >= 1: MessagesRequest checked it
        if version >= STRICT_SAMPLING_VERSION:
            for p in ("temperature", "top_p", "top_k"):
                if body.get(p) is not None:
                    raise _bad(f"{p}: This parameter is not supported with anthropic-version {version}.")
        f = self._flatten(body)
        thinking = body.get("thinking") or {}
        tool_choice = body.get("tool_choice") or {}
        salt = canon({"tool_choice": tool_choice, "thinking": thinking})
        plan = self.cache.lookup((call.api_key, model), f.blocks, anthropic_min_cacheable(model),
                                 f.first_message_block, salt)
        choice = {"auto": "auto", "any": "any", "none": "none"}.get(tool_choice.get("type"), tool_choice.get("name"))
        budget = thinking.get("budget_tokens") if thinking.get("type") == "enabled" else None
        if budget is not None and (not isinstance(budget, int) or budget < 1024 or budget >= max_tokens):
            raise _bad("thinking.budget_tokens: must be at least 1024 and less than max_tokens")
        schema = output_schema(body)
        key = f.key if schema is None else f"{f.key}\x1e<format>{canon(schema)}"
        g = generate(model=model, conversation_key=key, question=f.question, target_tokens=call.target_tokens,
                     max_tokens=max_tokens, stop=list(body.get("stop_sequences") or []), tools=f.tools,
                     tool_choice=choice, tool_result=f.tool_result, called_tools=frozenset(f.called),
                     json_schema=schema, reasoning_tokens=min(budget, 64) if budget else 0,
                     reasoning_text=bool(budget))
        msg = self._message(model, g)
        if "diagnostics" in body:
            msg["diagnostics"] = self._diagnose(body, f, call.api_key, msg["id"])
        usage = _usage(plan, g.output_tokens, g.reasoning_tokens)
        msg["usage"] = usage
        ttft = call.latency.ttft(plan.input_tokens + plan.creation, plan.read)
        headers = {"request-id": new_id("req_", 24)}
        if body.get("stream"):
            return EmulatorResponse(chunks=self._events(msg, g, plan, ttft, call), headers=headers, fault=call.fault)
        await pause(ttft)
        plan.commit()
        await pause(call.latency.decode(g.output_tokens))
        return json_response(msg, headers=headers, fault=call.fault)

    def _diagnose(self, body: dict[str, Any], f: Flattened, owner: str, message_id: str) -> dict[str, Any] | None:
        """Cache diagnostics (diagnostics.py): compare with `diagnostics.previous_message_id`, then keep
        this request's fingerprint under its own id."""
        request = body.get("diagnostics")
        if request is not None and (not isinstance(request, dict)
                                    or not isinstance(request.get("previous_message_id"), str | None)):
            raise _bad("diagnostics.previous_message_id: Input should be a valid string or null")
        parts = [(b.where if b.where.startswith("tools") else
                  "system" if b.where.startswith("system") else ".".join(b.where.split(".")[:2]), len(b.tokens))
                 for b in f.blocks]
        fp = AnthropicDiagnostics.fingerprint(owner, body, parts)
        out = self.diagnostics.diagnose(request, owner, fp)
        if request is not None:
            self.diagnostics.put(message_id, fp)
        return out

    @staticmethod
    def _message(model: str, g: Generated) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if g.reasoning_text:
            sig = hashlib.sha256(g.reasoning_text.encode()).hexdigest()
            content.append({"type": "thinking", "thinking": g.reasoning_text, "signature": sig})
        if g.text or not g.tool_calls:
            content.append({"type": "text", "text": g.text})
        for i, c in enumerate(g.tool_calls):
            tid = "toolu_" + hashlib.sha256(f"{c.id_seed}:{i}".encode()).hexdigest()[:24]
            content.append({"type": "tool_use", "id": tid, "name": c.name, "input": c.arguments})
        return {"id": new_id("msg_", 24), "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": "stop_sequence" if g.stop_sequence else STOP_REASONS[g.finish],
                "stop_sequence": g.stop_sequence}

    async def _events(self, msg: dict[str, Any], g: Generated, plan: AnthropicPlan, ttft: float,
                      call: Call) -> AsyncIterator[bytes]:
        error_after = call.fault.stream_error_after if call.fault else None
        itl = call.latency.inter_token_s
        usage = msg["usage"]
        start_usage = {**{k: v for k, v in usage.items() if k != "output_tokens_details"}, "output_tokens": 1}
        events: list[tuple[bool, str, dict[str, Any]]] = [
            (False, "message_start", {"type": "message_start", "message": {
                **{k: v for k, v in msg.items() if k != "usage"}, "content": [], "stop_reason": None,
                "stop_sequence": None, "usage": start_usage}})]
        tok = get_tokenizer()
        for idx, block in enumerate(msg["content"]):
            if block["type"] == "text":
                opening: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": p} for p in tok.pieces(g.tokens)]
            elif block["type"] == "thinking":
                opening = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": p} for p in tok.pieces(tok.encode(block["thinking"]))]
                deltas.append({"type": "signature_delta", "signature": block["signature"]})
            else:
                opening = {**block, "input": {}}
                args = canon(block["input"])
                step = max(1, len(args) // 4)
                deltas = [{"type": "input_json_delta", "partial_json": args[k:k + step]}
                          for k in range(0, len(args), step)]
            events.append((False, "content_block_start", {"type": "content_block_start", "index": idx,
                                                          "content_block": opening}))
            if idx == 0:
                events.append((False, "ping", {"type": "ping"}))
            events += [(True, "content_block_delta", {"type": "content_block_delta", "index": idx, "delta": d})
                       for d in deltas]
            events.append((False, "content_block_stop", {"type": "content_block_stop", "index": idx}))
        delta_usage = {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                                             "output_tokens", "output_tokens_details") if k in usage}
        events.append((False, "message_delta", {"type": "message_delta", "delta": {
            "stop_reason": msg["stop_reason"], "stop_sequence": msg["stop_sequence"]}, "usage": delta_usage}))
        events.append((False, "message_stop", {"type": "message_stop"}))

        await pause(ttft)
        plan.commit()
        deltas_sent = 0
        for n, (is_delta, name, data) in enumerate(events):
            if error_after is not None and n >= error_after:
                yield sse_event("error", {"type": "error", "error": {"type": "overloaded_error",
                                                                     "message": "Overloaded"}})
                return
            if is_delta:
                if deltas_sent:
                    await pause(itl)
                deltas_sent += 1
            yield sse_event(name, data)


def output_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a structured-output request asks for: `output_config.format` (GA), or the beta's
    top-level `output_format` (sent with `anthropic-beta: structured-outputs-2025-11-13`; still accepted)."""
    fmt = (body.get("output_config") or {}).get("format") or body.get("output_format")
    return fmt["schema"] if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None


def _usage(plan: AnthropicPlan, output_tokens: int, thinking_tokens: int = 0) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input_tokens": plan.input_tokens, "cache_creation_input_tokens": plan.creation,
        "cache_read_input_tokens": plan.read,
        "cache_creation": {"ephemeral_5m_input_tokens": plan.creation_5m,
                           "ephemeral_1h_input_tokens": plan.creation_1h},
        "output_tokens": output_tokens, "service_tier": "standard"}
    if thinking_tokens:  # the reasoning part of output_tokens (SDK 2.x Usage.output_tokens_details)
        usage["output_tokens_details"] = {"thinking_tokens": thinking_tokens}
    return usage
