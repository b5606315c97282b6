"""The NetworkPolicies, checked by what they let through.

A small evaluator applies the rendered rules the way the NetworkPolicy API defines them (a peer matches
by ipBlock minus its excepts, by pod labels in the policy's namespace, or by namespace and pod labels
together; a rule without ports allows every port), so each test states a connection and its verdict.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from deploy_support import Render, check_chart

NS = check_chart.NAMESPACE
FULL = f"{check_chart.RELEASE}-llm-cache-gateway"
GATEWAY = {"app.kubernetes.io/name": "llm-cache-gateway", "app.kubernetes.io/instance": "lcg",
           "app.kubernetes.io/component": "gateway"}
VLLM = {**GATEWAY, "app.kubernetes.io/component": "vllm"}
DNS = {"k8s-app": "kube-dns"}
VALKEY = {"app.kubernetes.io/name": "valkey", "app.kubernetes.io/instance": "lcg"}
QDRANT = {"app.kubernetes.io/name": "qdrant", "app.kubernetes.io/instance": "lcg"}
NAMED_PORTS = {"http": {8080, 8000}}  # the gateway's and the engines' container port named http


def _labels_match(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, "the chart uses matchLabels only"
    return selector.get("matchLabels", {}).items() <= labels.items()


def _peer_matches(peer: dict[str, Any], *, ip: str | None, namespace: str | None, labels: dict[str, str]) -> bool:
    if "ipBlock" in peer:
        if ip is None:
            return False
        addr = ipaddress.ip_address(ip)
        block = peer["ipBlock"]
        return addr in ipaddress.ip_network(block["cidr"]) and not any(
            addr in ipaddress.ip_network(e) for e in block.get("except", []))
    if namespace is None:
        return False
    if "namespaceSelector" in peer:
        ns_ok = _labels_match(peer["namespaceSelector"], {"kubernetes.io/metadata.name": namespace})
    else:
        ns_ok = namespace == NS  # a bare podSelector means the policy's own namespace
    pods_ok = _labels_match(peer["podSelector"], labels) if "podSelector" in peer else True
    return ns_ok and pods_ok


def _port_matches(ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
    if not ports:
        return True
    for p in ports:
        allowed = NAMED_PORTS.get(p["port"], {p["port"]}) if isinstance(p["port"], str) else {p["port"]}
        if port in allowed and p.get("protocol", "TCP") == protocol:
            return True
    return False


def allows(policy: dict[str, Any], direction: str, *, port: int, ip: str | None = None,
           namespace: str | None = None, labels: dict[str, str] | None = None, protocol: str = "TCP") -> bool:
    """Would `policy` let this connection through? direction: "egress" (to the peer) or "ingress" (from it)."""
    kind = "Egress" if direction == "egress" else "Ingress"
    assert kind in policy["spec"]["policyTypes"]
    peers_key = "to" if direction == "egress" else "from"
    for rule in policy["spec"].get(direction, []):
        peers = rule.get(peers_key)
        assert peers, f"a {direction} rule without `{peers_key}` would allow every peer"
        if _port_matches(rule.get("ports"), port, protocol) and any(
                _peer_matches(p, ip=ip, namespace=namespace, labels=labels or {}) for p in peers):
            return True
    return False


def policy(render: Render, suffix: str) -> dict[str, Any]:
    return render.one("NetworkPolicy", f"{FULL}-{suffix}")


# ---------------------------------------------------------------------------------------------


def test_every_rule_names_its_peers(render: Render) -> None:
    for np in render.all("NetworkPolicy"):
        for direction, key in (("ingress", "from"), ("egress", "to")):
            for rule in np["spec"].get(direction, []):
                assert rule.get(key), f"{np['metadata']['name']}: {direction} rule without `{key}`"


def test_policies_select_the_right_pods(render: Render) -> None:
    assert policy(render, "gateway")["spec"]["podSelector"]["matchLabels"] == GATEWAY
    assert policy(render, "vllm")["spec"]["podSelector"]["matchLabels"] == VLLM
    assert render.gateway["spec"]["template"]["metadata"]["labels"].items() >= GATEWAY.items()
    assert render.vllm["spec"]["template"]["metadata"]["labels"].items() >= VLLM.items()


def test_gateway_ingress_only_from_listed_sources(renders: dict[str, Render]) -> None:
    default = policy(renders["default"], "gateway")
    assert allows(default, "ingress", port=8080, namespace=NS, labels={"app": "client"})
    assert not allows(default, "ingress", port=8080, namespace="other", labels={"app": "client"})
    assert not allows(default, "ingress", port=8080, ip="10.1.2.3")

    external = policy(renders["external-stores"], "gateway")
    assert allows(external, "ingress", port=8080, namespace="team-search")
    assert allows(external, "ingress", port=8080, namespace="team-support")
    assert allows(external, "ingress", port=8080, namespace="monitoring")  # /metrics
    assert allows(external, "ingress", port=8080, ip="10.0.55.7")
    assert not allows(external, "ingress", port=8080, ip="10.1.0.1")
    assert not allows(external, "ingress", port=8080, namespace=NS)  # sameNamespace: false
    assert not allows(external, "ingress", port=22, namespace="team-search")


@pytest.mark.parametrize("variant", ["default", "external-stores", "bundled-stores"])
def test_gateway_egress_dns_and_vllm(renders: dict[str, Render], variant: str) -> None:
    gw = policy(renders[variant], "gateway")
    for proto in ("UDP", "TCP"):
        assert allows(gw, "egress", port=53, protocol=proto, namespace="kube-system", labels=DNS)
    assert not allows(gw, "egress", port=53, namespace="kube-system", labels={"k8s-app": "other"})
    assert allows(gw, "egress", port=8000, namespace=NS, labels=VLLM)
    assert not allows(gw, "egress", port=8000, namespace="other-team", labels=VLLM)
    # Never the cloud metadata endpoint, never the Kubernetes API.
    assert not allows(gw, "egress", port=80, ip="169.254.169.254")
    assert not allows(gw, "egress", port=443, ip="169.254.169.254")
    assert not allows(gw, "egress", port=443, ip="10.96.0.1")


def test_gateway_egress_external_stores_and_proxy(renders: dict[str, Render]) -> None:
    gw = policy(renders["external-stores"], "gateway")
    assert allows(gw, "egress", port=6379, ip="10.20.30.5")
    assert allows(gw, "egress", port=6380, ip="10.20.30.5")
    assert not allows(gw, "egress", port=6379, ip="10.20.31.5")
    assert allows(gw, "egress", port=6333, ip="10.20.40.9")
    assert not allows(gw, "egress", port=6379, ip="10.20.40.9")
    egress_proxy = {"app.kubernetes.io/name": "egress-proxy"}
    assert allows(gw, "egress", port=3128, namespace="egress", labels=egress_proxy)
    assert not allows(gw, "egress", port=3128, namespace="egress", labels={"app": "other"})
    # With the proxy on, nothing goes straight to the internet.
    assert not allows(gw, "egress", port=443, ip="104.18.6.192")


def test_gateway_egress_direct_vendors_by_default(renders: dict[str, Render]) -> None:
    gw = policy(renders["default"], "gateway")
    assert allows(gw, "egress", port=443, ip="104.18.6.192")  # a public address
    assert not allows(gw, "egress", port=80, ip="104.18.6.192")
    for private in ("10.20.30.5", "172.16.0.9", "192.168.1.1", "100.64.0.1"):
        assert not allows(gw, "egress", port=443, ip=private)
    assert not allows(gw, "egress", port=6379, ip="10.20.30.5")  # no store configured: none allowed


def test_gateway_egress_bundled_stores(renders: dict[str, Render]) -> None:
    gw = policy(renders["bundled-stores"], "gateway")
    assert allows(gw, "egress", port=6379, namespace=NS, labels=VALKEY)
    assert allows(gw, "egress", port=6333, namespace=NS, labels=QDRANT)
    assert allows(gw, "egress", port=6334, namespace=NS, labels=QDRANT)
    assert not allows(gw, "egress", port=6335, namespace=NS, labels=QDRANT)  # Qdrant's p2p port
    assert not allows(gw, "egress", port=6379, namespace="elsewhere", labels=VALKEY)


def test_bundled_stores_accept_only_the_gateway_and_their_peers(renders: dict[str, Render]) -> None:
    r = renders["bundled-stores"]
    valkey, qdrant = policy(r, "valkey"), policy(r, "qdrant")
    assert valkey["spec"]["podSelector"]["matchLabels"] == VALKEY
    assert allows(valkey, "ingress", port=6379, namespace=NS, labels=GATEWAY)
    assert allows(valkey, "ingress", port=26379, namespace=NS, labels=VALKEY)  # Sentinel among peers
    assert not allows(valkey, "ingress", port=6379, namespace=NS, labels=VLLM)
    assert allows(qdrant, "ingress", port=6333, namespace=NS, labels=GATEWAY)
    assert allows(qdrant, "ingress", port=6335, namespace=NS, labels=QDRANT)
    assert not allows(qdrant, "ingress", port=6335, namespace=NS, labels=GATEWAY)
    assert [n for n in r.all("NetworkPolicy") if n["metadata"]["name"].endswith(("-valkey", "-qdrant"))]
    assert not [n for n in renders["default"].all("NetworkPolicy")
                if n["metadata"]["name"].endswith(("-valkey", "-qdrant"))]


def test_vllm_pool_only_reachable_from_the_gateway(render: Render) -> None:
    engines = policy(render, "vllm")
    assert allows(engines, "ingress", port=8000, namespace=NS, labels=GATEWAY)
    assert not allows(engines, "ingress", port=8000, namespace=NS, labels={"app": "client"})
    assert not allows(engines, "ingress", port=8000, ip="10.0.0.5")
    # No egress but DNS: the weights are pre-staged, nothing is fetched from the VPC.
    assert allows(engines, "egress", port=53, protocol="UDP", namespace="kube-system", labels=DNS)
    assert not allows(engines, "egress", port=443, ip="104.18.6.192")
    if render.variant != "default":
        assert allows(engines, "ingress", port=8000, namespace="monitoring")


def test_networkpolicy_can_be_turned_off(render_values) -> None:
    assert render_values({"networkPolicy": {"enabled": False}}).all("NetworkPolicy") == []
