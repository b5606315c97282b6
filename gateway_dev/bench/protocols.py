"""Micro-benchmark of the protocol adapters' hot-path functions.

    python -m gateway_dev.bench.protocols [--deltas 400] [--repeat 7] [--piece 1400] [--litellm]

For each protocol it prints:
- µs per stream chunk parsed (the parser a relayed stream feeds, on a realistic stream cut in
  `--piece`-byte network reads), against a same-run baseline: splitting the same bytes into
  events and `orjson.loads` of each event's data, the least any parser must do;
- µs per answer rendered (`render_answer` + `orjson.dumps`) and per stream replay, against
  `orjson.dumps(answer.to_dict())` (what storing the answer costs anyway);
- µs per request translated (OpenAI Chat → Anthropic / Gemini), against an orjson round trip of
  the body; with `--litellm`, litellm's own Anthropic transformation on the same body.
Ratios are against the baseline of the same run; figures taken on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import orjson

from gateway.answer import Answer, ToolCall
from gateway.protocols import get_adapter
from gateway.protocols.openai_chat_stream import UsageChunkFilter
from gateway.protocols.sse import split_events
from gateway.protocols.translate import translate_request

USAGE = {
    "openai_chat": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                    "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0}},
    "openai_responses": {"input_tokens": 2006, "input_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 0},
                         "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2306},
    "anthropic_messages": {"input_tokens": 38, "cache_creation_input_tokens": 48, "cache_read_input_tokens": 1920,
                           "output_tokens": 300},
    "gemini": {"promptTokenCount": 2006, "cachedContentTokenCount": 1920, "candidatesTokenCount": 300,
               "totalTokenCount": 2306},
}
CHAT_BODY = {
    "model": "m",
    "messages": [{"role": "system", "content": "You are a helpful assistant. " * 40}]
    + [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {i}: " + "some words here " * 20}
       for i in range(20)],
    "tools": [{"type": "function", "function": {
        "name": f"tool_{i}", "description": "A tool",
        "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}} for i in range(5)],
    "max_tokens": 500, "temperature": 0.5,
}


def best(fn: Callable[[], Any], repeat: int, inner: int = 1) -> float:
    """Best-of-`repeat` seconds per call of `fn` (each round calls it `inner` times)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
    return min(times)


def answer_for(protocol: str, deltas: int) -> Answer:
    text = "".join(f"wörd{i % 10} " for i in range(deltas))
    return Answer(text=text, model="bench-model", usage_raw=USAGE[protocol],
                  tool_calls=[ToolCall("call_1", "lookup", '{"query": "cached answers", "limit": 10}')],
                  finish_reason="tool_calls")


