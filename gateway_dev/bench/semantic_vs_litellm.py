"""Semantic-cache quality: the gateway's decision against LiteLLM's documented method, on labelled pairs.

LiteLLM's semantic caches (`qdrant-semantic`, `redis-semantic`) embed the prompt (the messages'
content joined) and serve the closest entry whose cosine clears one `similarity_threshold`; its
docs' example value is 0.8 (docs.litellm.ai/docs/proxy/caching_semantic). Here both methods judge
the same pairs with the same embedder (the gateway's configured one; LiteLLM's documented default,
OpenAI's `text-embedding-ada-002`, cannot be reached offline), so only the decision differs:
- the gateway: `gateway_dev.bench.semantic.judge` — the live decision function at the policy threshold;
- LiteLLM as documented: cosine ≥ 0.8;
- LiteLLM at its best: the single cosine threshold chosen on these very pairs to allow no more
  false hits than the gateway makes (an oracle no deployment has; it bounds what tuning could do).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from gateway.config import Settings
from gateway.policy.models import SemanticCachePolicy
from gateway.semantic.guard import cosine_for
from gateway.semantic.options import SemanticOptions
from gateway_dev.bench.semantic import UNRELATED, Counts, cosines, judge, load_pairs

LITELLM_DOC_THRESHOLD = 0.8
ROOT = Path(__file__).resolve().parents[2]


def _counts(rows: list[dict[str, Any]], hits: np.ndarray, hard_only: bool = False) -> Counts:
    c = Counts()
    for r, h in zip(rows, hits, strict=True):
        if hard_only and (r["reuse"] or r.get("kind") in UNRELATED):
            continue
        c.add(bool(h), bool(r["reuse"]))
    return c


def _row(method: str, rows: list[dict[str, Any]], hits: np.ndarray) -> dict[str, Any]:
    c, hard = _counts(rows, hits), _counts(rows, hits, hard_only=True)
    return {"method": method, "precision": c.precision, "recall": c.recall, "false_hit_rate": c.false_hit_rate,
            "hard_false_hit_rate": hard.false_hit_rate, "tp": c.tp, "fp": c.fp, "fn": c.fn, "tn": c.tn}


def best_single_threshold(sims: np.ndarray, reuse: np.ndarray, max_false_hit: float) -> float:
    """The lowest cosine cut whose false-hit rate stays within `max_false_hit` (most recall)."""
    negatives = sims[~reuse]
    if negatives.size == 0:
        return float(sims.min())
    allowed = int(np.floor(max_false_hit * negatives.size + 1e-9))
    ordered = np.sort(negatives)[::-1]
    # a cut just above the (allowed+1)-th highest negative lets exactly `allowed` negatives through
    return float(np.nextafter(ordered[allowed], np.inf)) if allowed < ordered.size else float(ordered[-1])


def compare(pairs: Path, settings: Settings | None = None) -> dict[str, Any]:
    settings = settings or Settings.load(None)
    options = SemanticOptions.from_params(settings.semantic.params)
    rows = load_pairs(pairs)
    sims, name, anchor, seconds = cosines(rows, settings)
    if options.anchor_cosine is not None:
        anchor = options.anchor_cosine
    threshold = SemanticCachePolicy().threshold
    raw = cosine_for(threshold, anchor)
    ours = judge(rows, sims, raw, options.guard)
    reuse = np.array([bool(r["reuse"]) for r in rows])
    ours_row = _row(f"gateway (guard, similarity {threshold:.2f} = cosine {raw:.3f})", rows, ours)
    best = best_single_threshold(sims, reuse, ours_row["false_hit_rate"])
    return {
        "pairs": os.path.relpath(pairs, ROOT) if pairs.is_absolute() else str(pairs), "n": len(rows),
        "embedder": name, "embed_seconds": seconds,
        "rows": [
            ours_row,
            _row(f"LiteLLM as documented (cosine ≥ {LITELLM_DOC_THRESHOLD})", rows, sims >= LITELLM_DOC_THRESHOLD),
            _row(f"LiteLLM, one cosine cut at the gateway's calibrated {raw:.3f}", rows, sims >= raw),
            _row(f"LiteLLM, best single cut for these pairs ({best:.3f}, oracle)", rows, sims >= best),
        ],
    }


def vector_search_available(redis_port: int) -> str:
    """Why LiteLLM's semantic caches cannot run here, or '' when a vector-capable Redis is there."""
    cli = shutil.which("redis-cli")
    modules = ""
    if cli:
        out = subprocess.run([cli, "-p", str(redis_port), "MODULE", "LIST"], capture_output=True, text=True)
        modules = out.stdout.strip()
    if "search" in modules.lower():
        return ""
    return ("LiteLLM's semantic caches could not run here: `redis-semantic` needs Redis with vector search "
            "(Redis Stack or Redis 8; this redis-server has no search module: `MODULE LIST` "
            f"→ {modules or 'empty'}) and `qdrant-semantic` needs a Qdrant server (none is installed on this "
            "machine; qdrant-client's local mode is a library, not the HTTP server LiteLLM calls). So their "
            "semantic *quality* is compared below by their documented method instead: one cosine threshold "
            "over an embedding of the prompt.")


def markdown(results: list[dict[str, Any]]) -> list[str]:
    lines = []
    for res in results:
        lines += [f"`{res['pairs']}` ({res['n']} pairs; embedder `{res['embedder']}` for every method)", "",
                  "| method | precision | recall | false-hit rate | hard-negative false-hit rate | TP | FP | FN | TN |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in res["rows"]:
            lines.append(f"| {r['method']} | {_f(r['precision'])} | {_f(r['recall'])} | {_f(r['false_hit_rate'])} | "
                         f"{_f(r['hard_false_hit_rate'])} | {r['tp']} | {r['fp']} | {r['fn']} | {r['tn']} |")
        lines.append("")
    return lines


def _f(x: float) -> str:
    return "–" if x != x else f"{x:.3f}"
