"""`llm-cache-gateway bench cost`: what the rewrite and provider-cache layers save, per vendor.

Replays synthetic agent sessions through the gateway to each vendor emulator, once with the layers
off and once with them on, in the same run. A session is T append-only requests sharing a ~3,000-
token system prompt that carries a per-request timestamp (as many agents stamp "current time"), 8
tool definitions, and a growing conversation: user questions, the model's answers, and every other
request an assistant tool call with its result as the tail. Printed per vendor, mode and T:

- the vendor-reported cached share of prompt tokens (OpenAI `cached_tokens`, Anthropic
  `cache_read_input_tokens`, Gemini `cachedContentTokenCount`, DeepSeek `prompt_cache_hit_tokens`)
  against the theoretical (T−1)/(T+1) of a session whose every request re-reads all but its newest
  turn;
- the cost the gateway's usage records computed (litellm prices; Gemini storage included), and
  that cost ÷ the same requests' cost without any caching (`cost_without_cache_usd`): never above 1
  beyond the probe bound of docs/provider-caches.md;
- the mean time to first token the gateway measured (non-streaming answers from an emulator with no
  decode time, so it is the time to the whole answer, which prefill of uncached tokens dominates).

Modes: `off` (no rewrite, no provider-cache fields), `on` (rewrite + breakpoints/keys; Gemini and
DeepSeek rely on their implicit caches), and for Gemini `explicit` (on, plus CachedContent).
Vendors: `openai` (gpt-4o: writes free), `openai-5.6` (gpt-5.6: writes billed at 1.25×), `anthropic`,
`gemini`, `deepseek`. Then the adversarial workloads of `cost_adversarial.py` (volatile prefix with the
rewrite off, model flapping, tools reshuffled per request), the layer deciding from priors (`old`)
and from observed outcomes (`new`). The tables and the command are appended to docs/benchmarks.md
(section "bench cost").
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_LATENCY = "base=0.005,prefill=2.5e-5,cached=1e-6,itl=0"  # "realistic" ÷ 10, decode time off
KEYS = {"off": "sk-bench-off", "on": "sk-bench-on", "explicit": "sk-bench-explicit"}
MODELS = {"openai": "gpt-4o", "openai-5.6": "gpt-5.6", "anthropic": "claude-sonnet-4-5",
          "gemini": "gemini-2.5-flash", "deepseek": "deepseek-chat"}
TOOLS = [("get_order", "Look up an order by its id"), ("refund_order", "Refund an order"),
         ("track_shipment", "Track a shipment"), ("search_kb", "Search the knowledge base"),
         ("update_address", "Change a delivery address"), ("list_invoices", "List a customer's invoices"),
         ("escalate", "Hand the case to a human"), ("send_email", "E-mail the customer")]
HANDBOOK = " ".join(f"Policy {i}: orders in category {i} may be returned within {10 + i % 20} days with a receipt, "
                    f"and refunds go back to the original payment method." for i in range(120))


def policies() -> dict[str, dict[str, Any]]:
    off = {"prompt_rewrite": {"enabled": False},
           "provider_cache": {"anthropic": {"enabled": False}, "gemini": {"enabled": False},
                              "openai": {"prompt_cache_key": "off", "breakpoints": "off"}}}
    on = {"prompt_rewrite": {"enabled": True},
          "provider_cache": {"anthropic": {"enabled": True}, "gemini": {"enabled": False},
                             "openai": {"prompt_cache_key": "auto"}}}
    explicit = {"prompt_rewrite": {"enabled": True},
                "provider_cache": {"gemini": {"enabled": True, "ttl": "10m", "min_expected_reuses": 5}}}
    common = {"response_cache": {"enabled": False}}
    from gateway_dev.bench import cost_adversarial

    return {**{f"bench-{m}": {"key": KEYS[m], **common, **p} for m, p in (("off", off), ("on", on),
                                                                          ("explicit", explicit))},
            **cost_adversarial.policies()}


def system_prompt(n: int) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_790_000_000 + n)) + "Z"
    return f"You are Acme's support agent. Current time: {stamp}. Follow the handbook. {HANDBOOK}"


# ---- one request per protocol ----------------------------------------------------------------------


@dataclass
class Turn:
    kind: str  # "user" | "assistant" | "call" | "result"
    text: str
    call_id: str = ""


def _schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"id": {"type": "string", "description": "the object's id"}},
            "required": ["id"]}


def build(vendor: str, system: str, turns: list[Turn], model: str | None = None) -> tuple[str, dict[str, Any]]:
    """(path, body) of one native request."""
    model = model or MODELS[vendor]
    if vendor in ("openai", "openai-5.6", "deepseek"):
        msgs: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for t in turns:
            if t.kind == "call":
                msgs.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": t.call_id, "type": "function", "function": {"name": "get_order", "arguments": t.text}}]})
            elif t.kind == "result":
                msgs.append({"role": "tool", "tool_call_id": t.call_id, "content": t.text})
            else:
                msgs.append({"role": t.kind, "content": t.text})
        tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": _schema()}}
                 for n, d in TOOLS]
        return "/v1/chat/completions", {"model": model, "messages": msgs, "tools": tools}
    if vendor == "anthropic":
        msgs = []
        for t in turns:
            if t.kind == "call":
                msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": t.call_id, "name": "get_order",
                                                               "input": {"id": t.text}}]})
            elif t.kind == "result":
                msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": t.call_id,
                                                          "content": t.text}]})
            else:
                msgs.append({"role": t.kind, "content": t.text})
        tools = [{"name": n, "description": d, "input_schema": _schema()} for n, d in TOOLS]
        return "/v1/messages", {"model": model, "max_tokens": 256, "system": system, "tools": tools,
                                "messages": msgs}
    contents = []
    for t in turns:
        if t.kind == "call":
            call = {"functionCall": {"name": "get_order", "args": {"id": t.text}}}
            contents.append({"role": "model", "parts": [call]})
        elif t.kind == "result":
            contents.append({"role": "user", "parts": [{"functionResponse": {"name": "get_order",
                                                                             "response": {"result": t.text}}}]})
        else:
            contents.append({"role": "user" if t.kind == "user" else "model", "parts": [{"text": t.text}]})
    decls = [{"name": n, "description": d, "parameters": _schema()} for n, d in TOOLS]
    return (f"/v1beta/models/{model}:generateContent",
            {"systemInstruction": {"parts": [{"text": system}]}, "tools": [{"functionDeclarations": decls}],
             "contents": contents})


def headers(vendor: str, key: str) -> dict[str, str]:
    if vendor == "anthropic":
        return {"x-api-key": key, "anthropic-version": "2023-06-01"}
    if vendor == "gemini":
        return {"x-goog-api-key": key}
    return {"authorization": f"Bearer {key}"}


def parse(vendor: str, data: dict[str, Any]) -> tuple[int, int, str]:
    """(prompt tokens, cached tokens, answer text) from a vendor response."""
    if vendor == "anthropic":
        u = data["usage"]
        cached = int(u.get("cache_read_input_tokens") or 0)
        prompt = int(u["input_tokens"]) + cached + int(u.get("cache_creation_input_tokens") or 0)
        text = "".join(b.get("text", "") for b in data.get("content", []) if b.get("type") == "text")
        return prompt, cached, text
    if vendor == "gemini":
        u = data["usageMetadata"]
        parts = data["candidates"][0]["content"].get("parts", [])
        return int(u["promptTokenCount"]), int(u.get("cachedContentTokenCount") or 0), \
            "".join(p.get("text", "") for p in parts)
    u = data["usage"]
    if vendor == "deepseek":
        cached = int(u.get("prompt_cache_hit_tokens") or 0)
    else:
        cached = int((u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return int(u["prompt_tokens"]), cached, data["choices"][0]["message"].get("content") or ""


# ---- sessions --------------------------------------------------------------------------------------


@dataclass
class Group:
    prompt: int = 0
    cached: int = 0
    requests: int = 0
    ids: list[str] = field(default_factory=list)
    cost: float = 0.0
    without: float = 0.0
    ttft: list[float] = field(default_factory=list)


def run_session(client: Any, url: str, vendor: str, mode: str, turns: int, seq: list[int], group: Group) -> None:
    session = uuid.uuid4().hex[:8]
    history: list[Turn] = []
    for t in range(turns):
        if t % 2 == 1:  # every other request ends in a tool call and its result
            call_id = f"call_{session}_{t}"
            history += [Turn("call", f"ord-{session}-{t}", call_id),
                        Turn("result", f"Order ord-{session}-{t}: shipped, 2 items, total 48.20 EUR.", call_id)]
        else:
            history.append(Turn("user", f"[session {session}] Step {t}: what does policy {t * 3 % 120} mean for a "
                                        f"customer who bought {t + 2} items last week?"))
        seq[0] += 1
        path, body = build(vendor, system_prompt(seq[0]), history)
        r = client.post(url + path, json=body, headers=headers(vendor, KEYS[mode]))
        if r.status_code != 200:
            raise RuntimeError(f"{vendor}/{mode}: HTTP {r.status_code}: {r.text[:300]}")
        prompt, cached, text = parse(vendor, r.json())
        group.prompt += prompt
        group.cached += cached
        group.requests += 1
        group.ids.append(r.headers["x-gateway-request-id"])
        history.append(Turn("assistant", text or "(no text)"))


def theoretical(turns: int) -> float:
    return (turns - 1) / (turns + 1)


def _start(emu: Any, folder: Path) -> tuple[Any, Any]:
    from gateway.app import create_app
    from gateway.assembly import build_components
    from gateway.config import Settings
    from gateway.provider_cache.explain import PrefixExplainStage
    from gateway.provider_cache.stage import ProviderCacheStage
    from gateway.rewrite.stage import RewriteStage
    from gateway.stores import open_store
    from gateway.usage.stage import UsageStage
    from gateway_dev.localrun import UvicornThread, write_policies

    write_policies(folder / "policies", policies())
    settings = Settings(policies=folder / "policies", data_dir=folder / "data", openai_api_key="sk-up",
                        anthropic_api_key="sk-up", gemini_api_key="up", deepseek_api_key="sk-up",
                        openai_base_url=emu.openai_base_url, anthropic_base_url=emu.anthropic_base_url,
                        gemini_base_url=emu.gemini_base_url, deepseek_base_url=emu.deepseek_base_url)
    store = open_store(settings)
    stage = ProviderCacheStage(settings, store)
    usage = UsageStage(settings, store)
    parts = build_components(settings, store=store, stages=[usage, RewriteStage(),
                                                            PrefixExplainStage(settings, store, prices=usage.prices),
                                                            stage])
    server = UvicornThread(create_app(settings, parts)).start(timeout=120)
    return server, parts


def _collect(server: Any, parts: Any, groups: dict[tuple[str, str, int], Group],
             extra_ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Cost and TTFT of every request, from the gateway's own usage records (also returned by id)."""
    from gateway.usage.query import records

    wanted: dict[str, Group | None] = {rid: g for g in groups.values() for rid in g.ids}
    wanted.update({rid: None for rid in extra_ids or []})
    found: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + 30
    while len(found) < len(wanted) and time.monotonic() < deadline:
        time.sleep(0.3)  # the recorder flushes in the background
        for tenant in policies():
            for rec in server.call(records(parts.store, tenant, 100_000)):
                if rec["request_id"] in wanted:
                    found[rec["request_id"]] = rec
    for rid, rec in found.items():
        g = wanted[rid]
        if g is None:
            continue
        g.cost += float(rec.get("cost_usd") or 0.0)
        g.without += float(rec.get("cost_without_cache_usd") or 0.0)
        if rec.get("time_to_first_token_s") is not None:
            g.ttft.append(float(rec["time_to_first_token_s"]))
    return found


