"""`llm-cache-gateway semantic calibrate --pairs FILE --precision 0.98`: thresholds from a tenant's own data.

The operator labels a sample of their own question pairs (the pairs format: `cached`, `query`,
`reuse`, optionally `lang`). Each pair is embedded with the configured embedder and scored as the
live decision sees it once evidence has opened the reworded lane: the guard's verdict, then the
cosine (a same-content pair gets `same_content_margin` more). For each language, every threshold of
a grid (similarity 0.50 … 0.995) gets the Clopper-Pearson lower confidence limit of the precision of
the pairs it would serve, at the confidence split over the grid (Bonferroni), so all the limits hold
together and choosing among them is safe; the lowest threshold whose limit reaches the target is
printed with that limit, the precision seen and the recall it gives. "unreachable" means no
threshold holds the target with that confidence on this sample.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gateway.semantic.evidence import lower_bound
from gateway.semantic.guard import ANCHOR_SIMILARITY, GuardParams, check, cosine_for, lane_of
from gateway.semantic.lexical import analyze

MIN_SERVED = 10  # a threshold that serves fewer pairs says nothing


@dataclass(frozen=True, slots=True)
class Calibration:
    lang: str
    threshold: float | None  # similarity scale; None: unreachable
    cosine: float | None
    lower_bound: float  # of the precision at that threshold
    precision: float
    recall: float
    served: int
    pairs: int


def load_pairs(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        for name in ("cached", "query", "reuse"):
            if name not in row:
                raise ValueError(f"{path}:{n}: missing field {name!r}")
        rows.append(row)
    return rows


def decision_scores(rows: list[dict[str, Any]], cosines: np.ndarray, params: GuardParams) -> np.ndarray:
    """The cosine each pair needs to clear to be served (-inf: the guard rejects it at any cosine)."""
    out = np.full(len(rows), -np.inf)
    for i, (r, c) in enumerate(zip(rows, cosines, strict=True)):
        reason, al = check(analyze(r["cached"]), analyze(r["query"]), (), params)
        if r["cached"] == r["query"] or reason is None:
            same = r["cached"] == r["query"] or lane_of(al) == "same_content"
            out[i] = float(c) + (params.same_content_margin if same else 0.0)
    return out


GRID = tuple(round(0.50 + 0.005 * i, 3) for i in range(100))  # similarity thresholds tried, 0.50..0.995


def calibrate(rows: list[dict[str, Any]], scores: np.ndarray, anchor: float, precision: float,
              confidence: float = 0.95) -> list[Calibration]:
    """Per language, the lowest grid threshold whose precision bound holds the target. The bound of
    every grid threshold holds at once (Bonferroni over the grid), so picking the best is safe."""
    each = 1.0 - (1.0 - confidence) / len(GRID)
    langs = sorted({_lang(r) for r in rows})
    y_all = np.array([bool(r["reuse"]) for r in rows])
    out = []
    for lang in langs:
        mask = np.array([_lang(r) == lang for r in rows])
        y, s = y_all[mask], scores[mask]
        positives = int(y.sum())
        best = Calibration(lang, None, None, 0.0, float("nan"), 0.0, 0, int(mask.sum()))
        for sim in GRID:
            cut = cosine_for(sim, anchor)
            served = s >= cut
            n, tp = int(served.sum()), int((served & y).sum())
            if n < MIN_SERVED:
                continue
            bound = lower_bound(tp, n, each)
            if bound >= precision:
                best = Calibration(lang, sim, round(cut, 4), bound, tp / n, tp / max(1, positives), n,
                                   int(mask.sum()))
                break  # the grid rises: the first that holds is the lowest, with the most recall
        out.append(best)
    return out


def _lang(row: dict[str, Any]) -> str:
    return str(row.get("lang") or analyze(row["query"]).lang)


def print_table(results: Sequence[Calibration], precision: float, confidence: float, out: Any = None) -> None:
    out = out or sys.stdout
    print(f"target precision {precision:.3f} at {confidence:.0%} confidence (Clopper-Pearson lower limit); "
          f"similarity scale: {ANCHOR_SIMILARITY:.2f} = the embedder's anchor cosine", file=out)
    print(f"{'lang':6} {'pairs':>6} {'threshold':>9} {'cosine':>7} {'served':>6} {'precision':>9} "
          f"{'lower bound':>11} {'recall':>7}", file=out)
    for c in results:
        if c.threshold is None:
            print(f"{c.lang:6} {c.pairs:6d} {'unreachable':>9}", file=out)
            continue
        print(f"{c.lang:6} {c.pairs:6d} {c.threshold:9.4f} {c.cosine:7.4f} {c.served:6d} {c.precision:9.3f} "
              f"{c.lower_bound:11.3f} {c.recall:7.3f}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="llm-cache-gateway semantic calibrate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", required=True, type=Path, help="labelled pairs (JSON lines)")
    ap.add_argument("--precision", type=float, default=0.98, help="target precision (0.5..1)")
    ap.add_argument("--confidence", type=float, default=0.95, help="confidence of the bound")
    ap.add_argument("--config", default=None, help="settings YAML (embedding model, semantic.params)")
    ap.add_argument("--json", type=Path, default=None, help="also write the thresholds to this file")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if not 0.5 <= args.precision < 1.0 or not 0.5 <= args.confidence < 1.0:
        ap.error("--precision and --confidence must be in [0.5, 1)")
    from gateway.config import Settings
    from gateway.semantic.embedder import backend_from_settings
    from gateway.semantic.options import SemanticOptions

    settings = Settings.load(args.config)
    options = SemanticOptions.from_params(settings.semantic.params)
    rows = load_pairs(args.pairs)
    key = settings.vendor_key("openai")
    backend = backend_from_settings(settings.embedding_model, settings.base_url("openai"), key)
    backend.load()
    texts = sorted({r["cached"] for r in rows} | {r["query"] for r in rows})
    vectors: dict[str, np.ndarray] = {}
    for i in range(0, len(texts), 64):
        chunk = texts[i : i + 64]
        vectors.update(zip(chunk, backend.encode(chunk), strict=True))
    cosines = np.array([float(vectors[r["cached"]] @ vectors[r["query"]]) for r in rows])
    anchor = options.anchor_cosine if options.anchor_cosine is not None else backend.anchor
    results = calibrate(rows, decision_scores(rows, cosines, options.guard), anchor, args.precision,
                        args.confidence)
    print(f"pairs: {args.pairs} ({len(rows)}); embedder: {backend.name}")
    print_table(results, args.precision, args.confidence)
    if args.json:
        args.json.write_text(json.dumps([_as_dict(c) for c in results], indent=2))
    return 0


def _as_dict(c: Calibration) -> dict[str, Any]:
    return {f: getattr(c, f) for f in Calibration.__slots__}
