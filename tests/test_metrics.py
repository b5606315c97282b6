from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from gateway.metrics import Children


def test_children_count_into_the_metrics_own_series() -> None:
    registry = CollectorRegistry()
    lookups = Counter("t_lookups_total", "t", ["layer", "result"], registry=registry)
    children = Children(lookups)
    assert b'result="hit"' not in generate_latest(registry)  # a series appears only once counted
    children["response", "hit"].inc()
    children["response", "hit"].inc(2)
    lookups.labels(layer="response", result="hit").inc()  # the same child as labels() returns
    assert children["response", "hit"] is lookups.labels("response", "hit")
    assert registry.get_sample_value("t_lookups_total", {"layer": "response", "result": "hit"}) == 4
    assert registry.get_sample_value("t_lookups_total", {"layer": "response", "result": "miss"}) is None
    assert len(children) == 1


def test_one_label_metric_is_keyed_by_a_one_tuple() -> None:
    registry = CollectorRegistry()
    ttft = Histogram("t_ttft_seconds", "t", ["provider"], buckets=(0.1, 1.0), registry=registry)
    Children(ttft)["openai",].observe(0.05)
    assert registry.get_sample_value("t_ttft_seconds_count", {"provider": "openai"}) == 1