def _table(groups: dict[tuple[str, str, int], Group]) -> list[str]:
    head = ("| vendor | mode | T | requests | prompt tokens | cached share | (T−1)/(T+1) | share ÷ theory "
            "| cost USD | cost ÷ off | cost ÷ without cache | mean TTFT ms | TTFT ÷ off |")
    lines = [head, "|" + "---|" * 13]
    for (vendor, mode, turns), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1] != "off")):
        off = groups.get((vendor, "off", turns))
        share = g.cached / g.prompt if g.prompt else 0.0
        ttft = sum(g.ttft) / len(g.ttft) * 1000 if g.ttft else float("nan")
        off_ttft = sum(off.ttft) / len(off.ttft) * 1000 if off and off.ttft else float("nan")
        cost_ratio = g.cost / off.cost if off and off.cost else float("nan")
        without = g.cost / g.without if g.without else float("nan")
        lines.append(f"| {vendor} | {mode} | {turns} | {g.requests} | {g.prompt} | {share:.1%} | "
                     f"{theoretical(turns):.1%} | {share / theoretical(turns):.2f} | {g.cost:.4f} | "
                     f"{cost_ratio:.2f} | {without:.3f} | {ttft:.1f} | {ttft / off_ttft:.2f} |")
    verdicts = []
    for vendor, mode in sorted({(v, m) for v, m, _ in groups}):
        long = [g.cached / g.prompt / theoretical(t) for (v, m, t), g in groups.items()
                if v == vendor and m == mode and t >= 10 and g.prompt]
        if long:
            verdicts.append(f"{vendor}/{mode} {'meets' if min(long) >= 0.9 else 'misses'} it (min {min(long):.2f})")
    lines += ["", "Target, cached share ≥ 0.9 × (T−1)/(T+1) for every T ≥ 10: " + "; ".join(verdicts) + "."]
    return lines


