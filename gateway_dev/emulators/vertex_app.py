"""The Vertex AI emulator: Gemini on Google Cloud, as google-genai sends it with `vertexai=True`.

    POST /{v1,v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent
    POST .../models/{m}:streamGenerateContent?alt=sse    POST .../models/{m}:countTokens
    POST|GET /{v}/projects/{p}/locations/{l}/cachedContents   GET|PATCH|DELETE .../cachedContents/{id}
    POST /token                                            the OAuth token endpoint (vertex_auth.py)

Auth: `Authorization: Bearer <access token>` minted at `/token`; a missing or invalid one is 401 UNAUTHENTICATED,
a token of another project's service account 403 PERMISSION_DENIED. Bodies, answers and `usageMetadata` are
Gemini's (gemini_app.py) plus Vertex's `trafficType`. Context caches are regional resources of a project: a
CachedContent created in one location is named `projects/{project number}/locations/{location}/cachedContents/{id}`,
listed and usable only from that location (from another it is not found); the minimum is 2,048 tokens and the
default TTL 60 minutes. Implicit caching remembers prompts per (project, location, model).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.requests import Request

from gateway_dev.emulators.answers import generate
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.gemini_app import GeminiPrompt, _expiry
from gateway_dev.emulators.gemini_cache import ImplicitCache, rfc3339
from gateway_dev.emulators.gemini_wire import FINISH, _body, _parts, _response, _usage
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.models import gemini_implicit_caching, gemini_thinking_tokens
from gateway_dev.emulators.shapes_gemini import CachedContent, CountTokensRequest, GenerateContentRequest
from gateway_dev.emulators.tokens import get_tokenizer
from gateway_dev.emulators.vertex_auth import AccessToken, VertexAuth, project_number
from gateway_dev.emulators.web import (
    Call,
    EmulatorError,
    EmulatorResponse,
    EmulatorState,
    bearer,
    begin,
    json_response,
    new_id,
)

VERTEX_MIN_CACHE = 2048  # "Caching requests must contain a minimum of 2,048 tokens."
VERSIONS = ("v1", "v1beta1")
_LOCATION = re.compile(r"^(global|[a-z]+(-[a-z]+)+\d*)$")
_MODEL_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/publishers/([^/]+)/models/([^/:]+)$")
_CACHE_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/cachedContents/([^/]+)$")
_MISSING = ("Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or "
            "other valid authentication credential. See https://developers.google.com/identity/sign-in/web/"
            "devconsole-project.")
_INVALID = ("Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
            "valid authentication credential. See https://developers.google.com/identity/sign-in/web/"
            "devconsole-project.")


def _err(status: int, message: str, word: str | None = None) -> EmulatorError:
    return EmulatorError("gemini", status, message, type=word)


@dataclass
class VertexCache:
    number: str
    location: str
    cache_id: str
    model: str  # full resource name, project number
    display_name: str
    create_time: float
    update_time: float
    expire_time: float
    prompt: GeminiPrompt

    @property
    def name(self) -> str:
        return f"projects/{self.number}/locations/{self.location}/cachedContents/{self.cache_id}"

    @property
    def model_id(self) -> str:
        return self.model.rsplit("/", 1)[-1]

    def resource(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "model": self.model, "createTime": rfc3339(self.create_time),
                               "updateTime": rfc3339(self.update_time), "expireTime": rfc3339(self.expire_time),
                               "usageMetadata": {"totalTokenCount": len(self.prompt.tokens)}}
        if self.display_name:
            out["displayName"] = self.display_name
        return out


@dataclass
class VertexConfig:
    """Projects (id -> number; a registered service account's project joins automatically) and, optionally, the
    only locations served (None: any well-formed region name)."""

    projects: dict[str, str] = field(default_factory=dict)
    locations: set[str] | None = None

    def number(self, project: str) -> str | None:
        if project in self.projects:
            return self.projects[project]
        return project if project in self.projects.values() else None


class VertexEmulator:
    vendor = "vertex"

    def __init__(self, state: EmulatorState, faults: FaultController, config: VertexConfig | None = None,
                 auth: VertexAuth | None = None) -> None:
        self.state, self.faults = state, faults
        self.config = config or VertexConfig()
        self.auth = auth or VertexAuth()
        self.caches: dict[str, VertexCache] = {}
        self.implicit = ImplicitCache(state.clock)
        self._serial = 0

    def clear_caches(self) -> None:
        self.caches.clear()
        self.implicit.clear()

    def register_service_account(self, info: dict[str, Any], public_key_pem: str) -> None:
        self.auth.register_info(info, public_key_pem)
        self.config.projects.setdefault(info["project_id"], project_number(info["project_id"]))

    # -- common ---------------------------------------------------------------------------------------
    async def _begin(self, request: Request, endpoint: str, json_body: bool = True) -> tuple[Call, str, str]:
        """Count, fault, check the token and the path's project/location: (call, project number, location)."""
        call = await begin(request, self.state, self.faults, emulator="vertex", endpoint=f"vertex.{endpoint}",
                           vendor="gemini", key_of=None, json_body=json_body)
        p = request.path_params
        if p.get("version") not in VERSIONS:
            raise _err(404, f"Invalid version {p.get('version')!r} in the request path.", "NOT_FOUND")
        token = self._token(request)
        location = p["location"]
        if not _LOCATION.match(location) or (self.config.locations is not None
                                             and location not in self.config.locations):
            raise _err(400, f"Unsupported region for Vertex AI, select from a supported region. Got: {location}",
                       "INVALID_ARGUMENT")
        number = self.config.number(p["project"])
        if number is None or self.config.number(token.project_id) != number:
            raise _err(403, f"Permission denied on resource project {p['project']}.", "PERMISSION_DENIED")
        call.api_key = token.client_email
        return call, number, location

    def _token(self, request: Request) -> AccessToken:
        raw = bearer(request)
        if raw is None:
            raise _err(401, _MISSING, "UNAUTHENTICATED")
        token = self.auth.check(raw)
        if token is None:
            raise _err(401, _INVALID, "UNAUTHENTICATED")
        return token

    # -- models ---------------------------------------------------------------------------------------
    async def model_call(self, request: Request) -> EmulatorResponse:
        model, _, method = request.path_params["model_call"].rpartition(":")
        publisher = request.path_params["publisher"]
        if method in ("generateContent", "streamGenerateContent"):
            return await self.generate(request, publisher, model, stream=method == "streamGenerateContent")
        if method == "countTokens":
            call, _, _ = await self._begin(request, "countTokens")
            body = _body(call, CountTokensRequest)
            prompt = GeminiPrompt().extend(body.get("generateContentRequest") or body)
            chars = sum(len(s) for s in prompt.segments if not s.startswith("<"))
            return json_response({"totalTokens": len(prompt.tokens), "totalBillableCharacters": chars},
                                 fault=call.fault)
        call, _, _ = await self._begin(request, "model_call")
        raise _err(404, f"Method {method!r} not found.", "NOT_FOUND")

    async def generate(self, request: Request, publisher: str, model: str, *, stream: bool) -> EmulatorResponse:
        call, number, location = await self._begin(request, "streamGenerateContent" if stream else "generateContent")
        body = _body(call, GenerateContentRequest)
        p = request.path_params
        if publisher != "google" or not model.startswith("gemini-"):
            raise _err(404, f"Publisher Model `projects/{p['project']}/locations/{location}/publishers/{publisher}/"
                       f"models/{model}` was not found or your project does not have access to it.", "NOT_FOUND")
        if not body.get("contents"):
            raise _err(400, "Unable to submit request because it has an empty contents field.", "INVALID_ARGUMENT")
        prompt = GeminiPrompt()
        cached_tokens = 0
        name = body.get("cachedContent")
        if name:
            if any(body.get(k) for k in ("systemInstruction", "tools", "toolConfig")):
                raise _err(400, "Tool config, tools and system instruction should not be set in the request when "
                           "using cached content.", "INVALID_ARGUMENT")
            rec = self._cache(str(name), number, location)
            if rec.model_id != model:
                raise _err(400, f"Model used by GenerateContent request ({model}) and CachedContent "
                           f"({rec.model_id}) has to be the same.", "INVALID_ARGUMENT")
            prompt.tokens, prompt.segments = list(rec.prompt.tokens), list(rec.prompt.segments)
            prompt.question, prompt.tools = rec.prompt.question, list(rec.prompt.tools)
            cached_tokens = len(rec.prompt.tokens)
        prompt.extend(body)
        ns = (number, f"{location}/{model}")  # implicit prompts are remembered per project, location and model
        implicit = not name and gemini_implicit_caching(model)
        if implicit:
            cached_tokens = self.implicit.lookup(ns, prompt.tokens, VERTEX_MIN_CACHE)
        cfg = body.get("generationConfig") or {}
        fcc = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        allowed = fcc.get("allowedFunctionNames")
        choice = {"NONE": "none", "ANY": (allowed[0] if allowed and len(allowed) == 1 else "any")}.get(
            fcc.get("mode", "AUTO"), "auto")
        g = generate(model=model, conversation_key="\x1e".join(prompt.segments), question=prompt.question,
                     target_tokens=call.target_tokens, max_tokens=cfg.get("maxOutputTokens"),
                     stop=list(cfg.get("stopSequences") or []), tools=prompt.tools, tool_choice=choice,
                     tool_result=prompt.tool_result,
                     json_schema=cfg.get("responseSchema") or cfg.get("responseJsonSchema"),
                     reasoning_tokens=gemini_thinking_tokens(model, (cfg.get("thinkingConfig") or {})
                                                             .get("thinkingBudget")))
        usage = {**_usage(len(prompt.tokens), cached_tokens, g), "trafficType": "ON_DEMAND"}
        rid = new_id("", 22)

        def commit() -> None:
            if implicit:
                self.implicit.remember(ns, prompt.tokens)

        ttft = call.latency.ttft(len(prompt.tokens) - cached_tokens, cached_tokens)
        created = rfc3339(self.state.clock.now())

        def response(parts: list[dict[str, Any]], finish: str | None, u: dict[str, Any]) -> dict[str, Any]:
            return {**_response(model, rid, g, parts, finish, u), "createTime": created}

        if stream:
            chunks = self._chunks(g, usage, ttft, commit, call, response)
            if request.query_params.get("alt") != "sse":
                parts_ = [c async for c in chunks]
                return EmulatorResponse(body=b"[" + b",".join(c[6:-4] for c in parts_) + b"]", fault=call.fault)
            return EmulatorResponse(chunks=chunks, fault=call.fault)
        await pause(ttft)
        commit()
        await pause(call.latency.decode(g.output_tokens))
        return json_response(response(_parts(g), FINISH[g.finish], usage), fault=call.fault)

    async def _chunks(self, g: Any, usage: dict[str, Any], ttft: float, commit: Callable[[], None], call: Call,
                      response: Callable[..., dict[str, Any]]) -> AsyncIterator[bytes]:
        def frame(obj: Any) -> bytes:
            return b"data: " + orjson.dumps(obj) + b"\r\n\r\n"

        error_after = call.fault.stream_error_after if call.fault else None
        await pause(ttft)
        commit()
        pieces = get_tokenizer().pieces(g.tokens)
        groups = ["".join(pieces[i:i + 8]) for i in range(0, len(pieces), 8)] or [""]
        partial = {"promptTokenCount": usage["promptTokenCount"], "totalTokenCount": usage["promptTokenCount"],
                   "trafficType": usage["trafficType"]}
        for n, text in enumerate(groups):
            if error_after is not None and n >= error_after:
                yield frame({"error": {"code": 503, "message": "The model is overloaded. Please try again later.",
                                       "status": "UNAVAILABLE"}})
                return
            if n:
                await pause(call.latency.inter_token_s * 8)
            last = n == len(groups) - 1
            parts = _parts(g) if (last and g.tool_calls) else [{"text": text}]
            yield frame(response(parts, FINISH[g.finish] if last else None, usage if last else partial))

    # -- cachedContents -------------------------------------------------------------------------------
    def _cache(self, name: str, number: str, location: str) -> VertexCache:
        """The live cache a request names, seen from (project number, location); else 404 NOT_FOUND."""
        m = _CACHE_NAME.match(name)
        if m is None:
            m = _CACHE_NAME.match(f"projects/{number}/locations/{location}/cachedContents/{name}")
        rec = None
        if m is not None and self.config.number(m.group(1)) == number and m.group(2) == location:
            rec = self.caches.get(f"projects/{number}/locations/{location}/cachedContents/{m.group(3)}")
        if rec is not None and rec.expire_time <= self.state.clock.now():
            self.caches.pop(rec.name, None)
            rec = None
        if rec is None:
            raise _err(404, f"Not found: cached content metadata for {name}.", "NOT_FOUND")
        return rec

    async def create_cache(self, request: Request) -> EmulatorResponse:
        call, number, location = await self._begin(request, "cachedContents.create")
        body = _body(call, CachedContent)
        model = body.get("model")
        if not model:
            raise _err(400, "Model is required.", "INVALID_ARGUMENT")
        m = _MODEL_NAME.match(str(model))
        model_id = m.group(4) if m else str(model).removeprefix("models/")
        if m is not None and (self.config.number(m.group(1)) != number or m.group(2) != location):
            raise _err(400, f"The model {model} is not in the location and project of the cached content.",
                       "INVALID_ARGUMENT")
        if not model_id.startswith("gemini-"):
            raise _err(404, f"Publisher Model `{model}` was not found or your project does not have access to it.",
                       "NOT_FOUND")
        prompt = GeminiPrompt().extend(body)
        if len(prompt.tokens) < VERTEX_MIN_CACHE:
            raise _err(400, f"The cached content is of {len(prompt.tokens)} tokens. The minimum token count to start "
                       f"caching is {VERTEX_MIN_CACHE}.", "INVALID_ARGUMENT")
        now = self.state.clock.now()
        try:
            expire = _expiry(body, now) or now + 3600.0  # "defaults to 60 minutes"
        except ValueError as e:
            raise _err(400, str(e), "INVALID_ARGUMENT") from None
        self._serial += 1
        cache_id = str(1_000_000_000_000_000_000 + (hash((number, location, self._serial, now)) % 10**18))
        rec = VertexCache(number, location, cache_id,
                          f"projects/{number}/locations/{location}/publishers/google/models/{model_id}",
                          str(body.get("displayName") or ""), now, now, expire, prompt)
        self.caches[rec.name] = rec
        return json_response(rec.resource(), fault=call.fault)

    async def cache_item(self, request: Request) -> EmulatorResponse:
        method = request.method
        call, number, location = await self._begin(request, f"cachedContents.{method.lower()}",
                                                   json_body=method == "PATCH")
        rec = self._cache(request.path_params["cache_id"], number, location)
        if method == "DELETE":
            self.caches.pop(rec.name, None)
            return json_response({}, fault=call.fault)
        if method == "PATCH":
            now = self.state.clock.now()
            try:
                expire = _expiry(_body(call, CachedContent), now)
            except ValueError as e:
                raise _err(400, str(e), "INVALID_ARGUMENT") from None
            if expire is None:
                raise _err(400, "Only expiration (ttl or expire_time) can be updated.", "INVALID_ARGUMENT")
            rec.expire_time, rec.update_time = expire, now
        return json_response(rec.resource(), fault=call.fault)

    async def list_caches(self, request: Request) -> EmulatorResponse:
        call, number, location = await self._begin(request, "cachedContents.list", json_body=False)
        now = self.state.clock.now()
        for name in [n for n, r in self.caches.items() if r.expire_time <= now]:
            del self.caches[name]
        records = [r for r in self.caches.values() if r.number == number and r.location == location]
        try:
            size = int(request.query_params.get("pageSize") or 100)
            start = int(request.query_params.get("pageToken") or 0)
        except ValueError:
            raise _err(400, "Invalid pageSize or pageToken.", "INVALID_ARGUMENT") from None
        size, start = size if size > 0 else 100, max(start, 0)
        page = records[start:start + size]
        out: dict[str, Any] = {}
        if page:
            out["cachedContents"] = [r.resource() for r in page]
        if start + size < len(records):
            out["nextPageToken"] = str(start + size)
        return json_response(out, fault=call.fault)
