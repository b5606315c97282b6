"""The Gemini emulator (Generative Language API), under both `/v1beta` and `/v1` (google-genai 3.x uses v1):
`models/{m}:generateContent`, `:streamGenerateContent` (`?alt=sse`: `data: <json>` chunks, no `[DONE]`),
`:countTokens`, `GET models`, and `cachedContents` create/get/list/patch/delete.

Auth: `x-goog-api-key` or `?key=`. Like the API (not like the other vendors): a missing key is 403
PERMISSION_DENIED, an invalid key 400 INVALID_ARGUMENT "API key not valid".
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request

from gateway_dev.emulators.answers import Generated, ToolSpec, generate
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.gemini_cache import (
    LATEST,
    CachedContentRecord,
    CachedContentStore,
    ImplicitCache,
    parse_duration,
    parse_rfc3339,
)
from gateway_dev.emulators.gemini_wire import FINISH, _body, _err, _model_resource, _parts, _response, _usage
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.models import (
    GEMINI_MODELS,
    gemini_implicit_caching,
    gemini_min_cache,
    gemini_thinking_tokens,
    is_gemini_model,
)
from gateway_dev.emulators.openai_render import canon
from gateway_dev.emulators.shapes_gemini import CachedContent, CountTokensRequest, GenerateContentRequest
from gateway_dev.emulators.tokens import encode, get_tokenizer, synthetic_tokens
from gateway_dev.emulators.web import Call, EmulatorResponse, EmulatorState, begin, json_response, new_id

NOT_FOUND = "CachedContent not found (or permission denied)"


class GeminiPrompt:
    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.segments: list[str] = []
        self.question = ""
        self.tool_result: str | None = None
        self.tools: list[ToolSpec] = []
        self.called: set[str] = set()  # functions the model already called in the conversation

    def text(self, s: str) -> None:
        if s:
            self.tokens.extend(encode(s))
            self.segments.append(s)

    def mark(self, s: str) -> None:
        """A structural marker: part of the answer seed, no tokens (countTokens counts content only)."""
        self.segments.append(s)

    def extend(self, body: dict[str, Any]) -> GeminiPrompt:
        system = body.get("systemInstruction")
        if system:
            self.mark("<system>")
            for part in system.get("parts") or []:
                self.text(part.get("text") or "")
        for tool in body.get("tools") or []:
            for fd in tool.get("functionDeclarations") or []:
                if fd.get("name"):
                    self.tools.append(ToolSpec(fd["name"], fd.get("description") or "",
                                               fd.get("parameters") or fd.get("parametersJsonSchema") or {}))
            self.text(canon(tool))
        if body.get("toolConfig"):
            self.mark("<toolConfig>" + canon(body["toolConfig"]))
        contents = body.get("contents") or []
        if not isinstance(contents, list):
            raise _err(400, "Invalid value at 'contents': expected a list")
        for c in contents:
            role = c.get("role") or "user"
            self.mark(f"<{role}>")
            texts: list[str] = []
            for part in c.get("parts") or []:
                if part.get("text") is not None:  # `"text": null` is an unset field in proto3 JSON
                    self.text(part["text"])
                    texts.append(part["text"])
                elif "inlineData" in part or "fileData" in part:
                    data = part.get("inlineData") or part.get("fileData") or {}
                    key = data.get("data") or data.get("fileUri") or ""
                    self.tokens.extend(synthetic_tokens(key, 258))
                    self.segments.append(f"[media:{key[:64]}:{len(key)}]")
                elif "functionCall" in part:
                    if isinstance((part["functionCall"] or {}).get("name"), str):
                        self.called.add(part["functionCall"]["name"])
                    self.text(canon(part))
                elif "functionResponse" in part:
                    self.text(canon(part["functionResponse"]))
                    self.tool_result = canon((part["functionResponse"] or {}).get("response"))
                else:
                    self.text(canon(part))
            if role == "user" and texts:
                self.question, self.tool_result = " ".join(texts), None
        return self


class GeminiEmulator:
    vendor = "gemini"

    def __init__(self, state: EmulatorState, faults: FaultController) -> None:
        self.state, self.faults = state, faults
        self.caches = CachedContentStore(state.clock)
        self.implicit = ImplicitCache(state.clock)

    def key_of(self, request: Request) -> str:
        key = request.headers.get("x-goog-api-key") or request.query_params.get("key")
        if not key:
            raise _err(403, "Method doesn't allow unregistered callers (callers without established identity). "
                       "Please use API Key or other form of API consumer identity to call this API.")
        if self.state.valid_keys is not None and key not in self.state.valid_keys:
            raise _err(400, "API key not valid. Please pass a valid API key.")
        return key

    async def _begin(self, request: Request, endpoint: str, json_body: bool = True) -> Call:
        return await begin(request, self.state, self.faults, emulator="gemini", endpoint=f"gemini.{endpoint}",
                           vendor="gemini", key_of=self.key_of, json_body=json_body)

    # -- models ---------------------------------------------------------------------------------------
    async def model_call(self, request: Request) -> EmulatorResponse:
        rest = request.path_params["rest"]
        model, _, method = rest.rpartition(":")
        if method == "generateContent":
            return await self.generate(request, model, stream=False)
        if method == "streamGenerateContent":
            return await self.generate(request, model, stream=True)
        if method == "countTokens":
            call = await self._begin(request, "countTokens")
            body = _body(call, CountTokensRequest)
            inner = body.get("generateContentRequest") or body
            prompt = GeminiPrompt().extend(inner)
            return json_response({"totalTokens": len(prompt.tokens)}, fault=call.fault)
        call = await self._begin(request, "model_call")
        raise _err(404, f"Method {method!r} not found for models/{model}.", "NOT_FOUND")

    async def list_models(self, request: Request) -> EmulatorResponse:
        call = await self._begin(request, "models", json_body=False)
        return json_response({"models": [_model_resource(m) for m in GEMINI_MODELS]}, fault=call.fault)

    async def get_model(self, request: Request, model: str) -> EmulatorResponse:
        call = await self._begin(request, "models", json_body=False)
        if not is_gemini_model(model):
            raise _err(404, f"models/{model} is not found for API version, or is not supported.", "NOT_FOUND")
        return json_response(_model_resource(model), fault=call.fault)

    async def generate(self, request: Request, model: str, *, stream: bool) -> EmulatorResponse:
        call = await self._begin(request, "streamGenerateContent" if stream else "generateContent")
        body = _body(call, GenerateContentRequest)
        model = model.removeprefix("models/")
        if not is_gemini_model(model):
            raise _err(404, f"models/{model} is not found for API version {request.path_params['version']}, or is "
                       "not supported for generateContent.", "NOT_FOUND")
        if not body.get("contents"):
            raise _err(400, "* GenerateContentRequest.contents: contents is not specified\n")
        cached_tokens = 0
        prompt = GeminiPrompt()
        name = body.get("cachedContent")
        if name:
            if any(body.get(k) for k in ("systemInstruction", "tools", "toolConfig")):
                raise _err(400, "CachedContent can not be used with GenerateContent request setting "
                           "system_instruction, tools or tool_config.\n\nProposed fix: move those values to "
                           "CachedContent from GenerateContent request.")
            rec = self.caches.get(_cache_name(name), call.api_key)
            if rec is None:
                raise _err(403, NOT_FOUND)
            if rec.model != f"models/{model}":
                raise _err(400, f"Model used by GenerateContent request (models/{model}) and CachedContent "
                           f"({rec.model}) has to be the same.")
            prompt.tokens, prompt.segments, prompt.question = list(rec.tokens), list(rec.segments), rec.question
            cached_tokens = len(rec.tokens)
        prompt.extend(body)
        implicit = not name and gemini_implicit_caching(model)
        if implicit:
            cached_tokens = self.implicit.lookup((call.api_key, model), prompt.tokens, gemini_min_cache(model))
        cfg = body.get("generationConfig") or {}
        thinking = cfg.get("thinkingConfig") or {}
        mode = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode", "AUTO")
        allowed = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("allowedFunctionNames")
        choice = {"NONE": "none", "ANY": (allowed[0] if allowed and len(allowed) == 1 else "any")}.get(mode, "auto")
        schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
        json_mode = cfg.get("responseMimeType") == "application/json"
        key = "\x1e".join(prompt.segments)
        if schema is not None or json_mode:  # the schema shapes the answer, not the prompt's tokens
            key += "\x1e<responseSchema>" + canon(schema)
        g = generate(model=model, conversation_key=key, question=prompt.question,
                     target_tokens=call.target_tokens, max_tokens=cfg.get("maxOutputTokens"),
                     stop=list(cfg.get("stopSequences") or []), tools=prompt.tools, tool_choice=choice,
                     tool_result=prompt.tool_result, called_tools=frozenset(prompt.called),
                     json_schema=schema if isinstance(schema, dict) else None,
                     json_object=json_mode and not isinstance(schema, dict),
                     reasoning_tokens=gemini_thinking_tokens(model, thinking.get("thinkingBudget")),
                     reasoning_text=thinking.get("includeThoughts") is True)
        n_in = len(prompt.tokens)
        usage = _usage(n_in, cached_tokens, g)
        rid = new_id("", 22)

        def commit() -> None:
            if implicit:
                self.implicit.remember((call.api_key, model), prompt.tokens)

        ttft = call.latency.ttft(n_in - cached_tokens, cached_tokens)
        if stream:
            chunks = self._chunks(model, rid, g, usage, ttft, commit, call)
            if request.query_params.get("alt") != "sse":  # without alt=sse the API streams one JSON array
                parts = [c async for c in chunks]
                return EmulatorResponse(body=b"[" + b",".join(p[6:-4] for p in parts) + b"]", fault=call.fault)
            return EmulatorResponse(chunks=chunks, fault=call.fault)
        await pause(ttft)
        commit()
        await pause(call.latency.decode(g.output_tokens))
        return json_response(_response(model, rid, g, _parts(g), FINISH[g.finish], usage), fault=call.fault)

    async def _chunks(self, model: str, rid: str, g: Generated, usage: dict[str, Any], ttft: float, commit: Any,
                      call: Call) -> AsyncIterator[bytes]:
        import orjson

        def frame(obj: Any) -> bytes:
            return b"data: " + orjson.dumps(obj) + b"\r\n\r\n"

        error_after = call.fault.stream_error_after if call.fault else None
        await pause(ttft)
        commit()
        tok = get_tokenizer()
        pieces = tok.pieces(g.tokens)
        groups: list[tuple[str, bool]] = []
        if g.reasoning_text:  # thought summaries stream before the answer, as parts marked `thought`
            thought = tok.pieces(tok.encode(g.reasoning_text))
            groups += [("".join(thought[i:i + 8]), True) for i in range(0, len(thought), 8)]
        groups += [("".join(pieces[i:i + 8]), False) for i in range(0, len(pieces), 8)] or [("", False)]
        if groups[-1][1]:
            groups.append(("", False))
        partial = {"promptTokenCount": usage["promptTokenCount"], "totalTokenCount": usage["promptTokenCount"]}
        for n, (text, is_thought) in enumerate(groups):
            if error_after is not None and n >= error_after:
                yield frame({"error": {"code": 503, "message": "The model is overloaded. Please try again later.",
                                       "status": "UNAVAILABLE"}})
                return
            if n:
                await pause(call.latency.inter_token_s * 8)
            last = n == len(groups) - 1
            part: dict[str, Any] = {"text": text, "thought": True} if is_thought else {"text": text}
            parts = _parts(g, thoughts=False) if (last and g.tool_calls) else [part]
            yield frame(_response(model, rid, g, parts, FINISH[g.finish] if last else None,
                                  usage if last else partial))

    # -- cachedContents -------------------------------------------------------------------------------
    async def create_cache(self, request: Request) -> EmulatorResponse:
        call = await self._begin(request, "cachedContents.create")
        body = _body(call, CachedContent)
        model = body.get("model")
        if not model:
            raise _err(400, "* CreateCachedContentRequest.cached_content.model: model is required\n")
        model = model if model.startswith("models/") else f"models/{model}"
        prompt = GeminiPrompt().extend(body)
        minimum = gemini_min_cache(model.removeprefix("models/"))
        if len(prompt.tokens) < minimum:
            raise _err(400, f"Cached content is too small. total_token_count={len(prompt.tokens)}, "
                       f"min_total_token_count={minimum}")
        now = self.state.clock.now()
        try:
            expire = _expiry(body, now) or now + 3600.0  # "If not set, the TTL defaults to 1 hour"
        except ValueError as e:
            raise _err(400, str(e)) from None
        rec = CachedContentRecord(self.caches.new_name(call.api_key), call.api_key, model,
                                  body.get("displayName") or "", now, now, expire, prompt.tokens, prompt.segments,
                                  prompt.question, bool(body.get("systemInstruction")))
        self.caches.add(rec)
        return json_response(rec.resource(), fault=call.fault)

    async def cache_item(self, request: Request) -> EmulatorResponse:
        method = request.method
        call = await self._begin(request, f"cachedContents.{method.lower()}", json_body=method == "PATCH")
        name = "cachedContents/" + request.path_params["cache_id"]
        rec = self.caches.get(name, call.api_key)
        if rec is None:
            raise _err(403, NOT_FOUND)
        if method == "DELETE":
            self.caches.delete(name)
            return json_response({}, fault=call.fault)
        if method == "PATCH":
            now = self.state.clock.now()
            try:
                expire = _expiry(_body(call, CachedContent), now)
            except ValueError as e:
                raise _err(400, str(e)) from None
            if expire is None:
                raise _err(400, "Only expiration (ttl or expire_time) can be updated in a CachedContent.")
            rec.expire_time, rec.update_time = expire, now
        return json_response(rec.resource(), fault=call.fault)

    async def list_caches(self, request: Request) -> EmulatorResponse:
        call = await self._begin(request, "cachedContents.list", json_body=False)
        records = self.caches.list(call.api_key)
        try:
            size = int(request.query_params.get("pageSize") or 50)
            start = int(request.query_params.get("pageToken") or 0)
        except ValueError:
            raise _err(400, "Invalid pageSize or pageToken.") from None
        size, start = size if size > 0 else 50, max(start, 0)  # pageSize <= 0: the default, as the API does
        page = records[start:start + size]
        out: dict[str, Any] = {}
        if page:
            out["cachedContents"] = [r.resource() for r in page]
        if start + size < len(records):
            out["nextPageToken"] = str(start + size)
        return json_response(out, fault=call.fault)


def _cache_name(name: str) -> str:
    return name if name.startswith("cachedContents/") else f"cachedContents/{name}"


def _expiry(body: dict[str, Any], now: float) -> float | None:
    if body.get("ttl") is not None and body.get("expireTime") is not None:
        raise ValueError("Only one of ttl and expire_time may be set.")
    if body.get("ttl") is not None:
        expire = now + parse_duration(body["ttl"])
    elif body.get("expireTime") is not None:
        expire = parse_rfc3339(body["expireTime"])
    else:
        return None
    if not 0 <= expire <= LATEST:
        raise ValueError("expire_time is out of range.")
    return expire
