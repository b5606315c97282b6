"""A vLLM replica's `/metrics`, with vLLM's current names.

The values are read from the replica at scrape time (a custom collector), so the request path only bumps a
few integers. Counters get prometheus_client's `_total` suffix on exposition, exactly like vLLM's.
Every series carries `model_name` and `engine` labels.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

if TYPE_CHECKING:
    from gateway_dev.emulators.vllm_app import VLLMReplica

TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                40.0, 80.0, 160.0, 640.0, 2560.0]
E2E_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
               480.0, 960.0, 1920.0, 7680.0]


class _Histogram:
    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def family(self, name: str, doc: str, labels: list[str], values: list[str]) -> HistogramMetricFamily:
        fam = HistogramMetricFamily(name, doc, labels=labels)
        cumulative, buckets = 0, []
        for bound, n in zip([*self.bounds, float("inf")], self.counts, strict=True):
            cumulative += n
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        fam.add_metric(values, buckets, self.total)
        return fam


class LabelledFamilies:
    """One-sample gauge and counter families that all carry the replica's label values."""

    def __init__(self, labels: list[str], values: list[str]) -> None:
        self.labels, self.values = labels, values

    def gauge(self, name: str, doc: str, value: float) -> GaugeMetricFamily:
        g = GaugeMetricFamily(name, doc, labels=self.labels)
        g.add_metric(self.values, value)
        return g

    def counter(self, name: str, doc: str, value: float) -> CounterMetricFamily:
        c = CounterMetricFamily(name, doc, labels=self.labels)
        c.add_metric(self.values, value)
        return c

    def pair(self) -> tuple[Callable[[str, str, float], GaugeMetricFamily],
                            Callable[[str, str, float], CounterMetricFamily]]:
        return self.gauge, self.counter


class ReplicaMetrics:
    def __init__(self, replica: VLLMReplica) -> None:
        self.replica = replica
        self.ttft = _Histogram(TTFT_BUCKETS)
        self.e2e = _Histogram(E2E_BUCKETS)
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success: Counter[str] = Counter()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)  # type: ignore[arg-type]

    def first_token(self, seconds: float) -> None:
        self.ttft.observe(seconds)

    def finished(self, seconds: float, prompt_tokens: int, output_tokens: int, finish: str) -> None:
        self.e2e.observe(seconds)
        self.prompt_tokens += prompt_tokens
        self.generation_tokens += output_tokens
        self.success[finish] += 1

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def collect(self) -> Iterator[Metric]:
        r = self.replica
        labels, values = ["model_name", "engine"], [r.config.served_model_names[0], "0"]

        gauge, counter = LabelledFamilies(labels, values).pair()

        yield gauge("vllm:num_requests_running", "Number of requests in model execution batches.", r.running)
        yield gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", len(r.waiting))
        yield gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", r.kv.usage)
        yield counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
                      r.kv.queries)
        yield counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", r.kv.hits)
        yield counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", 0)
        yield counter("vllm:prompt_tokens", "Number of prefill tokens processed.", self.prompt_tokens)
        yield counter("vllm:generation_tokens", "Number of generation tokens processed.", self.generation_tokens)
        success = CounterMetricFamily("vllm:request_success", "Count of successfully processed requests.",
                                      labels=[*labels, "finished_reason"])
        for reason, n in sorted(self.success.items()):
            success.add_metric([*values, reason], n)
        yield success
        info = GaugeMetricFamily("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                                 labels=["block_size", "num_gpu_blocks", "enable_prefix_caching", "engine"])
        info.add_metric([str(r.config.block_size), str(r.config.kv_capacity_blocks), "True", "0"], 1)
        yield info
        yield self.ttft.family("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                               labels, values)
        yield self.e2e.family("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                              labels, values)
