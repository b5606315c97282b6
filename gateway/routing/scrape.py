"""Reading the few vLLM (or SGLang) metrics routing needs out of a replica's `/metrics` page.

vLLM's page is large (histograms per model and engine); only a handful of families matter here, so
lines are filtered by name first and only those go through prometheus_client's parser, which keeps
a scrape cheap on the event loop. Current names first, the pre-0.9 names as a fallback for older
engines.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

_RUNNING = "vllm:num_requests_running"
_WAITING = "vllm:num_requests_waiting"
_KV = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
_QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
_HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
_PROMPT = "vllm:prompt_tokens_total"
_CONFIG = "vllm:cache_config_info"
# SGLang (`--enable-metrics`): the same signals under its own names. Its prefix-cache counters are prompt
# tokens (`sglang:prompt_tokens_total`) and cached prompt tokens (`sglang:cached_tokens_total`); the KV pool
# is `sglang:max_total_num_tokens` tokens; `sglang:token_usage` is the share of it in use.
_SGL_RUNNING = "sglang:num_running_reqs"
_SGL_WAITING = "sglang:num_queue_reqs"
_SGL_USAGE = "sglang:token_usage"
_SGL_PROMPT = "sglang:prompt_tokens_total"
_SGL_CACHED = "sglang:cached_tokens_total"
_SGL_POOL = "sglang:max_total_num_tokens"
_SGLANG = (_SGL_RUNNING, _SGL_WAITING, _SGL_USAGE, _SGL_PROMPT, _SGL_CACHED, _SGL_POOL)
_WANTED = (_RUNNING, _WAITING, *_KV, *_QUERIES, *_HITS, _PROMPT, _CONFIG, *_SGLANG)


@dataclass(slots=True)
class ReplicaStats:
    running: float = 0.0
    waiting: float = 0.0
    kv_usage: float | None = None  # fraction 0..1 of KV blocks in use
    queries: float | None = None  # prefix-cache tokens queried (counter)
    hits: float | None = None  # prefix-cache tokens hit (counter)
    kv_tokens: int | None = None  # num_gpu_blocks × block_size, from vllm:cache_config_info
    prompt_tokens: float | None = None  # prompt tokens processed (counter): calibrates bytes per token
    engine: str = "vllm"  # "vllm" | "sglang": whose metric names the page had


def parse_metrics(text: str) -> ReplicaStats:
    lines = [line for line in text.splitlines() if line.startswith(_WANTED)]
    values: dict[str, float] = {}
    stats = ReplicaStats()
    for family in text_string_to_metric_families("\n".join(lines) + "\n"):
        for sample in family.samples:
            name = sample.name
            if name == _CONFIG:
                try:
                    tokens = int(float(sample.labels["num_gpu_blocks"])) * int(float(sample.labels["block_size"]))
                except (KeyError, ValueError):
                    continue
                stats.kv_tokens = max(stats.kv_tokens or 0, tokens) or None
            elif name in _KV or name in (_SGL_USAGE, _SGL_POOL):
                values[name] = max(values.get(name, 0.0), sample.value)  # several engines: the fullest
            else:
                values[name] = values.get(name, 0.0) + sample.value  # several models/engines: the sum
    if _SGL_RUNNING in values or _SGL_PROMPT in values:
        stats.engine = "sglang"
        stats.running = values.get(_SGL_RUNNING, 0.0)
        stats.waiting = values.get(_SGL_WAITING, 0.0)
        stats.kv_usage = values.get(_SGL_USAGE)
        stats.queries = values.get(_SGL_PROMPT)
        stats.hits = values.get(_SGL_CACHED)
        stats.prompt_tokens = values.get(_SGL_PROMPT)
        stats.kv_tokens = int(values[_SGL_POOL]) if values.get(_SGL_POOL) else None
        return stats
    stats.running = values.get(_RUNNING, 0.0)
    stats.waiting = values.get(_WAITING, 0.0)
    stats.kv_usage = _first(values, _KV)
    stats.queries = _first(values, _QUERIES)
    stats.hits = _first(values, _HITS)
    stats.prompt_tokens = values.get(_PROMPT)
    return stats


def _first(values: dict[str, float], names: tuple[str, ...]) -> float | None:
    for name in names:
        if name in values:
            return values[name]
    return None
