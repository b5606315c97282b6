from __future__ import annotations

from gateway.routing.scrape import parse_metrics

CURRENT = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
vllm:num_requests_waiting{engine="0",model_name="m"} 2.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7e9
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 600.0
vllm:cache_config_info{block_size="16",enable_prefix_caching="True",num_gpu_blocks="2048"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 4.0
"""

LEGACY = """\
vllm:num_requests_running{model_name="m"} 2.0
vllm:gpu_cache_usage_perc{model_name="m"} 0.5
vllm:gpu_prefix_cache_queries_total{model_name="m"} 10.0
vllm:gpu_prefix_cache_hits_total{model_name="m"} 4.0
"""


def test_current_names_summed_over_engines_kv_usage_is_the_fullest() -> None:
    stats = parse_metrics(CURRENT)
    assert (stats.running, stats.waiting, stats.kv_usage) == (4.0, 2.0, 0.75)
    assert (stats.queries, stats.hits) == (1000.0, 600.0)  # `_created` samples are not counts
    assert stats.kv_tokens == 2048 * 16


def test_pre_0_9_names_are_read_as_a_fallback() -> None:
    stats = parse_metrics(LEGACY)
    assert (stats.running, stats.waiting, stats.kv_usage, stats.queries, stats.hits) == (2.0, 0.0, 0.5, 10.0, 4.0)
    assert stats.kv_tokens is None


def test_a_page_without_vllm_metrics_reads_as_empty() -> None:
    stats = parse_metrics("# nothing here\nprocess_cpu_seconds_total 1.0\n")
    assert (stats.running, stats.waiting, stats.kv_usage, stats.queries) == (0.0, 0.0, None, None)
