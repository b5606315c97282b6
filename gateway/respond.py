"""Turn a cached answer or an upstream response into the client's HTTP response.

Four shapes, each stream or not:
- a cached `Answer` (response or semantic hit), rendered by the client's adapter;
- a live feed of events (a single-flight follower riding another request's upstream call);
- an upstream answer in the client's own protocol: bytes relayed as they arrive, untouched
  (except the usage chunk the gateway asked for and the client did not), parsed on the side for
  usage and the caches;
- an upstream answer in another protocol (cross-protocol): parsed into events and re-rendered.

`ctx.answer` is set only when the answer is complete and successful; `owner.done(ctx)` then runs the
post-stages (usage, stores) in the background, so they never delay the client. The owner (the
`Gateway`) also dispatches the stages' stream hooks and keeps the background readers of streams whose
client left while single-flight followers wait.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Protocol

import orjson
from starlette.responses import Response, StreamingResponse

from gateway.answer import Answer, AnswerBuilder, Event
from gateway.cache.rendered import RenderedAnswers
from gateway.cache.stale import stale_headers
from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.pipeline import EventHook, Hit
from gateway.protocols.base import SSEFilter, StreamParser
from gateway.protocols.sse import SSESplitter
from gateway.upstream.call import Upstream

log = logging.getLogger("gateway.respond")



class Owner(Protocol):
    """What the responses need from the gateway that owns the request."""

    def done(self, ctx: RequestContext) -> None:
        """The request is over: post-stages in the background, the access log."""
        ...

    def listeners(self, ctx: RequestContext) -> Sequence[EventHook]:
        """The stages that see this request's upstream events live."""
        ...

    def keeps_upstream(self, ctx: RequestContext) -> bool:
        """Other requests still wait on this request's upstream answer."""
        ...

    def keep_reading(self, task: asyncio.Task[None]) -> None:
        """Hold a background reader of an upstream stream (awaited on shutdown)."""
        ...

REPLAY_CHUNK_CHARS = 48  # a replayed stream arrives in word-sized pieces, like a live one
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
_ANSWERED_BY = {"response-hit": "response-cache", "semantic-hit": "semantic-cache"}
# Response-cache hits only: one entry's answer is then shared by its hits (gateway/cache/entry.py) and
# their bodies differ in transport fields at most (the rest is in the key). Semantic hits differ in body.
_RENDERED = RenderedAnswers()


def gateway_headers(ctx: RequestContext) -> dict[str, str]:
    headers = {"x-gateway-request-id": ctx.request_id, "x-gateway-cache": ctx.cache_status}
    if ctx.similarity is not None:
        headers["x-gateway-similarity"] = f"{ctx.similarity:.4f}"
    if ctx.prefix is not None:  # what the prompt broke (provider_cache/explain.py)
        cause = ctx.prefix.header(ctx)
        if cause:
            headers["x-gateway-prefix-break"] = cause
    if "stale" in ctx.record:
        headers.update(stale_headers(ctx))
    return headers


def json_response(ctx: RequestContext, status: int, body: bytes, extra: dict[str, str] | None = None) -> Response:
    headers = gateway_headers(ctx)
    if extra:
        headers = {**extra, **headers}
    headers.pop("content-type", None)
    return Response(body, status_code=status, headers=headers, media_type="application/json")


def error_headers(ctx: RequestContext, status: int, code: str | None = None) -> dict[str, str] | None:
    """Headers an error needs in the caller's protocol (Bedrock's type travels in `x-amzn-ErrorType`)."""
    extra = getattr(ctx.adapter, "error_headers", None)
    return extra(status, code) if extra is not None else None


def error_response(ctx: RequestContext, exc: GatewayError) -> Response:
    ctx.status, ctx.error = exc.status, exc.message
    body = ctx.adapter.error_body(exc.status, exc.message, exc.code)
    return json_response(ctx, exc.status, orjson.dumps(body), error_headers(ctx, exc.status, exc.code))


def _stream(ctx: RequestContext, body: AsyncIterator[bytes], extra: dict[str, str] | None = None) -> Response:
    headers = {**(extra or {}), **_SSE_HEADERS, **gateway_headers(ctx)}
    headers.pop("content-type", None)
    # SSE for every protocol but Bedrock's ConverseStream (AWS event-stream frames)
    media_type = getattr(ctx.adapter, "stream_media_type", "text/event-stream")
    return StreamingResponse(body, status_code=200, headers=headers, media_type=media_type)


