"""The repository's own labelled pairs: a compact hand-written source turned into the pairs format.

Source files (`tests/data/eval/own/source_*.txt`): `@ domain lang` starts a group, `C: question` a
cached question, then `+kind: query` (the cached answer serves the query) or `-kind: query` (it does
not). `source_a.txt` is the tuning split; `source_b.txt` … `source_l.txt` are eleven held-out splits
(other domains), each written and frozen before the method it was first measured on was final:
`tests/semantic/test_bench.py` pins their digests (docs/semantic-cache.md says which were seen when).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OWN_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "eval" / "own"
SPLITS = {"tune": "source_a.txt", "heldout": "source_b.txt", "heldout2": "source_c.txt", "heldout3": "source_d.txt",
          "heldout4": "source_e.txt", "heldout5": "source_f.txt",
          "heldout6": "source_g.txt", "heldout7": "source_h.txt",
          "heldout8": "source_i.txt", "heldout9": "source_j.txt", "heldout10": "source_k.txt",
          "heldout11": "source_l.txt"}


def parse_source(text: str, prefix: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    domain = lang = cached = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            domain, lang = line[1:].split()
            continue
        if line.startswith("C:"):
            cached = line[2:].strip()
            continue
        if line[:1] not in "+-" or ":" not in line or cached is None or domain is None:
            raise ValueError(f"line {n}: cannot read {raw!r}")
        kind, query = line[1:].split(":", 1)
        rows.append({"id": f"{prefix}-{len(rows) + 1:04d}", "lang": lang, "domain": domain, "cached": cached,
                     "query": query.strip(), "reuse": line[0] == "+", "kind": kind.strip()})
    return rows


def own_pairs(split: str) -> list[dict[str, Any]]:
    """The rows of one split (`tune` or `heldout`)."""
    name = SPLITS[split]
    return parse_source((OWN_DIR / name).read_text(encoding="utf-8"), f"own-{split}")


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
