"""deploy/grafana/llm-cache-gateway.json: valid, and every series it queries is one the gateway exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gateway.metrics import REGISTRY

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "llm-cache-gateway.json"
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def exported() -> set[str]:
    names = set()
    for family in REGISTRY.collect():
        for suffix in _SUFFIXES.get(family.type, ("",)):
            names.add(family.name + suffix)
    return names


def test_every_query_uses_an_exported_series() -> None:
    board = json.loads(DASHBOARD.read_text())
    targets = [t for p in board["panels"] for t in p.get("targets", [])]
    assert len(targets) >= 20
    known = exported()
    used = set()
    for target in targets:
        assert target["datasource"]["uid"] == "${datasource}"
        names = set(re.findall(r"\bgateway_[a-z_]+", target["expr"]))
        assert names, target["expr"]
        used |= names
    assert used <= known, used - known
    # The contract's metrics are all on the board, and the seed's serving-layer figure.
    for name in ("gateway_requests_total", "gateway_cache_lookups_total", "gateway_tokens_total",
                 "gateway_cost_usd_total", "gateway_saved_cost_usd_total", "gateway_time_to_first_token_seconds_bucket",
                 "gateway_request_duration_seconds_bucket", "gateway_upstream_errors_total",
                 "gateway_route_decisions_total", "gateway_vllm_prefix_cache_hit_rate"):
        assert name in used, name


def test_layout() -> None:
    board = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    assert {v["name"] for v in board["templating"]["list"]} == {"datasource", "tenant"}
    for p in board["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24
