"""The OpenAI emulator: `POST /v1/chat/completions`, `/v1/responses` (openai_responses.py), `/v1/embeddings`,
`GET /v1/models`, with the prompt cache of openai_cache.py and OpenAI's own error bodies."""

from __future__ import annotations

import base64
import zlib
from typing import Any

import numpy as np
from starlette.requests import Request

from gateway_dev.emulators.answers import Generated, generate
from gateway_dev.emulators.chat_wire import ChatOutcome, completion_body, completion_chunks, fingerprint
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.models import (
    DEEPSEEK_MODELS,
    EMBEDDING_DIMS,
    OPENAI_MODELS,
    base_name,
    is_openai_model,
    openai_breakpoint_regime,
    openai_is_reasoning,
    openai_reasoning_tokens,
    openai_retentions,
)
from gateway_dev.emulators.openai_cache import Breakpoint, CachePlan, OpenAIPromptCache
from gateway_dev.emulators.openai_render import Prompt, render_chat
from gateway_dev.emulators.shapes import check
from gateway_dev.emulators.shapes_openai import ChatCompletionRequest, EmbeddingsRequest
from gateway_dev.emulators.tokens import encode
from gateway_dev.emulators.web import (
    Call,
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

_NO_KEY = ("You didn't provide an API key. You need to provide your API key in an Authorization header using "
           "Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if "
           "you're accessing the API from your browser and are prompted for a username and password. You can "
           "obtain an API key from https://platform.openai.com/account/api-keys.")


def _err(status: int, message: str, *, param: str | None = None, code: str | None = None) -> EmulatorError:
    return EmulatorError("openai", status, message, param=param, code=code)


class OpenAIEmulator:
    vendor = "openai"

    def __init__(self, state: EmulatorState, faults: FaultController, *, zdr: bool = False) -> None:
        self.state, self.faults = state, faults
        self.cache = OpenAIPromptCache(state.clock)
        self.zdr = zdr  # ZDR orgs default to in_memory retention where both are offered

    # -- common ---------------------------------------------------------------------------------------
    def key_of(self, request: Request) -> str:
        key = bearer(request)
        if not key:
            raise EmulatorError("openai", 401, _NO_KEY, type="invalid_request_error")
        if self.state.valid_keys is not None and key not in self.state.valid_keys:
            raise EmulatorError("openai", 401, f"Incorrect API key provided: {mask_key(key)}. You can find your API "
                                "key at https://platform.openai.com/account/api-keys.", type="invalid_request_error",
                                code="invalid_api_key")
        return key

    async def begin(self, request: Request, endpoint: str, *, json_body: bool = True) -> Call:
        return await begin(request, self.state, self.faults, emulator="openai", endpoint=f"openai.{endpoint}",
                           vendor="openai", key_of=self.key_of, json_body=json_body)

    @staticmethod
    def check_model(body: dict[str, Any], *, chat: bool = True) -> str:
        model = body.get("model")
        if not model or not isinstance(model, str):
            raise _err(400, "you must provide a model parameter", param="model")
        if not is_openai_model(model):
            raise _err(404, f"The model `{model}` does not exist or you do not have access to it.",
                       code="model_not_found")
        if chat and model.startswith("text-embedding-"):
            raise _err(404, "This is not a chat model and thus not supported in the v1/chat/completions endpoint. "
                       "Did you mean to use v1/completions?", param="model")
        return model

    def plan(self, call: Call, body: dict[str, Any], prompt: Prompt, *,
             responses: bool) -> tuple[CachePlan, bool, str]:
        """Validate the caching parameters and look the prompt up; returns (plan, breakpoint regime, the
        effective retention)."""
        model = body["model"]
        v2 = openai_breakpoint_regime(model)
        opts = body.get("prompt_cache_options")
        if not v2 and opts is not None:
            raise _err(400, "Unsupported parameter: 'prompt_cache_options' is not supported with this model.",
                       param="prompt_cache_options", code="unsupported_parameter")
        if not v2 and prompt.breakpoints:
            raise _err(400, "Unsupported parameter: 'prompt_cache_breakpoint' is not supported with this model.",
                       param="prompt_cache_breakpoint", code="unsupported_parameter")
        allowed = openai_retentions(model)
        asked = body.get("prompt_cache_retention")
        if asked is None:
            retention = "in_memory" if self.zdr and "in_memory" in allowed else allowed[0]
        else:
            retention = "in_memory" if asked in ("in_memory", "in-memory") else asked
            if retention not in ("in_memory", "24h"):
                raise _err(400, f"Invalid value: '{asked}'. Supported values are: 'in_memory' and '24h'.",
                           param="prompt_cache_retention", code="invalid_value")
            if retention not in allowed:
                raise _err(400, f"prompt_cache_retention '{asked}' is not supported with model '{model}'.",
                           param="prompt_cache_retention", code="unsupported_value")
        ns = (call.api_key, base_name(model), body.get("prompt_cache_key"))
        if not v2:
            return self.cache.lookup_classic(ns, prompt.tokens, retention), False, retention
        opts = opts if isinstance(opts, dict) else {}
        ttls = ("30m", "12h") if responses else ("30m",)
        ttl = opts.get("ttl", "30m")
        for t in [ttl, *(b.ttl for b in prompt.breakpoints)]:
            if t not in ttls:
                raise _err(400, f"Invalid value: '{t}'. Supported values are: {', '.join(repr(x) for x in ttls)}.",
                           param="prompt_cache_options.ttl", code="invalid_value")
        mode = opts.get("mode", "implicit")
        if mode not in ("implicit", "explicit"):
            raise _err(400, f"Invalid value: '{mode}'. Supported values are: 'implicit' and 'explicit'.",
                       param="prompt_cache_options.mode", code="invalid_value")
        bps = list(prompt.breakpoints)
        if mode == "implicit" and prompt.message_ends:
            bps.append(Breakpoint(prompt.message_ends[-1], ttl, implicit=True))
        return self.cache.lookup_breakpoints(ns, prompt.tokens, bps), True, retention

    # -- chat -----------------------------------------------------------------------------------------
    async def chat(self, request: Request) -> EmulatorResponse:
        call = await self.begin(request, "chat")
        body = call.body
        check(ChatCompletionRequest, body, "openai")
        model = self.check_model(body)
        stream = bool(body.get("stream"))
        if body.get("stream_options") is not None and not stream:
            raise _err(400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                       param="stream_options", code="invalid_value")
        reasoning = openai_reasoning_tokens(model, body.get("reasoning_effort"))
        if openai_is_reasoning(model):
            if body.get("max_tokens") is not None:
                raise _err(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                           "'max_completion_tokens' instead.", param="max_tokens", code="unsupported_parameter")
            temp = body.get("temperature")
            if temp is not None and temp != 1:
                raise _err(400, f"Unsupported value: 'temperature' does not support {temp} with this model. Only the "
                           "default (1) value is supported.", param="temperature", code="unsupported_value")
        prompt = render_chat(body)
        plan, v2, _ = self.plan(call, body, prompt, responses=False)
        choices = [self.answer(call, body, prompt, reasoning, i) for i in range(int(body.get("n") or 1))]
        n_in = len(prompt.tokens)
        n_out = sum(g.output_tokens for g in choices)
        details: dict[str, int] = {"cached_tokens": plan.cached_tokens, "audio_tokens": 0}
        if v2:
            details["cache_write_tokens"] = plan.write_tokens
        usage = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out,
                 "prompt_tokens_details": details,
                 "completion_tokens_details": {"reasoning_tokens": sum(g.reasoning_tokens for g in choices),
                                               "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                               "rejected_prediction_tokens": 0}}
        stream_options = body.get("stream_options") or {}
        outcome = ChatOutcome(new_id("chatcmpl-", 29), model, int(self.state.clock.now()), choices, usage,
                              system_fingerprint=fingerprint(model), service_tier="default",
                              obfuscation=stream_options.get("include_obfuscation", True) is not False)
        ttft = call.latency.ttft(n_in - plan.cached_tokens, plan.cached_tokens)
        headers = {"x-request-id": new_id("req_", 32), "openai-processing-ms": str(int(ttft * 1000))}
        if stream:
            async def prefill() -> None:
                await pause(ttft)
                plan.commit()

            fault = call.fault
            chunks = completion_chunks(
                outcome, include_usage=bool(stream_options.get("include_usage")),
                inter_token_s=call.latency.inter_token_s, before_first=prefill,
                error_after=fault.stream_error_after if fault else None,
                error_body=error_body(EmulatorError("openai", 500)))
            return EmulatorResponse(chunks=chunks, headers=headers, fault=fault)
        await pause(ttft)
        plan.commit()
        await pause(call.latency.decode(max(g.output_tokens for g in choices)))
        return json_response(completion_body(outcome), headers=headers, fault=call.fault)

    def answer(self, call: Call, body: dict[str, Any], prompt: Prompt, reasoning: int, index: int) -> Generated:
        fmt = body.get("response_format") or {}
        stop = body.get("stop")
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            choice = (choice.get("function") or {}).get("name")
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        return generate(
            model=body["model"], conversation_key=prompt.key + (f"\x1f{index}" if index else ""),
            question=prompt.question, target_tokens=call.target_tokens, max_tokens=max_tokens,
            stop=[stop] if isinstance(stop, str) else list(stop or []), tools=prompt.tools, tool_choice=choice,
            tool_result=prompt.tool_result, called_tools=called_tools(body),
            json_schema=(fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None,
            json_object=fmt.get("type") == "json_object", reasoning_tokens=reasoning)

    # -- embeddings and models ------------------------------------------------------------------------
    async def embeddings(self, request: Request) -> EmulatorResponse:
        call = await self.begin(request, "embeddings")
        body = call.body
        check(EmbeddingsRequest, body, "openai")
        model = self.check_model(body, chat=False)
        texts = _embedding_texts(body.get("input"))
        native = EMBEDDING_DIMS.get(model, 1536)
        dims = body.get("dimensions") or native
        if dims > native:
            raise _err(400, f"This model's maximum dimensions is {native}; {dims} was requested.", param="dimensions",
                       code="invalid_value")
        tokens = sum(len(encode(t)) for t in texts)
        data = []
        for i, t in enumerate(texts):
            vec = hashed_embedding(t, dims)
            emb: Any = (base64.b64encode(vec.astype("<f4").tobytes()).decode()
                        if body.get("encoding_format") == "base64" else vec.tolist())
            data.append({"object": "embedding", "index": i, "embedding": emb})
        await pause(call.latency.ttft(tokens))
        return json_response({"object": "list", "data": data, "model": model,
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}, fault=call.fault)

    async def models(self, request: Request) -> EmulatorResponse:
        call = await self.begin(request, "models", json_body=False)
        data = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "openai"} for m in OPENAI_MODELS]
        data += [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "deepseek"}
                 for m in DEEPSEEK_MODELS]
        return json_response({"object": "list", "data": data}, fault=call.fault)

    async def model(self, request: Request) -> EmulatorResponse:
        call = await self.begin(request, "models", json_body=False)
        model = request.path_params["model"]
        if not is_openai_model(model):
            raise _err(404, f"The model '{model}' does not exist", param="model", code="model_not_found")
        return json_response({"id": model, "object": "model", "created": 1_700_000_000, "owned_by": "openai"},
                             fault=call.fault)