def _write_docs(path: str, command: str, lines: list[str], note: str) -> None:
    start, end = "<!-- bench-cost:start -->", "<!-- bench-cost:end -->"
    section = "\n".join([start, "## bench cost: rewrite and provider prompt caches", "", "```", command, "```", "",
                         note, "", *lines, end])
    doc = Path(path)
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    if start in text and end in text:
        text = text[:text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


def run_bench(turns_spec: str, sessions: int, vendors: list[str], latency: str, docs: str,
              adversarial: bool = True) -> int:
    import httpx2

    from gateway_dev.bench import cost_adversarial as adv
    from gateway_dev.emulators import EmulatorSet

    turns_list = [int(t) for t in turns_spec.split(",") if t.strip()]
    groups: dict[tuple[str, str, int], Group] = defaultdict(Group)
    adv_rows: dict[tuple[str, str, str], adv.Row] = defaultdict(adv.Row)
    seq = [0]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp, \
            EmulatorSet(latency=latency, frozen_clock=False) as emu:
        server, parts = _start(emu, Path(tmp))
        try:
            with httpx2.Client(timeout=120) as client:
                for vendor in vendors:
                    for mode in ("off", "on", "explicit") if vendor == "gemini" else ("off", "on"):
                        for turns in turns_list:
                            emu.reset(caches=True)  # every group starts cold
                            server.call(parts.pipeline.stage("provider_cache").purge(f"bench-{mode}"))
                            for _ in range(sessions):
                                run_session(client, server.url, vendor, mode, turns, seq, groups[(vendor, mode, turns)])
                        print(f"  {vendor}/{mode} done ({time.monotonic() - started:.0f} s)", flush=True)
                for vendor in vendors if adversarial else []:
                    for kind in ("volatile", "flap", "shuffle"):
                        for mode in ("old", "new"):
                            emu.reset(caches=True)
                            adv.run_workload(client, server.url, vendor, kind, mode, 10, sessions,
                                             adv_rows[(kind, vendor, mode)], seq)
                    print(f"  {vendor}/adversarial done ({time.monotonic() - started:.0f} s)", flush=True)
            found = _collect(server, parts, groups, [i for r in adv_rows.values() for i in r.ids])
            book = parts.pipeline.stage("usage").prices
        finally:
            server.stop()
    lines = _table(groups)
    if adv_rows:
        lines += ["", "Adversarial workloads (10 requests per session; `old`: the layer deciding from priors alone, "
                      "`new`: from observed outcomes):", "", *adv.table(adv_rows, found, book)]
    print("\n".join(lines))
    command = (f"llm-cache-gateway bench cost --turns {turns_spec} --sessions {sessions} "
               f"--vendors {','.join(vendors)} --latency {latency}")
    requests = sum(g.requests for g in groups.values()) + sum(r.requests for r in adv_rows.values())
    note = (f"{sessions} session(s) per row, {requests} requests, "
            f"{time.monotonic() - started:.0f} s on a shared 2-core machine; emulator latency `{latency}`. "
            "Cached share = vendor-reported cached prompt tokens ÷ all prompt tokens; cost from the gateway's "
            "usage records (litellm prices; Gemini storage and creation included); ratios against `off` "
            "and against the same requests' cost without caching, in the same run.")
    if docs != "-":
        _write_docs(docs, command, lines, note)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", default="5,10,20,40", help="session lengths T, comma-separated")
    p.add_argument("--sessions", type=int, default=2, help="sessions per vendor, mode and T")
    p.add_argument("--vendors", default="openai,openai-5.6,anthropic,gemini,deepseek")
    p.add_argument("--no-adversarial", action="store_true", help="skip the adversarial workloads")
    p.add_argument("--latency", default=DEFAULT_LATENCY, help="emulator latency model (see docs/emulators.md)")
    p.add_argument("--docs", default="docs/benchmarks.md", help="append the table here ('-' to skip)")
    args = p.parse_args(argv)
    return run_bench(args.turns, args.sessions, args.vendors.split(","), args.latency, args.docs,
                     not args.no_adversarial)


if __name__ == "__main__":
    raise SystemExit(main())

