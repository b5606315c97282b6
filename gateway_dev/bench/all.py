"""`llm-cache-gateway bench all [--quick] [--only a,b] [--no-write]`: every benchmark, then docs/benchmarks.md.

Runs, in order: core, response-cache, semantic (dev pairs, then QQP), semantic-lookup, cost, prefix, routing,
usage, emulator, protocols, litellm. Each runs as its own `python -m gateway bench NAME ...` process
(its `main(argv)`; a crash or hang of one cannot take the others with it; `--timeout` per benchmark),
with a progress bar. Machine-readable output is taken where a benchmark has it (`--json`, or the
markdown section it writes with `--write`/`--docs` into a scratch file); otherwise its printed output.
The load average is recorded before each benchmark: the machine may be shared.

The whole docs/benchmarks.md is regenerated: a summary, the plots (docs/img/*.png: latency
distributions gateway vs direct vs LiteLLM, cached share against T, the routing comparison) and one
section per benchmark with its exact command. `--only` re-runs some benchmarks and replaces just
their sections; `--no-write` prints and writes nothing (CI smoke).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "tests" / "data" / "eval"  # the labelled pairs, copied into the repository
DOC = ROOT / "docs" / "benchmarks.md"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SCRATCH_ARGS = re.compile(r" --(?:write|json|docs) [^\s`]*bench-all-[^\s/`]+/[^\s`]+")


@dataclass
class Bench:
    id: str
    cli: str  # the `bench` subcommand
    title: str
    full: list[str]
    quick: list[str] | None  # None: not part of a --quick run
    out: str = "stdout"  # stdout | write (--write FILE) | docs (--docs FILE) | json (--json FILE, stdout shown)
    result: dict[str, Any] = field(default_factory=dict)

    def args(self, quick: bool) -> list[str]:
        return list((self.quick or []) if quick else self.full)


def benchmarks() -> list[Bench]:
    dev, qqp = str(EVAL / "semantic_pairs_dev.jsonl"), str(EVAL / "qqp_pairs_sample.jsonl")
    return [
        Bench("core", "core", "Gateway core: added latency on the proxy path", [],
              ["--concurrency", "20", "--requests", "300"], "write"),
        Bench("response-cache", "response-cache", "Response cache: hits vs the miss path", [],
              ["--concurrency", "20", "--requests", "600", "--keys", "50", "--rate", "200", "--open-seconds", "2",
               "--backends", "redis"], "write"),
        Bench("semantic-dev", "semantic", "Semantic cache decision: labelled dev pairs",
              ["--pairs", dev, "--cross-validate"], ["--pairs", dev], "json"),
        Bench("semantic-qqp", "semantic", "Semantic cache decision: Quora question pairs", ["--pairs", qqp],
              None, "json"),
        Bench("semantic-lookup", "semantic-lookup", "Semantic cache lookup latency", [],
              ["--entries", "2000", "--tenants", "5", "--clients", "8", "--lookups-per-client", "10",
               "--distinct", "200", "--rate", "50"]),
        Bench("cost", "cost", "Rewrite and provider prompt caches: cached share and cost against T", [],
              ["--turns", "5,10", "--sessions", "1", "--vendors", "openai,anthropic", "--no-adversarial"], "docs"),
        Bench("prefix", "prefix", "Prefix-break explainer: added latency at a 30k-token prompt", [],
              ["--requests", "500"]),
        Bench("routing", "routing", "Cache-aware routing over vLLM replicas", [],
              ["--scale", "0.15", "--workloads", "a", "--policies", "cache_aware,round_robin", "--no-targets"],
              "json"),
        Bench("routing-peers", "routing", "Cache-aware routing against SGLang Model Gateway and vLLM's router",
              ["--workloads", "b,d,a,c", "--scale", "0.25", "--policies", "cache_aware,cache_aware+events",
               "--against", "sglang-router,vllm-router", "--failover"], None, "json"),
        Bench("usage", "usage", "Usage recording overhead", ["--app"], ["--requests", "2000"]),
        Bench("emulator", "emulator", "Emulator throughput", [], ["--duration", "2", "--warmup", "0.5"]),
        Bench("protocols", "protocols", "Protocol parsing, rendering and translation", ["--litellm"],
              ["--repeat", "3", "--deltas", "100"]),
        Bench("litellm", "litellm", "LiteLLM proxy side by side", ["--compare-workers"], ["--quick"], "json+write"),
        Bench("startup", "startup", "Start-up: memory and time per step", [], [], "write"),
    ]


def run_one(b: Bench, quick: bool, scratch: Path, timeout: float, log) -> None:  # type: ignore[no-untyped-def]
    args = b.args(quick)
    shown = f"llm-cache-gateway bench {b.cli} {' '.join(_shown(a) for a in args)}".strip()
    extra: list[str] = []
    md, js = scratch / f"{b.id}.md", scratch / f"{b.id}.json"
    if "write" in b.out:
        extra += ["--write", str(md)]
    if b.out == "docs":
        extra += ["--docs", str(md)]
    if "json" in b.out:
        extra += ["--json", str(js)]
    b.result = {"command": shown, "load_before": os.getloadavg()[0], "started": time.time()}
    if quick and b.quick is None:
        b.result.update(status="skipped", note="not part of a --quick run", seconds=0.0)
        return
    if b.cli == "routing" and importlib.util.find_spec("gateway_dev.bench.routing") is None:
        b.result.update(status="skipped", note="gateway_dev/bench/routing.py is not in this tree", seconds=0.0)
        return
    cmd = [sys.executable, "-m", "gateway", "bench", b.cli, *args, *extra]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
        rc, out = proc.returncode, proc.stdout
        if rc != 0 and (rc != 1 or not out.strip()):  # a crash, not a verdict: its traceback goes along
            out += "\n" + proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = -1, (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        out += f"\n[timed out after {timeout:.0f} s]"
    log.write(f"==== {shown} (rc {rc})\n{out}\n")
    b.result.update(rc=rc, seconds=time.monotonic() - t0, load_after=os.getloadavg()[0], output=_ANSI.sub("", out))
    b.result["status"] = "ok" if rc == 0 else "verdict" if rc == 1 and out.strip() else "failed"
    if md.exists():
        b.result["markdown"] = md.read_text()
    if js.exists():
        try:
            b.result["json"] = json.loads(js.read_text())
        except ValueError:
            pass


def _date(started: float | None) -> str:
    if started is None:
        return "an earlier run"
    return datetime.datetime.fromtimestamp(started, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _shown(arg: str) -> str:
    """A path argument as the repository root sees it (`tests/data/eval/...`), for the docs."""
    return os.path.relpath(arg, ROOT) if arg.startswith("/") and Path(arg).exists() else arg


# ---- the document --------------------------------------------------------------------------------------------


def _section_body(markdown: str) -> str:
    """What a benchmark wrote under its own `## title` (its title line and markers dropped)."""
    lines = markdown.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("## ")), None)
    if start is None:
        return markdown.strip()
    body = [ln for ln in lines[start + 1:] if not ln.startswith("<!-- bench-")]
    end = next((i for i, ln in enumerate(body) if ln.startswith("## ")), len(body))
    return "\n".join(body[:end]).strip()


def section(b: Bench, quick: bool) -> str:
    r = b.result
    status = {"ok": "ran, exit 0", "verdict": "ran; exit 1 is the benchmark's own verdict (a target it "
              "checks was missed or an error was counted; see below)", "failed": f"**failed** (exit {r.get('rc')})",
              "skipped": f"skipped: {r.get('note', '')}"}[r["status"]]
    meta = {k: r.get(k) for k in ("status", "seconds", "load_before", "rc")} | {"command": r["command"], "quick": quick}
    head = [f"<!-- bench:{b.id} {json.dumps(meta)} -->", f"## {b.title}", "",
            f"Command: `{r['command']}`" + (" (with `--write`/`--json` to a scratch file, added by `bench all`)"
                                             if b.out != "stdout" else ""), "",
            f"Status: {status}. Run on {_date(r.get('started'))}; load average "
            f"{r.get('load_before', float('nan')):.1f} before"
            + (f", {r['load_after']:.1f} after; {r['seconds']:.0f} s." if "load_after" in r else "."), ""]
    if r["status"] == "skipped":
        body = ""
    elif r["status"] == "failed":
        body = "```text\n" + "\n".join(r.get("output", "").strip().splitlines()[-40:]) + "\n```"
    elif r.get("markdown"):
        body = _section_body(r["markdown"])
    else:
        body = "```text\n" + r.get("output", "").strip() + "\n```"
    body = _SCRATCH_ARGS.sub("", body)  # the benchmark echoes its command: drop the scratch-file arguments
    return "\n".join(head) + "\n" + body + f"\n<!-- /bench:{b.id} -->\n"


def _plots(benches: dict[str, Bench], img: Path) -> list[tuple[str, Path]]:
    from gateway_dev.bench import plots

    img.mkdir(parents=True, exist_ok=True)
    made = []
    litellm = benches.get("litellm")
    if litellm and litellm.result.get("json"):
        made.append(("Latency distributions: gateway vs direct vs LiteLLM proxy (bench litellm)",
                     plots.latency_cdf(litellm.result["json"], img / "latency-cdf.png")))
    cost = benches.get("cost")
    rows = plots.parse_table(cost.result.get("output", ""), "cached share") if cost else []
    if rows:
        made.append(("Cached share of prompt tokens against T (bench cost)",
                     plots.cached_share(rows, img / "cached-share.png")))
    routing = benches.get("routing")
    if routing and (routing.result.get("json") or {}).get("results"):
        made.append(("Routing comparison (bench routing)", plots.routing(routing.result["json"], img / "routing.png")))
    return made


def document(benches: list[Bench], quick: bool, argv: list[str], old: str, img: Path) -> str:
    sections = {b.id: section(b, quick) for b in benches if b.result}
    ordered = []
    for b in benchmarks():  # the canonical order; sections not re-run are kept from the old file
        if b.id in sections:
            ordered.append(sections[b.id])
        elif (kept := re.search(rf"<!-- bench:{re.escape(b.id)} .*?<!-- /bench:{re.escape(b.id)} -->\n?", old,
                                re.S)):
            ordered.append(kept.group())
    summary = ["| benchmark | status | seconds | load before | command |", "|---|---|---|---|---|"]
    for text in ordered:
        m = re.match(r"<!-- bench:(\S+) (\{.*?\}) -->\n## (.*)", text)
        if m:
            meta = json.loads(m.group(2))
            summary.append(f"| {m.group(3)} | {meta['status']} | {meta.get('seconds') or 0:.0f} | "
                           f"{meta.get('load_before') or 0:.1f} | `{meta['command']}` |")
    # plots from this run replace those of the same name; the others stay while their files exist
    images = {m.group(2): m.group(0) for m in re.finditer(r"^!\[(.*?)\]\(img/(.*?)\)$", old, re.M)
              if (img / m.group(2)).exists()}
    images.update({path.name: f"![{title}](img/{path.name})" for title, path in _plots(
        {b.id: b for b in benches if b.result}, img)})
    plots = list(images.values())
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    intro = [
        "# Benchmarks", "",
        (f"Generated by `llm-cache-gateway bench all {' '.join(argv)}`".rstrip() + f" on {when}" if "--only" not in argv
         else f"Generated by `llm-cache-gateway bench all`; last updated on {when} by `llm-cache-gateway bench all "
              f"{' '.join(argv)}` (each section's status line says when it ran)") + "; every figure is "
        "compared with a baseline measured in the same run. Machine: "
        f"{os.cpu_count()} CPUs, shared with other work while these ran (the load average before each benchmark "
        "is recorded): absolute wall-clock figures are pessimistic, same-run ratios and CPU per request much "
        "less so." + (" **Quick sizes** (`--quick`): a smoke run, not the figures to quote." if quick else ""), "",
        *summary, "", "## Plots", "", *[f"{p}\n" for p in plots], ""]
    return "\n".join(intro) + "\n" + "\n".join(ordered)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm-cache-gateway bench all", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every benchmark")
    p.add_argument("--only", default="", help="comma-separated benchmark ids (" +
                   ", ".join(b.id for b in benchmarks()) + "); their sections replace the old ones")
    p.add_argument("--no-write", action="store_true", help="write nothing (docs, plots); print the summary")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per benchmark before it is stopped")
    p.add_argument("--doc", type=Path, default=DOC)
    args = p.parse_args(argv)
    chosen = [b for b in benchmarks() if not args.only or b.id in args.only.split(",")]
    unknown = set(filter(None, args.only.split(","))) - {b.id for b in benchmarks()}
    if unknown:
        p.error(f"unknown benchmark ids: {sorted(unknown)}")

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-all-"))
    with open(scratch / "bench-all.log", "w") as log, Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("benchmarks", total=len(chosen))
        for b in chosen:
            progress.update(task, description=f"bench {b.id} (load {os.getloadavg()[0]:.1f})")
            run_one(b, args.quick, scratch, args.timeout, log)
            progress.advance(task)
            console.print(f"  {b.id}: {b.result['status']} in {b.result.get('seconds', 0):.0f} s")
    console.print(f"full output: {scratch / 'bench-all.log'}")
    code, summary = outcome(chosen)
    console.print(summary)
    if args.no_write:
        for b in chosen:
            print(f"{b.id:16} {b.result['status']:8} {b.result.get('seconds', 0):6.0f} s  {b.result['command']}")
    else:
        old = args.doc.read_text() if args.only and args.doc.exists() else ""
        args.doc.write_text(document(chosen, args.quick, list(argv or []), old, args.doc.parent / "img"))
        console.print(f"wrote {args.doc}")
    return code


def outcome(benches: list[Bench]) -> tuple[int, str]:
    """The exit code and the line that says why: 1 when a benchmark crashed (`failed`) or missed a
    target it checks (`verdict`, its own exit 1): neither may hide behind a green exit."""
    by: dict[str, list[str]] = {}
    for b in benches:
        by.setdefault(b.result.get("status", "failed"), []).append(b.id)
    parts = [f"{status}: {', '.join(ids)}" for status, ids in sorted(by.items())]
    bad = by.get("failed", []) + by.get("verdict", [])
    return (1 if bad else 0), ("bench all: " + "; ".join(parts) + (" — FAILED" if bad else " — ok"))


if __name__ == "__main__":
    raise SystemExit(main())