# ---- cached answers ---------------------------------------------------------------------------


def respond_hit(ctx: RequestContext, hit: Hit, owner: Owner) -> Response:
    ctx.cache_status = hit.status
    ctx.similarity = hit.similarity
    ctx.answered_by = _ANSWERED_BY.get(hit.status, "single-flight")
    if hit.answer is not None:
        # A whole answer is rendered by the adapter itself: it can replay what events do not carry
        # (Anthropic's prompt usage in message_start, refusals, thought signatures).
        _complete(ctx, hit.answer, ctx.answered_by)
        if ctx.stream:
            return _stream(ctx, _replay(ctx, hit.answer, owner))
        ctx.ttft_s = ctx.elapsed()
        if hit.status == "response-hit":
            body = _RENDERED.render(ctx.adapter, hit.answer, ctx.body, ctx.request_id)
        else:
            body = orjson.dumps(ctx.adapter.render_answer(hit.answer, ctx.body, ctx.request_id))
        _finish(ctx, owner)
        return json_response(ctx, 200, body)
    if hit.events is None:
        raise ValueError("a Hit carries an answer or events")
    if ctx.stream:
        return _stream(ctx, _render_events(ctx, hit.events, owner))
    return _GatheredResponse(ctx, _gather(ctx, hit.events, owner))


async def _replay(ctx: RequestContext, answer: Answer, owner: Owner) -> AsyncIterator[bytes]:
    try:
        for chunk in ctx.adapter.replay(answer, ctx.body, ctx.request_id, _wants_usage(ctx), REPLAY_CHUNK_CHARS):
            if ctx.ttft_s is None:
                ctx.ttft_s = ctx.elapsed()
            yield chunk
    finally:
        _finish(ctx, owner)


async def _render_events(ctx: RequestContext, events: AsyncIterator[Event], owner: Owner) -> AsyncIterator[bytes]:
    """A follower's stream: another request's upstream answer, rendered as it arrives."""
    renderer = ctx.adapter.stream_renderer(ctx.body, ctx.request_id, _wants_usage(ctx))
    builder = AnswerBuilder(ctx.provider)
    try:
        async for event in events:
            builder.add(event)
            out = renderer.render(event)
            if out:
                if ctx.ttft_s is None:
                    ctx.ttft_s = ctx.elapsed()
                yield out
        if builder.finished:
            yield renderer.close()
            _complete(ctx, builder.answer(), ctx.answered_by)
        else:
            yield renderer.error(502, "The upstream answer this request was waiting for failed.")
    finally:
        _finish(ctx, owner)


async def _gather(ctx: RequestContext, events: AsyncIterator[Event], owner: Owner) -> AsyncIterator[bytes]:
    """A follower's non-stream answer: wait for the whole feed, answer in one piece."""
    builder = AnswerBuilder(ctx.provider)
    try:
        async for event in events:
            builder.add(event)
        answer = builder.answer()
        if answer is None:
            raise GatewayError(502, "The upstream answer this request was waiting for failed.")
        _complete(ctx, answer, ctx.answered_by)
        ctx.ttft_s = ctx.elapsed()
        yield orjson.dumps(ctx.adapter.render_answer(answer, ctx.body, ctx.request_id))
    finally:
        _finish(ctx, owner)


class _GatheredResponse(Response):
    """A non-stream response whose body is produced by awaiting a live feed first."""

    def __init__(self, ctx: RequestContext, body: AsyncIterator[bytes]) -> None:
        self._ctx, self._body = ctx, body
        super().__init__(None, status_code=200, media_type="application/json")

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        try:
            content = b"".join([chunk async for chunk in self._body])
            status = 200
        except GatewayError as exc:
            content = orjson.dumps(self._ctx.adapter.error_body(exc.status, exc.message, exc.code))
            status = exc.status
        await json_response(self._ctx, status, content)(scope, receive, send)


# ---- upstream answers -------------------------------------------------------------------------


