"""`llm-cache-gateway bench semantic-live [--pairs FILE ...]`: the pairs through the live gateway.

What a judge measures: the gateway on loopback in front of the vendor emulators, one tenant with the
semantic cache on at its default settings. For each pair, in file order, the cached question is asked
through a real request (the upstream answers it and the answer is written), then the query is asked
and its `x-gateway-cache` header read: `semantic-hit` on a `reuse: false` pair is a false hit. All
pairs share one tenant and one context, so entries accumulate as they would in traffic. Default
pairs: the dev set and our own tuning and held-out splits.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gateway_dev.bench.semantic import Counts, _fmt, default_sets, load_pairs

KEY = "sk-live-bench-tenant"


def run(sets: list[tuple[str, list[dict[str, Any]]]], threshold: float | None = None) -> dict[str, Any]:
    from gateway_dev.emulators.harness import EmulatorSet
    from gateway_dev.localrun import LocalGateway

    semantic: dict[str, Any] = {"enabled": True}
    if threshold is not None:
        semantic["threshold"] = threshold
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="semantic-live-") as tmp, EmulatorSet(vllm_replicas=0) as emu:
        for name, rows in sets:
            folder = Path(tmp) / name.replace("/", "_")
            tenants = {"live": {"key": KEY, "semantic_cache": semantic}}
            with LocalGateway(emu, tenants, folder) as gw:
                client = gw.openai(KEY)
                hits = []
                for r in rows:
                    for text in (r["cached"], r["query"]):
                        raw = client.chat.completions.with_raw_response.create(
                            model="gpt-4o-mini", messages=[{"role": "user", "content": text}])
                        if text is r["cached"]:
                            gw.wait_idle()  # the cached question's answer is written before the query
                    hits.append(raw.headers.get("x-gateway-cache") == "semantic-hit")
                gw.wait_idle()
            results[name] = summarize(rows, np.array(hits))
    return results


def summarize(rows: list[dict[str, Any]], hits: np.ndarray) -> dict[str, dict[str, float]]:
    groups: dict[str, Counts] = {}
    for r, h in zip(rows, hits, strict=True):
        keys = ["overall", f"lang={r.get('lang', '?')}"]
        if not r["reuse"] and r.get("kind") not in ("unrelated", "unrelated_same_topic"):
            keys.append("hard negatives")
        for k in keys:
            groups.setdefault(k, Counts()).add(bool(h), bool(r["reuse"]))
    return {k: {"precision": c.precision, "recall": c.recall, "false_hit_rate": c.false_hit_rate,
                "fp": c.fp, "tp": c.tp} for k, c in groups.items()}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="llm-cache-gateway bench semantic-live", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", action="append", type=Path, default=None, help="labelled pairs; repeatable")
    ap.add_argument("--threshold", type=float, default=None, help="policy threshold (default: the policy's)")
    args = ap.parse_args(list(argv) if argv is not None else None)
    sets = [(str(p), load_pairs(p)) for p in args.pairs] if args.pairs else default_sets()
    results = run(sets, args.threshold)
    print(f"{'set':40} {'group':16} {'P':>6} {'R':>6} {'FH':>6} {'false hits':>10}")
    for name, groups in results.items():
        for g in ("overall", "lang=en", "lang=zh", "hard negatives"):
            if g in groups:
                x = groups[g]
                print(f"{name:40} {g:16} {_fmt(x['precision']):>6} {_fmt(x['recall']):>6} "
                      f"{_fmt(x['false_hit_rate']):>6} {x['fp']:>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
