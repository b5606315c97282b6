"""`llm-cache-gateway bench startup`: what building and starting the gateway costs, step by step, in fresh
processes: resident memory (VmRSS) and seconds after the imports, `create_app`, each layer's `start()`
and the background loads (the semantic layer's embedder), once with no tenant using the semantic layer
and once with one that does. The largest packages each step imported are listed beside it.

    llm-cache-gateway bench startup [--parts] [--write docs/benchmarks.md]

`--parts` adds a third process that loads the semantic layer's parts one by one (the embedder, each of
the guard's tables, jieba, spaCy, the guard's warm-up), RSS after each (after `malloc_trim`, as the layer's
load ends).

In-process figures of the same work `serve` does before `/readyz` says ready (no HTTP server, no
store connection beyond the embedded one): `bench litellm` measures the served process itself.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gateway_dev.bench.common import OFFLINE_ENV, append_section
from gateway_dev.localrun import write_policies

TITLE = "Start-up: memory and time per step"

_STEPS = r"""
import asyncio, collections, json, sys, time
t0 = time.perf_counter()
steps = []

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")

seen = set(sys.modules)

def step(name, started):
    global seen
    new = collections.Counter(m.split(".")[0] for m in set(sys.modules) - seen)
    seen = set(sys.modules)
    steps.append({"step": name, "seconds": time.perf_counter() - started, "rss_mib": rss(),
                  "imported": [f"{k} ({v})" for k, v in new.most_common(4)]})

steps.append({"step": "interpreter", "seconds": 0.0, "rss_mib": rss(), "imported": []})
t = time.perf_counter()
from gateway.app import create_app
from gateway.config import Settings
step("import gateway.app", t)
t = time.perf_counter()
app = create_app(Settings.load())
step("create_app", t)
parts = app.state.components

async def main():
    from gateway.protocols.translate import preload
    t = time.perf_counter()
    await asyncio.to_thread(preload)
    step("translation tables", t)
    for stage in parts.pipeline.stages:
        t = time.perf_counter()
        await stage.start()
        step(f"start {stage.name}", t)
    t = time.perf_counter()
    loads = [task for task in parts._prepare() if task is not None]
    if loads:
        await asyncio.gather(*loads)
    step(f"background loads (semantic_cache: {parts.layer_states().get('semantic_cache')})", t)
    await parts.pipeline.stop()

asyncio.run(main())
print(json.dumps({"steps": steps, "total_s": time.perf_counter() - t0}))
"""


# The semantic layer's background load split into its parts, in the order `LayerLifecycle._load_all`
# loads them (each part's tables first, then the guard's warm-up and the parser that read them).
_PARTS = r"""
import collections, ctypes, gc, json, sys, time
def rss():
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # what the layer's load does once done
    except OSError:
        pass
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")
from gateway.app import create_app
from gateway.config import Settings
app = create_app(Settings.load())
from gateway.semantic import lean_tables, lexicon, structure
from gateway.semantic.embedder import UniversalSentenceEncoder
from gateway.semantic.guard import warm_up
steps = [{"step": "gateway imported, app created", "seconds": 0.0, "rss_mib": rss(), "imported": []}]
seen = set(sys.modules)
def part(name, load):
    global seen
    t = time.perf_counter()
    load()
    seconds = time.perf_counter() - t
    new = collections.Counter(m.split(".")[0] for m in set(sys.modules) - seen)
    seen = set(sys.modules)
    steps.append({"step": name, "seconds": seconds, "rss_mib": rss(),
                  "imported": [f"{k} ({v})" for k, v in new.most_common(4)]})
part("USE embedder (tokenizer, weights, table rows)", UniversalSentenceEncoder().load)
part("LemmInflect noun and verb lemmas", lean_tables._lemmas_table)
part("WordNet senses", lexicon.wordnet_senses)
part("English word list", lexicon.english_words)
part("pypinyin single characters", lambda: lean_tables.readings("好"))
part("jieba tables", lean_tables.jieba_posseg)
part("spaCy English pipeline", lambda: structure.load("en"))
part("guard warm-up (the rest it reads)", warm_up)
print(json.dumps({"steps": steps, "total_s": sum(s["seconds"] for s in steps)}))
"""


def run(semantic: bool, script: str = _STEPS) -> dict[str, object]:
    folder = Path(tempfile.mkdtemp(prefix="gw-startup-"))
    write_policies(folder / "policies", {"bench": {"key": "bench-key", "semantic_cache": {"enabled": semantic}}})
    env = {**os.environ, **OFFLINE_ENV, "GATEWAY_POLICIES": str(folder / "policies"),
           "GATEWAY_DATA_DIR": str(folder / "data")}
    env.pop("GATEWAY_REDIS_URL", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(result: dict[str, object], label: str) -> list[str]:
    rows = [f"**{label}** (total {result['total_s']:.2f} s)", "",
            "| step | seconds | RSS MiB after | + MiB | packages first imported (modules) |", "|---|---|---|---|---|"]
    before = 0.0
    for s in result["steps"]:  # type: ignore[attr-defined]
        rows.append(f"| {s['step']} | {s['seconds']:.2f} | {s['rss_mib']:.1f} | {s['rss_mib'] - before:+.1f} | "
                    f"{', '.join(s['imported']) or '–'} |")
        before = s["rss_mib"]
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench startup", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", type=Path, default=None, help="replace this benchmark's section of a markdown file")
    p.add_argument("--parts", action="store_true",
                   help="also the semantic layer's load part by part, in a third process")
    args = p.parse_args(argv)
    load = os.getloadavg()[0]
    off, on = run(False), run(True)
    by_part = [*table(run(True, _PARTS), "The semantic layer's load, part by part"), ""] if args.parts else []
    lines = [f"Fresh processes, {os.cpu_count()} CPUs, load average {load:.1f} before.", "",
             *table(off, "No tenant uses the semantic layer"), "", *table(on, "A tenant uses the semantic layer"), "",
             *by_part,
             "Command: `llm-cache-gateway bench startup" + (" " + " ".join(argv) if argv else "") + "`"]
    print("\n".join(lines))
    if args.write:
        append_section(args.write, TITLE, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