def called_tools(body: dict[str, Any]) -> frozenset[str]:
    """Names of the tools the assistant already called: Chat `tool_calls`, Responses `function_call` items."""
    names: set[str] = set()
    for m in body.get("messages") or []:
        for call in (m.get("tool_calls") or []) if isinstance(m, dict) else []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                names.add(fn["name"])
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call" and isinstance(item.get("name"), str):
            names.add(item["name"])
    return frozenset(names)


def _embedding_texts(raw: Any) -> list[str]:
    """`input` as texts: a string, an array of strings, an array of token ids, or an array of such arrays."""
    def ids(x: Any) -> bool:
        return isinstance(x, list) and bool(x) and all(type(t) is int for t in x)

    if isinstance(raw, str) and raw:
        return [raw]
    if ids(raw):
        return [" ".join(map(str, raw))]
    if isinstance(raw, list) and raw and all((isinstance(x, str) and x) or ids(x) for x in raw):
        return [x if isinstance(x, str) else " ".join(map(str, x)) for x in raw]
    raise _err(400, "'$.input' is invalid. Please check the API reference: "
               "https://platform.openai.com/docs/api-reference.", param="input")


def hashed_embedding(text: str, dims: int) -> np.ndarray:
    """A deterministic unit vector from hashed word and character-trigram features: texts sharing words
    are closer than unrelated ones (good enough for the semantic-cache plumbing; not a language model)."""
    vec = np.zeros(dims, dtype=np.float32)
    lowered = text.lower()
    words = lowered.split()
    feats = [("w", w) for w in words] + [("c", lowered[i:i + 3]) for i in range(max(0, len(lowered) - 2))]
    for kind, f in feats:
        h = zlib.crc32(f"{kind}:{f}".encode())
        vec[h % dims] += (1.0 if (h >> 31) & 1 else -1.0) * (2.0 if kind == "w" else 1.0)
    norm = float(np.linalg.norm(vec))
    if norm == 0:
        vec[0] = 1.0
        return vec
    return vec / norm
