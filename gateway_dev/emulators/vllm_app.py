"""One vLLM replica: OpenAI-compatible `/v1/chat/completions` and `/v1/completions`, `/v1/models`, `/health`,
`/metrics`, `/tokenize`, with vllm_kv.py's prefix cache and a `max_num_seqs` scheduler with a FIFO waiting
queue. Each replica is its own ASGI app on its own port."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway_dev.emulators.admin import admin_routes
from gateway_dev.emulators.answers import generate
from gateway_dev.emulators.chat_wire import ChatOutcome, completion_body, completion_chunks
from gateway_dev.emulators.faults import FaultController
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.openai_render import render_chat
from gateway_dev.emulators.shapes import Shape, check, explain
from gateway_dev.emulators.shapes_openai import VLLMChatRequest, VLLMCompletionRequest, VLLMTokenizeRequest
from gateway_dev.emulators.tokens import encode, get_tokenizer
from gateway_dev.emulators.vllm_kv import KVCacheManager
from gateway_dev.emulators.vllm_metrics import ReplicaMetrics
from gateway_dev.emulators.vllm_scheduler import Scheduler, Seq
from gateway_dev.emulators.web import (
    Call,
    EmulatorError,
    EmulatorResponse,
    EmulatorState,
    FastApp,
    Guard,
    bearer,
    begin,
    error_body,
    error_response,
    json_response,
    new_id,
    sse_data,
)


@dataclass
class VLLMConfig:
    served_model_names: list[str] = field(default_factory=lambda: ["Qwen/Qwen3-8B"])
    kv_capacity_blocks: int = 8192  # 131072 tokens of KV at block_size 16
    block_size: int = 16
    max_num_seqs: int = 256
    max_model_len: int = 32768
    api_key: str | None = None  # vLLM's --api-key; None: no auth, like a default vLLM
    engine: str = "vllm"  # "vllm" | "sglang" (sglang_app.py: radix-tree cache, SGLang's surface and metrics)
    # The replica's prefill compute is one shared lane: uncached prompt tokens of concurrent requests are
    # computed one request after another (a GPU has one set of SMs), so a busy replica's TTFT grows with its
    # load. Off: every request prefills as if alone (only `max_num_seqs` queueing costs).
    shared_prefill: bool = False
    enable_cache_report: bool = False  # SGLang's --enable-cache-report (vLLM always reports cached_tokens)
    # vLLM's --kv-events-config with the zmq publisher: KV events on a PUB socket (kv_events.py) bound to this
    # endpoint ("tcp://127.0.0.1:*": a free port, see `VLLMReplica.kv_events_endpoint`). None: no events.
    kv_events: str | None = None


# The hot path skips pydantic: the top-level fields it reads are checked against the exact JSON types it can
# use; only a body with some other value there goes through the (lax) shape, as vLLM's own models would take
# it ("stream": "true" is True, "max_tokens": "16" is 16, "stream": "maybe" a 400). Anything malformed deeper
# down surfaces as an exception while rendering, and is then explained by the same shape (`_explained`).
_CHAT_FIELDS: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("model", (str,)), ("messages", (list,)), ("stream", (bool,)), ("stream_options", (dict,)),
    ("max_tokens", (int,)), ("max_completion_tokens", (int,)), ("stop", (str, list)), ("tools", (list,)),
    ("tool_choice", (str, dict)), ("cache_salt", (str,)))
_COMPLETION_FIELDS: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("model", (str,)), ("prompt", (str, list)), ("stream", (bool,)), ("stream_options", (dict,)),
    ("max_tokens", (int,)), ("stop", (str, list)), ("cache_salt", (str,)))
_SCALARS = frozenset({"model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "stop",
                      "tool_choice", "cache_salt"})
_FAILURES = (TypeError, AttributeError, ValueError, KeyError, IndexError, RecursionError)


def _typed(body: dict[str, Any], fields: tuple[tuple[str, tuple[type, ...]], ...],
           shape: type[Shape]) -> dict[str, Any]:
    """`body` when every field in `fields` is absent, null or of an exact type; else the body with vLLM's lax
    coercions applied (or the 400 vLLM answers)."""
    for name, kinds in fields:
        value = body.get(name)
        if value is not None and type(value) not in kinds:
            break
    else:
        return body
    parsed = check(shape, body, "vllm", strict=False)
    return {**body, **parsed.model_dump(include=_SCALARS & body.keys(), exclude_unset=True, by_alias=True)}


class VLLMReplica(Scheduler):
    def __init__(self, state: EmulatorState, faults: FaultController, config: VLLMConfig | None = None,
                 index: int = 0) -> None:
        self.state, self.faults, self.index = state, faults, index
        self.config = config or VLLMConfig()
        self.name = f"vllm{index}"
        self.kv = self._new_cache()
        self.max_model_len = min(self.config.max_model_len, self.config.kv_capacity_blocks * self.config.block_size)
        self._lane = 0.0  # when the shared prefill lane is next free (monotonic seconds)
        self.running = 0
        self.waiting: deque[Seq] = deque()
        self.metrics = self._new_metrics()
        self.events: Any = None
        if self.config.kv_events and self.config.engine == "vllm":
            from gateway_dev.emulators.kv_events import KVEventPublisher

            self.events = KVEventPublisher(self.config.kv_events)
            self.kv.sink = self.events.add
        self.app = self._build_app()

    @property
    def kv_events_endpoint(self) -> str | None:
        return self.events.endpoint if self.events is not None else None

    def _new_cache(self) -> Any:
        return KVCacheManager(self.config.kv_capacity_blocks, self.config.block_size)

    def _new_seq(self, prompt: list[int], body: dict[str, Any], n_out: int) -> Seq:
        return Seq(prompt, self.kv.block_hashes(prompt, body.get("cache_salt")),
                    self.kv.blocks_needed(len(prompt) + n_out))

    def _report_cached(self, usage: dict[str, Any], seq: Seq) -> None:
        usage["prompt_tokens_details"]["cached_tokens"] = seq.hit_tokens

    def reset(self) -> None:
        """Drop the prefix cache and the stats (a restarted replica)."""
        self.kv.reset()
        self.metrics = self._new_metrics()
        if self.events is not None:
            self.events.restart()

    def _new_metrics(self) -> Any:
        return ReplicaMetrics(self)

    # -- HTTP -----------------------------------------------------------------------------------------
    def _key_of(self, request: Request) -> str | None:
        if self.config.api_key is not None and bearer(request) != self.config.api_key:
            raise _Unauthorized()
        return bearer(request)

    async def _begin(self, request: Request, endpoint: str, json_body: bool = True) -> Call:
        return await begin(request, self.state, self.faults, emulator=self.name, endpoint=f"{self.name}.{endpoint}",
                           vendor="vllm", key_of=self._key_of, json_body=json_body)

    def _check_model(self, body: dict[str, Any]) -> str:
        model = body.get("model") or self.config.served_model_names[0]
        if model not in self.config.served_model_names:
            raise EmulatorError("vllm", 404, f"The model `{model}` does not exist.", type="NotFoundError",
                                param="model")
        return model

    async def chat(self, request: Request) -> EmulatorResponse:
        call = await self._begin(request, "chat")
        body = _typed(call.body, _CHAT_FIELDS, VLLMChatRequest)
        model = self._check_model(body)
        try:
            prompt = render_chat(body)
            stop = body.get("stop")
            choice = body.get("tool_choice")
            if isinstance(choice, dict):
                choice = (choice.get("function") or {}).get("name")
            g = generate(model=model, conversation_key=prompt.key, question=prompt.question,
                         target_tokens=call.target_tokens,
                         max_tokens=body.get("max_completion_tokens", body.get("max_tokens")),
                         stop=[stop] if isinstance(stop, str) else list(stop or []), tools=prompt.tools,
                         tool_choice=choice, tool_result=prompt.tool_result)
        except EmulatorError as e:
            e.vendor = "vllm"
            raise
        except _FAILURES:
            _explained(VLLMChatRequest, body)
            raise
        return await self._serve(call, body, model, prompt.tokens, g, chat=True)

    async def completions(self, request: Request) -> EmulatorResponse:
        call = await self._begin(request, "completions")
        body = _typed(call.body, _COMPLETION_FIELDS, VLLMCompletionRequest)
        model = self._check_model(body)
        raw = body.get("prompt")
        try:
            text = raw if isinstance(raw, str) else " ".join(map(str, raw or []))
            if not text:
                raise EmulatorError("vllm", 400, "prompt must not be empty", param="prompt")
            stop = body.get("stop")
            g = generate(model=model, conversation_key=text, question=text, target_tokens=call.target_tokens,
                         max_tokens=body.get("max_tokens", 16),
                         stop=[stop] if isinstance(stop, str) else list(stop or []))
        except _FAILURES:
            _explained(VLLMCompletionRequest, body)
            raise
        return await self._serve(call, body, model, list(encode(text)), g, chat=False)

    async def _serve(self, call: Call, body: dict[str, Any], model: str, prompt: list[int], g: Any,
                     chat: bool) -> EmulatorResponse:
        n_in, n_out = len(prompt), g.output_tokens
        if n_in + n_out > self.max_model_len:
            raise EmulatorError("vllm", 400, f"This model's maximum context length is {self.max_model_len} tokens. "
                                f"However, you requested {n_in + n_out} tokens ({n_in} in the messages, {n_out} in "
                                "the completion). Please reduce the length of the messages or completion.",
                                param="messages" if chat else "prompt")
        arrival = time.monotonic()
        seq = self._new_seq(prompt, body, n_out)
        usage: dict[str, Any] = {"prompt_tokens": n_in, "total_tokens": n_in + n_out, "completion_tokens": n_out,
                                 "prompt_tokens_details": {"cached_tokens": 0}}
        outcome = ChatOutcome(new_id("chatcmpl-" if chat else "cmpl-", 32), model, int(time.time()), [g], usage)
        latency = call.latency
        admitted = False

        async def prefill() -> None:
            nonlocal admitted
            await self.admit(seq)
            admitted = True
            self._report_cached(usage, seq)
            await self._prefill_wait(latency, n_in - seq.hit_tokens, seq.hit_tokens)
            self.metrics.first_token(time.monotonic() - arrival)

        def finish(completed: bool = True) -> None:
            if admitted:  # an aborted request (client gone) caches no output and counts as "abort"
                self.release(seq, list(g.tokens) if completed else [])
                self.metrics.finished(time.monotonic() - arrival, n_in, n_out if completed else 0,
                                      g.finish if completed else "abort")

        if body.get("stream"):
            opts = body.get("stream_options") or {}
            fault = call.fault
            inner = (completion_chunks(outcome, include_usage=bool(opts.get("include_usage")),
                                       inter_token_s=latency.inter_token_s, before_first=prefill,
                                       error_after=fault.stream_error_after if fault else None,
                                       error_body=error_body(EmulatorError("vllm", 500)))
                     if chat else self._text_chunks(outcome, prefill, latency.inter_token_s,
                                                    bool(opts.get("include_usage"))))

            async def chunks() -> AsyncIterator[bytes]:
                completed = False
                try:
                    async for c in inner:
                        yield c
                    completed = True
                finally:
                    finish(completed)

            return EmulatorResponse(chunks=chunks(), fault=call.fault)
        try:
            await prefill()
            await pause(latency.decode(n_out))
        finally:
            finish()
        if chat:
            return json_response(completion_body(outcome), fault=call.fault)
        return json_response(_text_body(outcome), fault=call.fault)

    async def _text_chunks(self, o: ChatOutcome, prefill: Any, itl: float, include_usage: bool) -> AsyncIterator[bytes]:
        await prefill()
        g = o.choices[0]
        for n, piece in enumerate(get_tokenizer().pieces(g.tokens)):
            if n:
                await pause(itl)
            yield sse_data({"id": o.id, "object": "text_completion", "created": o.created, "model": o.model,
                            "choices": [{"index": 0, "text": piece, "logprobs": None, "finish_reason": None}]})
        yield sse_data({"id": o.id, "object": "text_completion", "created": o.created, "model": o.model,
                        "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": g.finish}]})
        if include_usage:
            yield sse_data({"id": o.id, "object": "text_completion", "created": o.created, "model": o.model,
                            "choices": [], "usage": o.usage})
        yield b"data: [DONE]\n\n"

    async def models(self, request: Request) -> EmulatorResponse:
        call = await self._begin(request, "models", json_body=False)
        data = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "vllm", "root": m, "parent": None,
                 "max_model_len": self.max_model_len} for m in self.config.served_model_names]
        return json_response({"object": "list", "data": data}, fault=call.fault)

    async def tokenize(self, request: Request) -> EmulatorResponse:
        call = await self._begin(request, "tokenize")
        body = call.body
        try:
            tokens = render_chat(body).tokens if "messages" in body else list(encode(str(body.get("prompt", ""))))
        except EmulatorError as e:
            e.vendor = "vllm"
            raise
        except _FAILURES:
            _explained(VLLMTokenizeRequest, body)
            raise
        return json_response({"count": len(tokens), "max_model_len": self.max_model_len, "tokens": tokens})

    async def render(self, request: Request) -> EmulatorResponse:
        """`POST /v1/chat/completions/render`: the prompt's token ids after the chat template, without
        generating ({"token_ids": [...], "features": null} for a text-only request, as vLLM answers)."""
        call = await self._begin(request, "render")
        body = _typed(call.body, _CHAT_FIELDS, VLLMChatRequest)
        self._check_model(body)
        try:
            tokens = render_chat(body).tokens
        except EmulatorError as e:
            e.vendor = "vllm"
            raise
        except _FAILURES:
            _explained(VLLMChatRequest, body)
            raise
        return json_response({"token_ids": list(tokens), "features": None})

    async def version(self, request: Request) -> EmulatorResponse:
        return json_response({"version": "0.11.0+emulator"})

    async def health(self, request: Request) -> Response:
        return Response(status_code=200)

    async def metrics_endpoint(self, request: Request) -> Response:
        body, ctype = self.metrics.render()
        return Response(body, media_type=ctype)

    def _extra_routes(self) -> list[Route]:
        return [Route("/_emulator/kv_events", self._kv_events_control, methods=["POST"])]

    async def _kv_events_control(self, request: Request) -> EmulatorResponse:
        """Test control: {"paused": true} stops the event stream (events are dropped), false resumes it."""
        if self.events is None:
            return json_response({"error": "this replica publishes no KV events"}, status=400)
        body = orjson.loads(await request.body() or b"{}")
        self.events.paused = bool(body.get("paused"))
        return json_response({"paused": self.events.paused, "endpoint": self.events.endpoint})

    def _build_app(self) -> FastApp:
        def unauthorized(exc: Exception) -> EmulatorResponse:
            return json_response({"error": "Unauthorized"}, status=401)

        def emulator_error(exc: Exception) -> EmulatorResponse:
            assert isinstance(exc, EmulatorError)
            return error_response(exc)

        async def on_error(request: Request, exc: Exception) -> Response:
            return (unauthorized(exc) if isinstance(exc, _Unauthorized) else emulator_error(exc))  # type: ignore

        hot = {("POST", "/v1/chat/completions"): self.chat, ("POST", "/v1/completions"): self.completions,
               ("GET", "/health"): self.health}
        routes = [
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/tokenize", self.tokenize, methods=["POST"]),
            Route("/v1/chat/completions/render", self.render, methods=["POST"]),
            Route("/health", self.health, methods=["GET"]),
            Route("/metrics", self.metrics_endpoint, methods=["GET"]),
            Route("/version", self.version, methods=["GET"]),
            *self._extra_routes(),
            *[Route(path, handler, methods=[method]) for (method, path), handler in hot.items()],
            *admin_routes(self.state, lambda: {self.name: self.faults}, replica=self),
        ]
        fallback = Starlette(routes=routes, exception_handlers={EmulatorError: on_error, _Unauthorized: on_error},
                             middleware=[Middleware(Guard, vendor_of=_vllm)])
        return Guard(FastApp(hot, fallback, {EmulatorError: emulator_error, _Unauthorized: unauthorized}), _vllm)


class _Unauthorized(Exception):
    pass


def _explained(shape: type[Shape], body: dict[str, Any]) -> None:
    """Raise vLLM's 400 when `body` is malformed for `shape`; return when it is not (an emulator bug: the
    caller re-raises, and the app's Guard answers a logged 500)."""
    explain(shape, body, "vllm", strict=False)


def _vllm(path: str) -> str:
    return "vllm"


def _text_body(o: ChatOutcome) -> dict[str, Any]:
    g = o.choices[0]
    return {"id": o.id, "object": "text_completion", "created": o.created, "model": o.model,
            "choices": [{"index": 0, "text": g.text, "logprobs": None, "finish_reason": g.finish, "stop_reason": None}],
            "usage": o.usage}
