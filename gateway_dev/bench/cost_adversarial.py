"""`bench cost`'s adversarial workloads: traffic on which a provider-cache layer that decides from
priors alone pays for writes nobody reads, run with the layer deciding from priors (`old`, the
policy's `provider_cache.learn: false`) and from observed outcomes (`new`), in the same run.

- `volatile`: a timestamp at the top of the system prompt, prompt rewrite off;
- `flap`: the model alternates between two of the vendor's models on every request;
- `shuffle`: the tool definitions arrive in a new order on every request, rewrite off.

Each row: cost from the gateway's usage records, the cost without any caching, their ratio, and the
probe bound of docs/provider-caches.md (per model: `max_unread_writes(n)` × the most a write nobody
reads can cost: (W − B)·P, Gemini: (R + storage for the TTL)·P).
"""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gateway_dev.bench.cost import Turn, build, headers, parse

ADV_KEYS = {"old": "sk-bench-adv-old", "new": "sk-bench-adv-new"}
FLAP = {"openai": ("gpt-4o", "gpt-4.1"), "openai-5.6": ("gpt-5.6", "gpt-5.5"),
        "anthropic": ("claude-sonnet-4-5", "claude-sonnet-4-6"), "gemini": ("gemini-2.5-flash", "gemini-2.5-pro"),
        "deepseek": ("deepseek-chat", "deepseek-reasoner")}
GEMINI_TTL_H = 10 / 60
HANDBOOK = " ".join(f"Policy {i}: orders in category {i} may be returned within {10 + i % 20} days with a receipt."
                    for i in range(160))


def policies() -> dict[str, dict[str, Any]]:
    layer = {"prompt_rewrite": {"enabled": False}, "response_cache": {"enabled": False},
             "provider_cache": {"anthropic": {"enabled": True}, "openai": {"prompt_cache_key": "auto"},
                                "gemini": {"enabled": True, "ttl": "10m", "min_expected_reuses": 5}}}
    out = {}
    for mode, key in ADV_KEYS.items():
        p = {k: dict(v) if isinstance(v, dict) else v for k, v in layer.items()}
        p["provider_cache"] = {**layer["provider_cache"], "learn": mode == "new"}  # type: ignore[dict-item]
        out[f"bench-adv-{mode}"] = {"key": key, **p}
    return out


@dataclass
class Row:
    requests: int = 0
    ids: list[str] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)  # request id -> model


def run_workload(client: Any, url: str, vendor: str, kind: str, mode: str, turns: int, sessions: int,
                 row: Row, seq: list[int]) -> None:
    rng = random.Random(f"{vendor}{kind}")
    for _ in range(sessions):
        session = uuid.uuid4().hex[:8]
        history: list[Turn] = []
        for t in range(turns):
            seq[0] += 1
            history.append(Turn("user", f"[{session}] Step {t}: what does policy {t * 3 % 160} mean here?"))
            system = f"Current time: 2026-11-05T10:{seq[0] // 60 % 60:02d}:{seq[0] % 60:02d}Z. {HANDBOOK}" \
                if kind == "volatile" else f"You are Acme's support agent. {HANDBOOK}"
            model = FLAP[vendor][t % 2] if kind == "flap" else FLAP[vendor][0]
            path, body = build(vendor, system, history, model=model)
            if kind == "shuffle":
                _shuffle(body, rng)
            r = client.post(url + path, json=body, headers=headers(vendor, ADV_KEYS[mode]))
            if r.status_code != 200:
                raise RuntimeError(f"{vendor}/{kind}/{mode}: HTTP {r.status_code}: {r.text[:300]}")
            rid = r.headers["x-gateway-request-id"]
            row.ids.append(rid)
            row.models[rid] = model
            row.requests += 1
            history.append(Turn("assistant", parse(vendor, r.json())[2] or "(no text)"))


def _shuffle(body: dict[str, Any], rng: random.Random) -> None:
    tools = body.get("tools")
    if isinstance(tools, list) and tools and isinstance(tools[0], dict) and "functionDeclarations" in tools[0]:
        decls = list(tools[0]["functionDeclarations"])
        rng.shuffle(decls)
        body["tools"] = [{"functionDeclarations": decls}]
    elif isinstance(tools, list):
        tools = list(tools)
        rng.shuffle(tools)
        body["tools"] = tools


def premium(vendor: str, rec: dict[str, Any], book: Any) -> float:
    """The most one unread write of this request's prefix costs over sending it plain."""
    provider = "openai" if vendor.startswith("openai") else vendor
    p = book.lookup(provider, rec["model"])
    tokens = int(rec.get("input_tokens") or 0)
    if vendor == "gemini":
        return tokens * (p.read_rate + p.storage_per_token_hour * GEMINI_TTL_H)
    return tokens * max(0.0, p.write_rate - p.input)


def table(rows: dict[tuple[str, str, str], Row], found: dict[str, dict[str, Any]], book: Any) -> list[str]:
    from gateway.provider_cache.outcomes import max_unread_writes

    lines = ["| workload | vendor | mode | requests | cost USD | without cache USD | cost ÷ without | probe bound USD "
             "| within bound |", "|" + "---|" * 9]
    for (kind, vendor, mode), row in sorted(rows.items()):
        recs = [found[i] for i in row.ids if i in found]
        cost = sum(float(r.get("cost_usd") or 0) for r in recs)
        without = sum(float(r.get("cost_without_cache_usd") or 0) for r in recs)
        per_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in recs:
            per_model[r["model"]].append(r)
        bound = sum(max_unread_writes(len(rs)) * max(premium(vendor, r, book) for r in rs)
                    for rs in per_model.values())
        ok = "yes" if cost <= without + bound + 1e-9 else "no"
        lines.append(f"| {kind} | {vendor} | {mode} | {row.requests} | {cost:.4f} | {without:.4f} | "
                     f"{cost / without if without else float('nan'):.3f} | {bound:.4f} | {ok} |")
    return lines
