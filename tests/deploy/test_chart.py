"""The Helm chart: the three CI renders are clean, and the objects and fields that matter are right.

Every variant is rendered by Helm's own engine (helm-python-sdk); see deploy/check_chart.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from deploy_support import ROOT, VARIANTS, Render, check_chart

NS = check_chart.NAMESPACE
FULL = f"{check_chart.RELEASE}-llm-cache-gateway"
HEADLESS = f"{FULL}-vllm-headless"


def flag_values(args: list[str]) -> dict[str, str | None]:
    """`--flag value` pairs and bare `--flag`s of a command line (the positional model id skipped)."""
    out: dict[str, str | None] = {}
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            out[arg] = None if nxt is None or nxt.startswith("--") else nxt
    return out


def chart_values() -> dict[str, Any]:
    return yaml.safe_load((check_chart.CHART / "values.yaml").read_text())


# ---------------------------------------------------------------------------------------------
# CI: the three renders lint clean and pass strict schema validation


def test_ci_variants_are_the_three_values_files() -> None:
    assert check_chart.variants() == sorted(VARIANTS)


@pytest.mark.parametrize("variant", VARIANTS)
def test_render_lints_and_validates_clean(variant: str) -> None:
    report = check_chart.check(variant)
    assert report.problems == []
    assert report.objects >= 12
    # What is not checked is named: the absent dependency charts and the CRD kinds without a schema.
    for item in report.skipped:
        assert check_chart.MISSING_DEPS_PREFIX in item or "monitoring.coreos.com" in item, item


def test_values_files_pass_yamllint() -> None:
    assert check_chart.yamllint_files() == []


def test_checks_catch_broken_output() -> None:
    """The validators are live: a wrong field and bad YAML style are reported."""
    objects = Render("default").objects
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFS"] = True
    problems, _ = check_chart.validate([deployment])
    assert problems and all("readOnlyRootFS" in p for p in problems)
    assert check_chart.yamllint_text("a: yes   \n", "t")


def test_bundled_render_skips_only_the_dependency_charts() -> None:
    deps = {d["name"]: d for d in yaml.safe_load((check_chart.CHART / "Chart.yaml").read_text())["dependencies"]}
    assert deps["qdrant"]["condition"] == "qdrant.enabled"
    assert deps["qdrant"]["repository"] == "https://qdrant.github.io/qdrant-helm"
    assert deps["valkey"]["condition"] == "valkey.enabled"
    assert deps["valkey"]["repository"].startswith("https://valkey.io/valkey-helm")
    statuses = {d["name"]: d["status"] for d in helm.dependency_list(check_chart.CHART)}
    if any(s != "ok" for s in statuses.values()):
        rendered = Render("bundled-stores").rendered
        assert all(path.startswith("llm-cache-gateway/templates/") for path in rendered)


# ---------------------------------------------------------------------------------------------
# vLLM: GPUs, prefix caching, engine args, headless Service


def test_gpu_requests_and_limits(render: Render) -> None:
    values = chart_values()["vllm"]
    resources = render.vllm_container["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == values["gpusPerReplica"]
    assert resources["limits"]["nvidia.com/gpu"] == values["gpusPerReplica"]
    spec = render.vllm["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


def test_bundled_variant_runs_four_replicas(renders: dict[str, Render]) -> None:
    assert renders["bundled-stores"].vllm["spec"]["replicas"] == 4
    assert renders["default"].vllm["spec"]["replicas"] == 2


def test_engine_args_and_prefix_hash_stability(render: Render) -> None:
    c = render.vllm_container
    args = c["args"]
    assert c["image"] == "vllm/vllm-openai:v0.30.0"
    assert c["command"] == ["vllm", "serve"]
    assert args[0] == "meta-llama/Llama-3.1-8B-Instruct"
    assert "--enable-prefix-caching" in args
    assert flag_values(args)["--enable-prefix-caching"] is None
    assert "--no-enable-prefix-caching" not in args
    opts = flag_values(args)
    assert opts["--block-size"] == "16"
    assert opts["--prefix-caching-hash-algo"] == "sha256_cbor"
    assert opts["--tensor-parallel-size"] == "1"
    for flag in ("--max-model-len", "--max-num-seqs", "--gpu-memory-utilization"):
        assert flag in args
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["PYTHONHASHSEED"] == "42"
    assert env["HF_HOME"].startswith("/models/")
    assert env["HF_HUB_OFFLINE"] == "1"
    assert c["readinessProbe"]["httpGet"]["path"] == "/health"
    assert c["startupProbe"]["httpGet"]["path"] == "/health"


def test_engine_args_follow_values(renders: dict[str, Render]) -> None:
    args = renders["bundled-stores"].vllm_container["args"]
    opts = flag_values(args)
    assert opts["--max-model-len"] == "16384"
    assert opts["--max-num-seqs"] == "128"


def test_shm_and_model_cache(render: Render) -> None:
    spec = render.vllm["spec"]
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in render.vllm_container["volumeMounts"]}
    assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
    assert mounts["dshm"] == "/dev/shm"
    assert mounts["model-cache"] == "/models"
    if render.variant == "bundled-stores":  # a shared ReadWriteMany claim
        assert volumes["model-cache"]["persistentVolumeClaim"]["claimName"] == "llama-3-1-8b-weights"
        assert "volumeClaimTemplates" not in spec
    else:  # one claim per replica
        [template] = spec["volumeClaimTemplates"]
        assert template["metadata"]["name"] == "model-cache"
        assert template["spec"]["resources"]["requests"]["storage"] == "100Gi"


def test_headless_service_names_each_replica(render: Render) -> None:
    svc = render.one("Service", HEADLESS)
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is False
    assert svc["spec"]["ports"][0]["port"] == 8000
    pod_labels = render.vllm["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    gateway_labels = render.gateway["spec"]["template"]["metadata"]["labels"]
    assert not svc["spec"]["selector"].items() <= gateway_labels.items()
    assert render.vllm["spec"]["serviceName"] == HEADLESS
    endpoints = render.env["GATEWAY_VLLM_ENDPOINTS"]["value"].split(",")
    assert endpoints[0] == f"dns+http://{HEADLESS}.{NS}.svc.cluster.local:8000"


def test_external_vllm_endpoints_are_appended(renders: dict[str, Render]) -> None:
    value = renders["external-stores"].env["GATEWAY_VLLM_ENDPOINTS"]["value"]
    assert value.split(",")[1:] == ["http://gpu-host-1.vpc.internal:8000"]


# ---------------------------------------------------------------------------------------------
# The gateway: PDB, HPA, probes, policies, config, security, secrets, stores


def test_pdb_and_hpa(render: Render) -> None:
    selector = render.gateway["spec"]["selector"]["matchLabels"]
    pdb = render.one("PodDisruptionBudget", FULL)
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == selector
    hpa = render.one("HorizontalPodAutoscaler", FULL)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": FULL}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 10)
    assert hpa["spec"]["minReplicas"] > pdb["spec"]["minAvailable"]  # a node drain can always evict one
    assert "replicas" not in render.gateway["spec"]  # the HPA owns the count
    strategy = render.gateway["spec"]["strategy"]["rollingUpdate"]
    assert strategy["maxUnavailable"] == 0
    vllm_pdb = render.one("PodDisruptionBudget", f"{FULL}-vllm")
    assert vllm_pdb["spec"]["maxUnavailable"] == 1


def test_without_autoscaling_the_deployment_sets_replicas(render_values) -> None:
    r = render_values({"autoscaling": {"enabled": False}, "gateway": {"replicaCount": 3}})
    assert r.all("HorizontalPodAutoscaler") == []
    assert r.gateway["spec"]["replicas"] == 3


def test_probes(render: Render) -> None:
    c = render.gateway_container
    assert c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"


def test_security_context(render: Render) -> None:
    pod = render.gateway["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    sc = render.gateway_container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["runAsNonRoot"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    # The read-only root needs writable scratch: GATEWAY_DATA_DIR and /tmp on emptyDirs.
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in render.gateway_container["volumeMounts"]}
    assert "emptyDir" in volumes[mounts[render.env["GATEWAY_DATA_DIR"]["value"]]]
    assert "emptyDir" in volumes[mounts["/tmp"]]
    engine = render.vllm_container["securityContext"]
    assert engine["allowPrivilegeEscalation"] is False
    assert engine["capabilities"] == {"drop": ["ALL"]}
    assert engine["seccompProfile"] == {"type": "RuntimeDefault"}


def test_offline_environment(render: Render) -> None:
    env = {k: v.get("value") for k, v in render.env.items()}
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert env["LITELLM_OFFLINE_MODE"] == "true"


def test_secrets_only_by_reference(render: Render) -> None:
    assert render.all("Secret") == []
    vendor_vars = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY", "GATEWAY_ADMIN_KEY")
    for name in vendor_vars:
        if name in render.env:
            assert "value" not in render.env[name]
            assert set(render.env[name]["valueFrom"]["secretKeyRef"]) == {"name", "key"}
    if render.variant == "external-stores":
        assert render.env["OPENAI_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "vendor-keys", "key": "openai"}
        assert render.env["GATEWAY_ADMIN_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "gateway-admin"
    if render.variant == "default":
        assert not set(vendor_vars) & set(render.env)


def test_store_urls(renders: dict[str, Render]) -> None:
    default = renders["default"].env
    assert "GATEWAY_REDIS_URL" not in default and "GATEWAY_QDRANT_URL" not in default  # embedded stores
    external = renders["external-stores"].env
    assert external["GATEWAY_REDIS_URL"]["valueFrom"]["secretKeyRef"] == {"name": "gateway-redis", "key": "url"}
    assert external["GATEWAY_QDRANT_URL"]["value"] == "http://qdrant.vpc.internal:6333"
    bundled = renders["bundled-stores"]
    names = [e["name"] for e in bundled.gateway_container["env"]]
    # The password variable must come first: the kubelet expands $(VAR) only from earlier entries.
    assert names.index("GATEWAY_REDIS_PASSWORD") < names.index("GATEWAY_REDIS_URL")
    assert bundled.env["GATEWAY_REDIS_URL"]["value"] == (
        f"redis://default:$(GATEWAY_REDIS_PASSWORD)@{check_chart.RELEASE}-valkey.{NS}.svc.cluster.local:6379/0")
    assert bundled.env["GATEWAY_QDRANT_URL"]["value"] == (
        f"http://{check_chart.RELEASE}-qdrant.{NS}.svc.cluster.local:6333")


def test_explicit_store_urls_win_over_bundled_services(render_values) -> None:
    r = render_values({
        "valkey": {"enabled": True, "replica": {"enabled": True, "sentinel": {"enabled": True}}},
        "qdrant": {"enabled": True},
        "stores": {"redis": {"url": "redis://valkey-primary-proxy:6379/0", "egressCIDRs": ["10.0.9.0/24"]},
                   "qdrant": {"url": "http://qdrant.vpc.internal:6333", "egressCIDRs": ["10.0.8.0/24"]}},
    })
    assert r.env["GATEWAY_REDIS_URL"]["value"] == "redis://valkey-primary-proxy:6379/0"
    assert r.env["GATEWAY_QDRANT_URL"]["value"] == "http://qdrant.vpc.internal:6333"


def test_egress_proxy_settings(renders: dict[str, Render]) -> None:
    env = {k: v.get("value") for k, v in renders["external-stores"].env.items()}
    assert env["HTTPS_PROXY"] == "http://egress-proxy.egress.svc.cluster.local:3128"
    no_proxy = env["NO_PROXY"].split(",")
    assert {".svc", ".cluster.local", "qdrant.vpc.internal", "gpu-host-1.vpc.internal"} <= set(no_proxy)
    assert env["GATEWAY_OPENAI_BASE_URL"] == "https://llm-egress.vpc.internal/openai/v1"
    assert "HTTPS_PROXY" not in renders["default"].env


# ---------------------------------------------------------------------------------------------
# Monitoring: ServiceMonitor (a CRD: not schema-validated, so its fields are checked here), dashboards


def test_service_monitors(renders: dict[str, Render]) -> None:
    assert renders["default"].all("ServiceMonitor") == []
    r = renders["external-stores"]
    gateway_sm = r.one("ServiceMonitor", FULL)
    assert gateway_sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert gateway_sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert gateway_sm["spec"]["endpoints"] == [
        {"port": "http", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}]
    service = r.one("Service", FULL)
    assert gateway_sm["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service["spec"]["ports"][0]["name"] == "http"
    engine_sm = r.one("ServiceMonitor", f"{FULL}-vllm")
    headless = r.one("Service", HEADLESS)
    assert engine_sm["spec"]["selector"]["matchLabels"].items() <= headless["metadata"]["labels"].items()


def test_grafana_dashboard_configmap(renders: dict[str, Render]) -> None:
    assert not [c for c in renders["default"].all("ConfigMap") if c["metadata"]["name"].endswith("-dashboards")]
    cm = renders["bundled-stores"].one("ConfigMap", f"{FULL}-dashboards")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = sorted(p.name for p in (check_chart.CHART / "dashboards").glob("*.json"))
    assert sorted(cm["data"]) == (shipped or ["llm-cache-gateway-placeholder.json"])
    for body in cm["data"].values():
        assert "title" in json.loads(body)


def test_chart_dashboards_match_deploy_grafana() -> None:
    sources = sorted((ROOT / "deploy" / "grafana").glob("*.json"))
    assert sources, "deploy/grafana/ must hold the Grafana dashboard"
    for source in sources:
        copy = check_chart.CHART / "dashboards" / source.name
        assert copy.is_file(), f"copy {source.relative_to(ROOT)} to {copy.relative_to(ROOT)}"
        assert copy.read_bytes() == source.read_bytes(), f"{copy.relative_to(ROOT)} differs from its source"


# ---------------------------------------------------------------------------------------------
# Bad values fail at install time with a message, not at run time


@pytest.mark.parametrize(("values", "message"), [
    ({"vllm": {"engine": {"gpuMemoryUtilization": 1.5}}}, "gpuMemoryUtilization"),
    ({"gateway": {"securityContext": {"readOnlyRootFilesystem": False}}}, "readOnlyRootFilesystem"),
    ({"stores": {"redis": {"egressCIDRs": ["10.0.0.0"]}}}, "egressCIDRs"),
    ({"stores": {"qdrant": {"url": "http://qdrant.internal:6333"}}}, "stores.qdrant.egressCIDRs"),
    ({"egress": {"proxy": {"enabled": True, "httpsProxy": "http://p:3128"}}}, "egress.proxy.cidrs"),
    ({"vllm": {"pythonHashSeed": "random"}}, "pythonHashSeed"),
    # The gateway takes one Redis URL: a Sentinel-managed Valkey needs a proxy URL in front of it.
    ({"valkey": {"enabled": True, "replica": {"enabled": True, "sentinel": {"enabled": True}}}},
     "valkey.replica.sentinel.enabled"),
])
def test_bad_values_are_refused(values: dict[str, Any], message: str) -> None:
    with helm.Chart.load(check_chart.CHART) as chart, pytest.raises(helm.HelmError, match=message.replace(".", r"\.")):
        chart.render(values, name=check_chart.RELEASE, namespace=NS)


def test_docs_deploy_exists_with_the_capacity_section() -> None:
    text = (ROOT / "docs" / "deploy.md").read_text()
    headings = ("## VPC topology", "## Install inside a VPC", "## Sizing", "## Upgrade and rollback", "## Capacity")
    for heading in headings:
        assert heading in text
    # The worked example's arithmetic: Llama-3.1-8B, fp16 KV: 2 x 32 layers x 8 KV heads x 128 x 2 bytes.
    per_token = 2 * 32 * 8 * 128 * 2
    assert f"{per_token:,}" in text


def test_ci_values_files_exist() -> None:
    for variant in VARIANTS:
        assert Path(check_chart.CHART / "ci" / f"{variant}-values.yaml").is_file()
