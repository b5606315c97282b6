"""The tables of `bench litellm` (`litellm_side_by_side.py`): the side-by-side figures with their targets,
the run with the embedder loaded and the workers comparison, as markdown lines."""

from __future__ import annotations

import argparse
import os
from typing import Any


def table(s: dict[str, Any], args: argparse.Namespace) -> list[str]:
    g, lt, d, r = s["gateway"], s["litellm"], s["direct"], s["ratios"]

    def ms(x: float) -> str:
        return f"{x * 1000:.2f}"

    met = {True: "met", False: "**not met**"}
    rows = [
        "| measure | direct | gateway | LiteLLM | gateway ÷ LiteLLM | target |", "|---|---|---|---|---|---|",
        f"| miss p50 ms ({args.miss_concurrency} clients) | {ms(d['miss_p50'])} | {ms(g['miss_p50'])} | "
        f"{ms(lt['miss_p50'])} | | |",
        f"| added latency on a miss, p50 ms | | {ms(g['added_p50'])} | {ms(lt['added_p50'])} | {r['added_p50']:.3f} | "
        f"≤ 0.333: {met[s['targets']['added_latency_third']]} |",
        f"| added latency on a miss, p99 ms | | {ms(g['added_p99'])} | {ms(lt['added_p99'])} | "
        f"{g['added_p99'] / lt['added_p99'] if lt['added_p99'] > 0 else float('nan'):.3f} | |",
        f"| exact hit p50 ms ({args.concurrency} clients) | | {ms(g['hit_p50'])} | {ms(lt['hit_p50'])} | "
        f"{r['hit_p50']:.3f} | |",
        f"| exact hit p99 ms | | {ms(g['hit_p99'])} | {ms(lt['hit_p99'])} | "
        f"{g['hit_p99'] / lt['hit_p99']:.3f} | |",
        f"| exact hits/s ({args.concurrency} clients) | | {g['hits_per_s']:.0f} | {lt['hits_per_s']:.0f} | "
        f"{r['hit_throughput']:.2f}× | ≥ 3×: {met[s['targets']['hit_throughput_3x']]} |",
        f"| proxy CPU ms per hit (all its processes) | | {g['cpu_ms_per_hit']:.3f} | {lt['cpu_ms_per_hit']:.2f} | "
        f"{g['cpu_ms_per_hit'] / lt['cpu_ms_per_hit']:.3f} | ≤ 0.22: {met[g['cpu_ms_per_hit'] <= 0.22]} |",
        f"| proxy CPU ms per miss (all its processes) | | {g['cpu_ms_per_miss']:.3f} | {lt['cpu_ms_per_miss']:.2f} | "
        f"{g['cpu_ms_per_miss'] / lt['cpu_ms_per_miss']:.3f} | ≤ 0.50: {met[g['cpu_ms_per_miss'] <= 0.50]} |",
        f"| ready after start, s (gateway /readyz, LiteLLM /health/readiness) | | {g['ready_s']:.2f} | "
        f"{lt['ready_s']:.2f} | {g['ready_s'] / lt['ready_s']:.3f} | ≤ 3 s: {met[g['ready_s'] <= 3.0]} |",
        f"| RSS MiB when ready (all its processes) | | {g['rss_ready_mib']:.0f} | {lt['rss_ready_mib']:.0f} | "
        f"{g['rss_ready_mib'] / lt['rss_ready_mib']:.3f} | |",
        f"| RSS MiB at the end of the run | | {g['rss_end_mib']:.0f} | {lt['rss_end_mib']:.0f} | "
        f"{g['rss_end_mib'] / lt['rss_end_mib']:.3f} | ≤ 150: {met[g['rss_end_mib'] <= 150]} |",
        "| errors / hit answers not marked as hits / wrong answers | | "
        f"{g['errors']} / {g['not_hit']} / {g['wrong']} | "
        f"{lt['errors']} / {lt['not_hit']} / {lt['wrong']} | | 0 |",
        "", "Per round (A, B, A, B order): " + "; ".join(
            f"round {i + 1}: hits/s {gh:.0f} vs {lh:.0f}, added p50 {ga * 1000:.2f} vs {la * 1000:.2f} ms"
            for i, (gh, lh, ga, la) in enumerate(zip(g["hits_per_s_rounds"], lt["hits_per_s_rounds"],
                                                     g["added_p50_rounds"], lt["added_p50_rounds"], strict=True))),
    ]
    return rows


def embedder_lines(e: dict[str, Any] | None) -> list[str]:
    if e is None:
        return []
    met = lambda ok: "met" if ok else "**not met**"  # noqa: E731
    return ["", "### With the semantic layer on (its embedder loaded)", "",
            "A second gateway whose tenant enables the semantic layer, after the run above (same emulator and Redis).",
            "", "| measure | gateway with the embedder | target |", "|---|---|---|",
            f"| ready after start, s (the embedder loaded) | {e['ready_s']:.2f} | ≤ 8 s: {met(e['ready_s'] <= 8)} |",
            f"| RSS MiB when ready | {e['rss_ready_mib']:.0f} | |",
            f"| RSS MiB after {e['requests']} semantic lookups and writes | {e['rss_end_mib']:.0f} | "
            f"≤ 300: {met(e['rss_end_mib'] <= 300)} |",
            f"| CPU ms per reworded request (lookup, miss, write) | {e['cpu_ms_per_lookup']:.2f} | |",
            f"| errors | {e['errors']} | 0 |"]


def workers_lines(w: dict[int, dict[str, float]] | None, args: argparse.Namespace) -> list[str]:
    if not w:
        return []
    one, two = w[1], w[2]
    rows = ["", "### Workers: 1 vs 2", "",
            f"The gateway alone, `--workers 1` then `--workers 2`, default layers, {args.concurrency} closed-loop "
            f"clients (hits over {args.keys} stored prompts, then misses). {os.cpu_count()} CPUs: the load generator, "
            "the emulator and Redis share them with the workers.", "",
            "| measure | 1 worker | 2 workers | 2 ÷ 1 |", "|---|---|---|---|"]
    for key, label in (("hits_per_s", "hits/s"), ("misses_per_s", "misses/s"), ("cpu_ms_per_hit", "CPU ms per hit"),
                       ("cpu_ms_per_miss", "CPU ms per miss"), ("rss_mib", "RSS MiB (all processes)"),
                       ("ready_s", "ready after start, s")):
        rows.append(f"| {label} | {one[key]:.3f} | {two[key]:.3f} | {two[key] / one[key]:.2f} |")
    rows.append(f"| errors | {one['errors']:.0f} | {two['errors']:.0f} | |")
    return rows
