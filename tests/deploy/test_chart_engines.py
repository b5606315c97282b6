"""The chart's SGLang replicas (beside the vLLM ones, in one pool) and the KV-event wiring."""

from __future__ import annotations

import json
from typing import Any

import yaml
from deploy_support import Render, check_chart
from test_chart import flag_values

FULL = f"{check_chart.RELEASE}-llm-cache-gateway"


def _config(r: Render) -> dict[str, Any]:
    cm = r.one("ConfigMap", f"{FULL}-config")
    return yaml.safe_load(cm["data"]["config.yaml"]) or {}


def test_sglang_replicas_join_the_pool_with_metrics_and_cache_report(render_values) -> None:
    r = render_values({"sglang": {"enabled": True, "replicaCount": 2}})
    errors, _ = check_chart.validate(r.objects)
    assert errors == []
    sts = r.one("StatefulSet", f"{FULL}-sglang")
    assert sts["spec"]["replicas"] == 2
    c = sts["spec"]["template"]["spec"]["containers"][0]
    assert c["command"] == ["python3", "-m", "sglang.launch_server"]
    opts = flag_values(c["args"])
    assert "--enable-metrics" in opts and "--enable-cache-report" in opts and "--disable-radix-cache" not in opts
    assert opts["--port"] == "30000" and opts["--served-model-name"] == "llama-3.1-8b-instruct"
    assert c["readinessProbe"]["httpGet"]["path"] == "/health"
    gpu = c["resources"]["limits"]["nvidia.com/gpu"]
    assert gpu == 1
    svc = r.one("Service", f"{FULL}-sglang-headless")
    assert svc["spec"]["clusterIP"] == "None"
    endpoints = r.env["GATEWAY_VLLM_ENDPOINTS"]["value"].split(",")
    assert any("-vllm-headless." in e for e in endpoints) and any("-sglang-headless." in e and e.endswith(":30000")
                                                                   for e in endpoints)
    policies = {p["metadata"]["name"] for p in r.all("NetworkPolicy")}
    assert f"{FULL}-sglang" in policies


def test_sglang_is_off_by_default(render: Render) -> None:
    assert [s for s in render.all("StatefulSet") if s["metadata"]["name"].endswith("-sglang")] == []
    assert "sglang" not in render.env["GATEWAY_VLLM_ENDPOINTS"]["value"]


def test_kv_events_wire_the_engine_flag_the_port_and_the_gateway_config(render_values) -> None:
    r = render_values({"vllm": {"kvEvents": {"enabled": True, "port": 5557}},
                       "config": {"routing": {"params": {"balance_abs": 8}}}})
    c = r.vllm_container
    cfg = json.loads(flag_values(c["args"])["--kv-events-config"])
    assert cfg == {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": "tcp://*:5557"}
    assert {"name": "kv-events", "containerPort": 5557, "protocol": "TCP"} in c["ports"]
    assert _config(r)["routing"]["params"] == {"balance_abs": 8, "kv_events_port": 5557}
    np = r.one("NetworkPolicy", f"{FULL}-vllm")
    assert {"port": "kv-events", "protocol": "TCP"} in np["spec"]["ingress"][0]["ports"]


def test_kv_events_off_by_default(render: Render) -> None:
    assert "--kv-events-config" not in render.vllm_container["args"]
    assert "kv_events_port" not in json.dumps(_config(render))