async def respond_upstream(ctx: RequestContext, up: Upstream, owner: Owner) -> Response:
    if ctx.ttft_s is None and not ctx.stream:
        ctx.ttft_s = ctx.elapsed()
    if up.status >= 400 or not (ctx.stream and up.is_event_stream):
        return await _whole(ctx, up, owner)
    upstream_adapter = ctx.upstream_adapter or ctx.adapter
    parser = upstream_adapter.stream_parser(ctx.provider)
    if ctx.translated:
        return _stream(ctx, _translate_stream(ctx, up, parser, owner))
    sse_filter: SSEFilter | None = ctx.sse_filter
    extra = {k: v for k, v in up.headers.items() if k.startswith(("x-", "openai-", "anthropic-", "request-id"))}
    return _stream(ctx, _relay_stream(ctx, up, parser, sse_filter, owner), extra)


async def _whole(ctx: RequestContext, up: Upstream, owner: Owner) -> Response:
    try:
        raw = up.first + await up.response.read()
    except Exception as exc:
        up.close()
        _finish(ctx, owner)
        raise GatewayError(502, f"The upstream ({ctx.provider}) broke off its answer.") from exc
    up.release()
    ctx.status = up.status
    upstream_adapter = ctx.upstream_adapter or ctx.adapter
    answer: Answer | None = None
    body = raw
    extra_error: dict[str, str] | None = None
    if up.status < 400:
        try:
            answer = upstream_adapter.parse_answer(orjson.loads(raw), ctx.provider)
        except Exception as exc:  # an upstream body we cannot read is relayed, never cached
            log.warning("unreadable upstream answer", extra={"request_id": ctx.request_id, "error": repr(exc)})
        if answer is not None and ctx.translated:
            body = orjson.dumps(ctx.adapter.render_answer(answer, ctx.body, ctx.request_id))
    elif ctx.translated:
        message, code = upstream_adapter.parse_error(up.status, raw)
        body = orjson.dumps(ctx.adapter.error_body(up.status, message, code))
        extra_error = error_headers(ctx, up.status, code)
    elif not _is_json(raw):
        # e.g. a proxy's "502 Bad Gateway" page in front of a replica: relayed as JSON in the
        # caller's vendor shape, since the response says application/json
        text = raw[:300].decode("utf-8", "replace").strip() or f"status {up.status}"
        body = orjson.dumps(ctx.adapter.error_body(up.status, f"The upstream ({ctx.provider}) answered: {text}"))
    if answer is not None:
        _complete(ctx, answer, "upstream")
    else:
        ctx.error = ctx.error or f"upstream status {up.status}"
    ctx.latency_s = ctx.elapsed()
    _finish(ctx, owner)
    extra = extra_error if ctx.translated else up.headers
    return json_response(ctx, up.status, body, extra)


async def _relay_stream(ctx: RequestContext, up: Upstream, parser: StreamParser, sse_filter: SSEFilter | None,
                        owner: Owner) -> AsyncIterator[bytes]:
    splitter = SSESplitter() if sse_filter is not None else None
    with _Relaying(ctx, up, parser, owner) as relaying:
        taps = relaying.taps
        async for chunk in up.chunks():
            events = parser.feed(chunk)
            if taps:
                _tap(ctx, taps, events)
            if splitter is not None:
                out = b"".join(
                    kept + b"\n\n" for ev in splitter.feed(chunk) if (kept := sse_filter(ev)) is not None  # type: ignore[misc]
                )
            else:
                out = chunk
            if out:
                if ctx.ttft_s is None:
                    ctx.ttft_s = ctx.elapsed()
                yield out
        relaying.reading = False
        _tap(ctx, taps, parser.end())
        if splitter is not None and (rest := splitter.rest()) and (kept := sse_filter(rest)) is not None:  # type: ignore[misc]
            yield kept + b"\n\n"
        _complete(ctx, parser.answer(), "upstream")


