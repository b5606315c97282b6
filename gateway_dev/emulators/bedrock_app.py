"""The Amazon Bedrock emulator: the Converse API of `bedrock-runtime`.

    POST /model/{modelId}/converse          JSON ConverseResponse
    POST /model/{modelId}/converse-stream   application/vnd.amazon.eventstream: messageStart, contentBlockStart
                                            (tool use), contentBlockDelta*, contentBlockStop, messageStop, metadata

Auth: SigV4 for service `bedrock` in the configured region, or a Bedrock API key as `Authorization: Bearer`
(bedrock_auth.py). The model id arrives URL-encoded (`...-v1%3A0`); inference-profile prefixes (`us.`, `eu.`,
`apac.`, `global.`) name the same model. Errors are rest-json: `{"message": ...}` with `x-amzn-ErrorType`
(ValidationException 400, AccessDeniedException 403, ResourceNotFoundException 404, ThrottlingException 429, ...).

Prompt caching: `cachePoint` blocks in `toolConfig.tools`, `system` and message `content` end a cached prefix;
the prefix order is tools -> system -> messages; at most 4 per request; a checkpoint below the model's minimum
tokens is accepted and caches nothing; entries live 5 minutes (`ttl: "1h"` where asked), restarted by each hit,
per (caller, model). Claude models look back 20 blocks from a checkpoint as Anthropic's API does. Usage:
`inputTokens` (not read from or written to the cache), `outputTokens`, `cacheReadInputTokens`,
`cacheWriteInputTokens`, `cacheDetails` (writes by TTL, 1h first), `totalTokens`.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request

from gateway_dev.emulators import eventstream
from gateway_dev.emulators.answers import Generated, ToolSpec, generate
from gateway_dev.emulators.anthropic_cache import ABlock, AnthropicPlan, AnthropicPromptCache
from gateway_dev.emulators.bedrock_auth import AwsAuthError, BedrockAuth
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.models import anthropic_min_cacheable, longest_prefix
from gateway_dev.emulators.openai_render import canon
from gateway_dev.emulators.shapes import check_depth
from gateway_dev.emulators.tokens import encode, get_tokenizer, synthetic_tokens
from gateway_dev.emulators.web import Call, EmulatorError, EmulatorResponse, EmulatorState, begin, json_response

MAX_CACHE_POINTS = 4
# Minimum tokens per cache checkpoint, from Bedrock's prompt-caching table; other Claude models take Anthropic's
# minimum for the same model (models.ANTHROPIC_MIN_CACHEABLE).
BEDROCK_MIN_CACHE = {"anthropic.claude-3-7-sonnet": 1024, "anthropic.claude-3-5-haiku": 2048, "amazon.nova-": 1000}
_PROFILE = re.compile(r"^(us|eu|apac|global|jp|au|ca|us-gov)\.")
_MODEL = re.compile(r"^(anthropic\.claude-[a-z0-9.-]+-v\d+(:\d+)?|amazon\.nova-[a-z0-9-]+-v\d+(:\d+)?|"
                    r"(meta|mistral|cohere|ai21|deepseek|openai|qwen|writer)\.[a-z0-9.:-]+)$")
STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_TYPES = {400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException",
          404: "ResourceNotFoundException", 408: "ModelTimeoutException", 424: "ModelErrorException",
          429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException"}


def bedrock_error_type(status: int) -> str:
    return _TYPES.get(status, "InternalServerException" if status >= 500 else "ValidationException")


def _invalid(message: str) -> EmulatorError:
    return EmulatorError("bedrock", 400, message, type="ValidationException")


def base_model(model_id: str) -> str:
    return _PROFILE.sub("", model_id)


def supports_caching(model: str) -> bool:
    return model.startswith(("anthropic.claude-", "amazon.nova-"))


def min_cache_tokens(model: str) -> int:
    own = longest_prefix(BEDROCK_MIN_CACHE, model, 0)
    if own:
        return own
    return anthropic_min_cacheable(re.sub(r"-v\d+(:\d+)?$", "", model.removeprefix("anthropic.")))


class _Flat:
    def __init__(self) -> None:
        self.blocks: list[ABlock] = []
        self.first_message_block: int | None = None
        self.points = 0
        self.tools: list[ToolSpec] = []
        self.question = ""
        self.tool_result: str | None = None

    def add(self, tokens: tuple[int, ...], identity: str, where: str) -> None:
        self.blocks.append(ABlock(tokens, identity, where))

    def cache_point(self, raw: Any, where: str) -> None:
        if not isinstance(raw, dict) or raw.get("type") != "default":
            raise _invalid(f"{where}.cachePoint.type: Member must satisfy enum value set: [default]")
        ttl = raw.get("ttl", "5m")
        if ttl not in ("5m", "1h"):
            raise _invalid(f"{where}.cachePoint.ttl: Member must satisfy enum value set: [1h, 5m]")
        if not self.blocks:
            raise _invalid(f"{where}: a cachePoint must follow content it caches.")
        self.points += 1
        self.blocks[-1].cache_ttl = ttl


def _content_block(f: _Flat, block: Any, where: str, role: str) -> str:
    """Add one message or system content block; returns its text."""
    if not isinstance(block, dict) or len(block) != 1:
        raise _invalid(f"{where}: a content block must set exactly one member.")
    (kind, value), = block.items()
    if kind == "cachePoint":
        f.cache_point(value, where)
        return ""
    if kind == "text":
        if not isinstance(value, str) or not value:
            raise _invalid(f"{where}.text: The text field in the ContentBlock object is blank. Add text to the "
                           "text field, and try again.")
        f.add(encode(value), f"{role}:{value}", where)
        return value
    if kind in ("image", "document", "video", "audio"):
        src = (value or {}).get("source") or {} if isinstance(value, dict) else {}
        data = src.get("bytes") or (src.get("s3Location") or {}).get("uri") or ""
        if isinstance(data, bytes):
            data = base64.b64encode(data).decode()
        f.add(synthetic_tokens(str(data), 1000 if kind == "image" else 1500), f"{role}:{kind}:{str(data)[:64]}", where)
        return ""
    if kind == "toolResult":
        parts = (value or {}).get("content") or []
        text = "".join(p.get("text") or canon(p.get("json")) for p in parts if isinstance(p, dict))
        ident = f"[toolResult {(value or {}).get('toolUseId', '')}]{text}"
        f.add(encode(ident), f"{role}:{ident}", where)
        f.tool_result = text
        return ""
    ident = canon(block)
    f.add(encode(ident), f"{role}:{ident}", where)
    return ""


def flatten(body: dict[str, Any], model: str) -> _Flat:
    f = _Flat()
    tools = (body.get("toolConfig") or {}).get("tools") or []
    for i, tool in enumerate(tools):
        where = f"toolConfig.tools.{i}"
        if isinstance(tool, dict) and "cachePoint" in tool:
            if model.startswith("amazon.nova-"):
                raise _invalid("Prompt caching is not supported for the tools field with this model.")
            f.cache_point(tool["cachePoint"], where)
            continue
        spec = (tool or {}).get("toolSpec") if isinstance(tool, dict) else None
        if not isinstance(spec, dict) or not spec.get("name"):
            raise _invalid(f"{where}.toolSpec.name: Member must not be null")
        schema = (spec.get("inputSchema") or {}).get("json") or {}
        f.tools.append(ToolSpec(spec["name"], spec.get("description") or "", schema))
        ident = canon(spec)
        f.add(encode(ident), "tool:" + ident, where)
    for i, block in enumerate(body.get("system") or []):
        _content_block(f, block, f"system.{i}", "system")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages: Member must not be null" if messages is None
                       else "A conversation must start with a user message. Try again with a conversation that "
                       "starts with a user message.")
    expected = "user"
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant"):
            raise _invalid(f"messages.{i}.role: Member must satisfy enum value set: [user, assistant]")
        if role != expected:
            raise _invalid("A conversation must start with a user message. Try again with a conversation that starts "
                           "with a user message." if i == 0 else "A conversation must alternate between user and "
                           "assistant roles. Make sure the conversation alternates between user and assistant roles "
                           "and try again.")
        expected = "assistant" if role == "user" else "user"
        content = m.get("content")
        if not isinstance(content, list) or not content:
            raise _invalid(f"messages.{i}.content: Member must not be null")
        if f.first_message_block is None:
            f.first_message_block = len(f.blocks)
        texts = [_content_block(f, b, f"messages.{i}.content.{j}", role) for j, b in enumerate(content)]
        if role == "user" and not any(isinstance(b, dict) and "toolResult" in b for b in content):
            f.question, f.tool_result = " ".join(t for t in texts if t), None
    if f.points > MAX_CACHE_POINTS:
        raise _invalid(f"A maximum of {MAX_CACHE_POINTS} cachePoint blocks may be provided. Found {f.points}.")
    return f


class BedrockEmulator:
    vendor = "bedrock"

    def __init__(self, state: EmulatorState, faults: FaultController, auth: BedrockAuth | None = None) -> None:
        self.state, self.faults = state, faults
        self.auth = auth or BedrockAuth()
        self.cache = AnthropicPromptCache(state.clock)

    def clear_caches(self) -> None:
        self.cache.clear()

    async def _begin(self, request: Request, endpoint: str) -> tuple[Call, str]:
        call = await begin(request, self.state, self.faults, emulator="bedrock", endpoint=f"bedrock.{endpoint}",
                           vendor="bedrock", key_of=None)
        scope = request.scope
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        raw_path = scope.get("raw_path") or scope["path"].encode()
        try:
            call.api_key = self.auth.authenticate(scope["method"], raw_path.decode("latin-1"),
                                                  scope.get("query_string", b"").decode("latin-1"), headers,
                                                  await request.body())
        except AwsAuthError as e:
            raise EmulatorError("bedrock", e.status, e.message, type=e.error_type) from None
        body = call.body
        check_depth(body, "bedrock")
        call.body = body
        model = base_model(request.path_params["model_id"])
        if not _MODEL.match(model):
            raise _invalid("The provided model identifier is invalid.")
        return call, model

    async def converse(self, request: Request) -> EmulatorResponse:
        return await self._run(request, stream=False)

    async def converse_stream(self, request: Request) -> EmulatorResponse:
        return await self._run(request, stream=True)

    async def _run(self, request: Request, *, stream: bool) -> EmulatorResponse:
        call, model = await self._begin(request, "converse_stream" if stream else "converse")
        body = call.body
        cfg = body.get("inferenceConfig") or {}
        max_tokens = cfg.get("maxTokens")
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            raise _invalid("inferenceConfig.maxTokens: Member must have value greater than or equal to 1")
        f = flatten(body, model)
        caching = supports_caching(model)
        if f.points and not caching:
            raise _invalid("You invoked an unsupported model or your request did not allow prompt caching.")
        choice_cfg = (body.get("toolConfig") or {}).get("toolChoice") or {}
        choice = "any" if "any" in choice_cfg else (choice_cfg.get("tool") or {}).get("name") or "auto"
        plan = (self.cache.lookup((call.api_key, model), f.blocks, min_cache_tokens(model), f.first_message_block,
                                  canon(choice_cfg)) if caching else
                AnthropicPlan(total=sum(len(b.tokens) for b in f.blocks)))
        g = generate(model=model, conversation_key="\x1e".join(b.identity for b in f.blocks), question=f.question,
                     target_tokens=call.target_tokens, max_tokens=max_tokens,
                     stop=list(cfg.get("stopSequences") or []), tools=f.tools, tool_choice=choice,
                     tool_result=f.tool_result)
        usage = _usage(plan, g.output_tokens, caching)
        ttft = call.latency.ttft(plan.input_tokens + plan.creation, plan.read)
        stop = "stop_sequence" if g.stop_sequence else STOP[g.finish]
        headers = {"x-amzn-requestid": _request_id()}
        started = time.monotonic()
        if stream:
            return EmulatorResponse(chunks=self._events(g, plan, usage, stop, ttft, call, started), headers=headers,
                                    media_type="application/vnd.amazon.eventstream", fault=call.fault)
        await pause(ttft)
        plan.commit()
        await pause(call.latency.decode(g.output_tokens))
        out = {"output": {"message": {"role": "assistant", "content": _content(g)}}, "stopReason": stop,
               "usage": usage, "metrics": {"latencyMs": int((time.monotonic() - started) * 1000)}}
        return json_response(out, headers=headers, fault=call.fault)

    async def _events(self, g: Generated, plan: AnthropicPlan, usage: dict[str, Any], stop: str, ttft: float,
                      call: Call, started: float) -> AsyncIterator[bytes]:
        error_after = call.fault.stream_error_after if call.fault else None
        events: list[tuple[bool, str, dict[str, Any]]] = [(False, "messageStart", {"role": "assistant"})]
        index = 0
        if g.text or not g.tool_calls:
            events += [(True, "contentBlockDelta", {"delta": {"text": p}, "contentBlockIndex": 0})
                       for p in get_tokenizer().pieces(g.tokens)]
            events.append((False, "contentBlockStop", {"contentBlockIndex": 0}))
            index = 1
        for i, c in enumerate(g.tool_calls):
            n = index + i
            events.append((False, "contentBlockStart", {"start": {"toolUse": {"toolUseId": _tool_id(c.id_seed, i),
                                                                              "name": c.name}},
                                                        "contentBlockIndex": n}))
            args = c.arguments_json
            step = max(1, len(args) // 4)
            events += [(True, "contentBlockDelta", {"delta": {"toolUse": {"input": args[k:k + step]}},
                                                    "contentBlockIndex": n}) for k in range(0, len(args), step)]
            events.append((False, "contentBlockStop", {"contentBlockIndex": n}))
        events.append((False, "messageStop", {"stopReason": stop}))
        await pause(ttft)
        plan.commit()
        deltas = 0
        for n, (is_delta, name, payload) in enumerate(events):
            if error_after is not None and n >= error_after:
                yield eventstream.exception("internalServerException", "The system encountered an unexpected error "
                                            "during processing. Try your request again.")
                return
            if is_delta:
                if deltas:
                    await pause(call.latency.inter_token_s)
                deltas += 1
            yield eventstream.event(name, payload)
        yield eventstream.event("metadata", {"usage": usage,
                                             "metrics": {"latencyMs": int((time.monotonic() - started) * 1000)}})


def _content(g: Generated) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if g.text or not g.tool_calls:
        out.append({"text": g.text})
    out += [{"toolUse": {"toolUseId": _tool_id(c.id_seed, i), "name": c.name, "input": c.arguments}}
            for i, c in enumerate(g.tool_calls)]
    return out


def _tool_id(seed: str, index: int) -> str:
    return "tooluse_" + base64.urlsafe_b64encode(hashlib.sha256(f"{seed}:{index}".encode()).digest())[:22].decode()


def _request_id() -> str:
    h = hashlib.sha256(str(time.time_ns()).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _usage(plan: AnthropicPlan, output_tokens: int, caching: bool) -> dict[str, Any]:
    usage: dict[str, Any] = {"inputTokens": plan.input_tokens, "outputTokens": output_tokens,
                             "totalTokens": plan.total + output_tokens}
    if caching:
        usage["cacheReadInputTokens"] = plan.read
        usage["cacheWriteInputTokens"] = plan.creation
        details = [{"ttl": t, "inputTokens": n} for t, n in (("1h", plan.creation_1h), ("5m", plan.creation_5m)) if n]
        if details:
            usage["cacheDetails"] = details
    return usage
