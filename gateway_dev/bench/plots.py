"""PNG plots for docs/benchmarks.md (matplotlib, Agg backend: no display needed).

- `latency_cdf`: latency distributions of the LiteLLM side-by-side run (misses: direct, gateway,
  LiteLLM; exact hits: gateway, LiteLLM), as CDFs on a log axis;
- `cached_share`: `bench cost`'s cached share of prompt tokens against the session length T, per
  vendor and mode, with the (T−1)/(T+1) a perfect prefix cache reaches;
- `routing`: `bench routing`'s prefix-cache hit rate and TTFT p50 per policy and workload.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def parse_table(text: str, must_have: str) -> list[dict[str, str]]:
    """The rows of the first markdown table whose header has a column `must_have`."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and must_have in cells:
            rows = []
            for row in lines[i + 2:]:
                if not row.lstrip().startswith("|"):
                    break
                values = [c.strip() for c in row.strip().strip("|").split("|")]
                rows.append(dict(zip(cells, values, strict=False)))
            return rows
    return []


def latency_cdf(data: dict[str, Any], out: Path) -> Path:
    plt = _plt()
    lat = data["latencies"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = [("misses (upstream ~50 ms)", [("direct to the emulator", "direct_miss"), ("gateway", "gateway_miss"),
                                           ("LiteLLM proxy", "litellm_miss")]),
              ("exact cache hits", [("gateway", "gateway_hit"), ("LiteLLM proxy", "litellm_hit")])]
    for ax, (title, series) in zip(axes, panels, strict=True):
        for label, key in series:
            values = sorted(x * 1000 for x in lat.get(key) or [])
            if values:
                ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=f"{label} (n={len(values)})")
        ax.set_xscale("log")
        ax.set_xlabel("latency, ms (log)")
        ax.set_ylabel("share of requests ≤ x")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Gateway vs LiteLLM proxy vs direct, same run")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _num(cell: str) -> float:
    match = re.search(r"-?\d+(\.\d+)?", cell or "")
    return float(match.group()) if match else float("nan")


def cached_share(rows: list[dict[str, str]], out: Path) -> Path:
    plt = _plt()
    series: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        series[r["vendor"]][r["mode"]].append((int(_num(r["T"])), _num(r["cached share"]) / 100))
    vendors = sorted(series)
    fig, axes = plt.subplots(1, max(1, len(vendors)), figsize=(3.2 * max(1, len(vendors)), 3.6), sharey=True)
    axes = axes if len(vendors) > 1 else [axes]
    for ax, vendor in zip(axes, vendors, strict=False):
        ts = sorted({t for pts in series[vendor].values() for t, _ in pts})
        ax.plot(ts, [(t - 1) / (t + 1) for t in ts], "k--", label="(T−1)/(T+1)")
        for mode, pts in sorted(series[vendor].items()):
            pts.sort()
            ax.plot([t for t, _ in pts], [s for _, s in pts], marker="o", label=mode)
        ax.set_title(vendor)
        ax.set_xlabel("session length T (turns)")
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("cached share of prompt tokens")
    fig.suptitle("Provider prompt caches: cached share against T (bench cost)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def routing(figures: dict[str, Any], out: Path) -> Path:
    plt = _plt()
    results = figures.get("results") or {}
    workloads = sorted(results)
    fig, axes = plt.subplots(2, max(1, len(workloads)), figsize=(max(7.0, 4.2 * len(workloads)), 6), squeeze=False)
    for col, wl in enumerate(workloads):
        policies = list(results[wl])
        hit = [results[wl][p]["hit_rate"] for p in policies]
        ttft = [results[wl][p]["ttft_p50"] * 1000 for p in policies]
        colors = ["tab:green" if p == "cache_aware" else "tab:gray" if p == "bound" else "tab:blue" for p in policies]
        axes[0][col].bar(policies, hit, color=colors)
        axes[0][col].set_title(f"workload {wl}: prefix-cache hit rate")
        axes[0][col].set_ylim(0, 1)
        axes[1][col].bar(policies, ttft, color=colors)
        axes[1][col].set_title(f"workload {wl}: TTFT p50, ms")
        for ax in (axes[0][col], axes[1][col]):
            ax.tick_params(axis="x", rotation=30, labelsize=8)
            ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("Cache-aware routing vs other policies (bench routing; bound = one replica, unlimited KV)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
