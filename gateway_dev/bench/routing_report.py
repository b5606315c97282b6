"""`bench routing`'s table and target checks for one workload (see `gateway_dev.bench.routing`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway_dev.bench.routing_peers import PINS

if TYPE_CHECKING:
    from gateway_dev.bench.routing import Result
    from gateway_dev.bench.routing_workloads import Workload

BOUND = "bound"


def report(wl: Workload, results: dict[str, Result], concurrency: int) -> tuple[list[str], dict[str, bool]]:
    bound = results.get(BOUND)
    rr = results.get("round_robin")
    lines = [wl.title + f" ({wl.requests} requests, {concurrency} clients)",
             f"  {'policy':<16}{'hit rate':>9}{'/bound':>8}{'TTFT p50':>10}{'TTFT p99':>10}{'req/s':>8}"
             f"{'imbalance':>10}{'p50 vs rr':>10}{'errors':>7}{'CPU/req':>9}"]
    for name, r in results.items():
        vs_bound = f"{r.hit_rate / bound.hit_rate:8.2f}" if bound and bound.hit_rate else f"{'-':>8}"
        vs_rr = f"{rr.q(0.5) / r.q(0.5):9.2f}x" if rr and r.q(0.5) > 0 else f"{'-':>10}"
        imbalance = f"{r.imbalance:10.2f}" if name != BOUND else f"{'-':>10}"
        label = ("bound*" if name == BOUND else name) + (" (partial)" if r.partial else "")
        cpu = f"{r.cpu_ms:7.2f}ms" if r.cpu_ms is not None else f"{'-':>9}"
        lines.append(f"  {label:<16}{r.hit_rate:9.3f}{vs_bound}{r.q(0.5) * 1000:8.0f}ms{r.q(0.99) * 1000:8.0f}ms"
                     f"{r.requests / r.wall:8.1f}{imbalance}{vs_rr}{sum(r.errors.values()):7d}{cpu}")
    checks: dict[str, bool] = {}
    ca = results.get("cache_aware")
    if any(r.partial for r in results.values()):
        ca = None  # a run stopped at --budget covers part of the workload: it is comparable to nothing
        lines.append("  (partial: stopped at --budget; requests served so far, no target checked)")
    if ca is not None:
        if bound is not None and wl.name in ("a", "b"):
            checks[f"{wl.name}: hit rate >= 0.9 x bound"] = ca.hit_rate >= 0.9 * bound.hit_rate
        if rr is not None:
            checks[f"{wl.name}: TTFT p50 >= 2x better than round_robin"] = rr.q(0.5) >= 2 * ca.q(0.5)
        checks[f"{wl.name}: imbalance <= 1.3"] = ca.imbalance <= 1.3
        for peer in (n for n in results if n in PINS):
            other = results[peer]
            checks[f"{wl.name}: hit rate >= {peer}"] = ca.hit_rate >= other.hit_rate
            checks[f"{wl.name}: TTFT p50 <= {peer}"] = ca.q(0.5) <= other.q(0.5)
    lines.append("  * bound: the same workload on one replica with unlimited KV (the best hit rate possible); CPU/req:"
                 " CPU time of the router's own processes per answered request")
    # TTFT here is bimodal: a request either finds its replica's prefill lane free (about the bound's p50) or
    # waits behind a new group's long prefill; the p50 falls where the two meet, so the spread is shown too.
    lines.append(f"  {'TTFT':<16}{'mean':>9}{'p25':>8}{'p75':>8}{'p90':>8}  share under 100 ms")
    for name, r in results.items():
        label = "bound*" if name == BOUND else name
        fast = sum(t < 0.1 for t in r.ttft) / len(r.ttft) if r.ttft else float("nan")
        lines.append(f"  {label:<16}{r.mean * 1000:7.0f}ms{r.q(0.25) * 1000:6.0f}ms{r.q(0.75) * 1000:6.0f}ms"
                     f"{r.q(0.9) * 1000:6.0f}ms  {fast:.3f}")
    for name, r in results.items():
        if r.errors:
            lines.append(f"  {name} failed requests by status: {dict(r.errors)}")
    if "cache_aware" in results:
        lines.append("  cache_aware decisions: " + ", ".join(
            f"{k} {v}" for k, v in results["cache_aware"].reasons.most_common()))
    return lines, checks