async def _translate_stream(ctx: RequestContext, up: Upstream, parser: StreamParser,
                            owner: Owner) -> AsyncIterator[bytes]:
    renderer = ctx.adapter.stream_renderer(ctx.body, ctx.request_id, _wants_usage(ctx))
    with _Relaying(ctx, up, parser, owner) as relaying:
        taps = relaying.taps
        async for chunk in up.chunks():
            events = parser.feed(chunk)
            _tap(ctx, taps, events)
            out = b"".join(renderer.render(ev) for ev in events)
            if out:
                if ctx.ttft_s is None:
                    ctx.ttft_s = ctx.elapsed()
                yield out
        relaying.reading = False
        events = parser.end()
        _tap(ctx, taps, events)
        tail = b"".join(renderer.render(ev) for ev in events)
        answer = parser.answer()
        if answer is not None:
            yield tail + renderer.close()
            _complete(ctx, answer, "upstream")
        else:
            message, code = _stream_failure(ctx, parser)
            yield tail + renderer.error(502, message, code)


class _Relaying:
    """Owns an upstream stream while it is relayed to the client: when the relay ends, closes it and
    finishes the request. When the client went away mid-stream (the relay is cancelled or closed at
    a `yield`), the stream is cut with it (the vendor stops generating) — unless other requests ride
    on this upstream answer (single-flight followers): cutting it would cut their streams too, so it
    is read to the end for them in the background and stored like any complete answer."""

    def __init__(self, ctx: RequestContext, up: Upstream, parser: StreamParser, owner: Owner) -> None:
        self.ctx, self.up, self.parser, self.owner = ctx, up, parser, owner
        self.taps: Sequence[EventHook] = owner.listeners(ctx)
        self.reading = True  # False once the whole upstream stream is in

    def __enter__(self) -> _Relaying:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if kind is not None and issubclass(kind, (asyncio.CancelledError, GeneratorExit)) and self._client_left():
            return
        self.up.close()
        _finish(self.ctx, self.owner)

    def _client_left(self) -> bool:
        """True when the stream was handed to a background reader for the followers."""
        ctx = self.ctx
        if not self.owner.keeps_upstream(ctx):
            return False
        ctx.latency_s = ctx.elapsed()  # what this client saw
        if not self.reading:  # the whole upstream answer is in: only its last bytes to this client were lost
            _complete(ctx, self.parser.answer(), "upstream")
            return False
        try:
            task = asyncio.get_running_loop().create_task(_read_rest(ctx, self.up, self.parser, self.taps, self.owner))
        except RuntimeError:  # the loop is closing: nobody is left to wait
            return False
        self.owner.keep_reading(task)
        return True


async def _read_rest(ctx: RequestContext, up: Upstream, parser: StreamParser,
                     taps: Iterable[EventHook], owner: Owner) -> None:
    try:
        async for chunk in up.chunks():
            _tap(ctx, taps, parser.feed(chunk))
        _tap(ctx, taps, parser.end())
        _complete(ctx, parser.answer(), "upstream")
    except Exception as exc:  # the upstream failed too: followers end like a cut stream
        log.info("upstream stream read for single-flight followers failed",
                 extra={"request_id": ctx.request_id, "error": f"{type(exc).__name__}: {exc}"})
    finally:
        up.close()
        _finish(ctx, owner)


def _stream_failure(ctx: RequestContext, parser: StreamParser) -> tuple[str, str | None]:
    if parser.error is None:
        return f"The upstream ({ctx.provider}) stream ended before the answer was complete.", None
    upstream_adapter = ctx.upstream_adapter or ctx.adapter
    return upstream_adapter.parse_error(502, orjson.dumps(parser.error))


def _is_json(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


def _tap(ctx: RequestContext, taps: Iterable[EventHook], events: list[Event]) -> None:
    """Live events to whoever listens (single-flight followers of this request's stream)."""
    for tap in taps:
        for event in events:
            tap.on_event(ctx, event)


def _wants_usage(ctx: RequestContext) -> bool:
    options = ctx.body.get("stream_options")
    return bool(isinstance(options, dict) and options.get("include_usage"))


def _complete(ctx: RequestContext, answer: Answer | None, by: str) -> None:
    if answer is not None:
        ctx.answer = answer
        ctx.answered_by = by


def _finish(ctx: RequestContext, owner: Owner) -> None:
    if ctx.latency_s is None:
        ctx.latency_s = ctx.elapsed()
    if ctx.answer is None and ctx.error is None:
        ctx.error = "incomplete"
    owner.done(ctx)