def bench_parse(protocol: str, deltas: int, piece: int, repeat: int) -> tuple[int, float, float]:
    adapter = get_adapter(protocol)
    answer = answer_for(protocol, deltas)
    stream = b"".join(adapter.replay(answer, {"model": "bench-model"}, "bench", True, chunk_chars=5))
    pieces = [stream[i:i + piece] for i in range(0, len(stream), piece)]
    events = split_events(stream)

    def parse() -> None:
        parser = adapter.stream_parser(protocol)
        for p in pieces:
            parser.feed(p)
        parser.end()
        assert parser.answer() is not None

    def baseline() -> None:
        for block in split_events(stream):
            at = block.find(b"data:")
            if at >= 0:
                data = block[at + 5:].strip()
                if data[:1] == b"{":
                    orjson.loads(data)

    return len(events), best(parse, repeat) / len(events), best(baseline, repeat) / len(events)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gateway_dev.bench.protocols", description=__doc__.splitlines()[0])
    ap.add_argument("--deltas", type=int, default=400, help="text deltas per benchmark stream")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--piece", type=int, default=1400, help="bytes per network read fed to the parser")
    ap.add_argument("--litellm", action="store_true", help="also time litellm's Anthropic transformation")
    args = ap.parse_args(argv)
    protocols = ["openai_chat", "openai_responses", "anthropic_messages", "gemini"]

    print(f"stream parsing ({args.deltas} text deltas + a tool call, fed in {args.piece}-byte reads)")
    print(f"  {'protocol':<20}{'events':>8}{'µs/chunk':>11}{'baseline':>11}{'ratio':>8}")
    for protocol in protocols:
        n, t, base = bench_parse(protocol, args.deltas, args.piece, args.repeat)
        print(f"  {protocol:<20}{n:>8}{t * 1e6:>11.2f}{base * 1e6:>11.2f}{t / base:>8.2f}")

    chat_stream = b"".join(get_adapter("openai_chat").replay(answer_for("openai_chat", args.deltas), {"model": "m"},
                                                             "b", True, chunk_chars=5))
    events = split_events(chat_stream)
    f = UsageChunkFilter()

    def naive(event: bytes) -> bytes | None:  # the obvious way: parse, drop the key, serialise again
        if event.startswith(b"data: {"):
            obj = orjson.loads(event[6:])
            if not obj.get("choices") and obj.get("usage"):
                return None
            obj.pop("usage", None)
            return b"data: " + orjson.dumps(obj)
        return event

    t = best(lambda: [f(e) for e in events], args.repeat) / len(events)
    base = best(lambda: [naive(e) for e in events], args.repeat) / len(events)
    print(f"  usage-chunk filter (openai_chat): {t * 1e6:.2f} µs/event; baseline parse+re-serialise "
          f"{base * 1e6:.2f} µs; ratio {t / base:.2f}")

    print("\nanswer rendering (µs per answer; baseline = orjson.dumps(answer.to_dict()))")
    print(f"  {'protocol':<20}{'render':>10}{'replay':>10}{'baseline':>10}{'ratio':>8}")
    for protocol in protocols:
        adapter = get_adapter(protocol)
        answer = answer_for(protocol, args.deltas)
        req = {"model": "bench-model", "input": "hi"}
        render = best(lambda a=adapter, x=answer, r=req: orjson.dumps(a.render_answer(x, r, "id")),
                      args.repeat, 200)
        replay = best(lambda a=adapter, x=answer, r=req: b"".join(a.replay(x, r, "id", True, 0)), args.repeat, 200)
        base = best(lambda x=answer: orjson.dumps(x.to_dict()), args.repeat, 200)
        print(f"  {protocol:<20}{render * 1e6:>10.2f}{replay * 1e6:>10.2f}{base * 1e6:>10.2f}{render / base:>8.2f}")

    print("\nrequest translation (20-turn chat, 5 tools; baseline = orjson round trip of the body)")
    base = best(lambda: orjson.loads(orjson.dumps(CHAT_BODY)), args.repeat, 200)
    for upstream, model in (("anthropic_messages", "claude-sonnet-4-5"), ("gemini", "gemini-2.5-flash")):
        body = {**CHAT_BODY, "model": model}
        translate_request("openai_chat", upstream, body)  # warm the model table
        t = best(lambda b=body, u=upstream: translate_request("openai_chat", u, b), args.repeat, 200)
        print(f"  openai_chat → {upstream:<20}{t * 1e6:>9.2f} µs   baseline {base * 1e6:.2f} µs   ratio {t / base:.2f}")
    if args.litellm:
        from litellm.llms.anthropic.chat.transformation import AnthropicConfig

        cfg = AnthropicConfig()
        keys = ("tools", "max_tokens", "temperature")

        def lite() -> None:
            params = cfg.map_openai_params({k: CHAT_BODY[k] for k in keys}, {}, "claude-sonnet-4-5", drop_params=False)
            messages = orjson.loads(orjson.dumps(CHAT_BODY["messages"]))
            cfg.transform_request("claude-sonnet-4-5", messages, params, {}, {})

        t = best(lite, args.repeat, 20)
        print(f"  litellm AnthropicConfig (same body)    {t * 1e6:>9.2f} µs   ratio {t / base:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
