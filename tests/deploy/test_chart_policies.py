"""The chart's policies ConfigMap and config file: mounted where the gateway reads them, loadable as the
kubelet mounts them, and a policy change rolls the pods."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from deploy_support import Render, check_chart

from gateway.config import Settings

FULL = f"{check_chart.RELEASE}-llm-cache-gateway"
POLICY_DIR = "/etc/gateway/policies"


def _policies_configmap(render: Render) -> dict[str, Any]:
    return render.one("ConfigMap", f"{FULL}-policies")


def test_policies_configmap_mounted_where_the_gateway_reads(render: Render) -> None:
    c = render.gateway_container
    assert c["args"][c["args"].index("--policies") + 1] == POLICY_DIR
    assert render.env["GATEWAY_POLICIES"]["value"] == POLICY_DIR
    [mount] = [m for m in c["volumeMounts"] if m["mountPath"] == POLICY_DIR]
    assert "subPath" not in mount  # a subPath mount would never see ConfigMap updates
    volumes = {v["name"]: v for v in render.gateway["spec"]["template"]["spec"]["volumes"]}
    assert volumes[mount["name"]]["configMap"]["name"] == _policies_configmap(render)["metadata"]["name"]


def _mount_like_the_kubelet(data: dict[str, str], root: Path) -> Path:
    """Lay out ConfigMap data as the kubelet mounts it: files in a timestamped folder behind `..data`,
    each name a symlink through `..data`."""
    stamp = root / "..2026_11_29_00_00_00.000000001"
    stamp.mkdir(parents=True)
    for name, body in data.items():
        (stamp / name).write_text(body)
    (root / "..data").symlink_to(stamp.name)
    for name in data:
        (root / name).symlink_to(Path("..data") / name)
    return root


def test_policy_files_load_as_mounted(render: Render, tmp_path: Path) -> None:
    """The policies ConfigMap, mounted the way the kubelet does, loads with the gateway's own loader."""
    from gateway.policy.loader import check_policies

    data = _policies_configmap(render)["data"]
    folder = _mount_like_the_kubelet(data, tmp_path / "policies")
    # The key variables the pod gets from Secrets (gateway.secretEnv), with stand-in values.
    env = {name: "test-key-" + name for name, e in render.env.items() if "secretKeyRef" in e.get("valueFrom", {})}
    outcome = check_policies(folder, env)
    assert outcome.errors == []
    assert outcome.policy_set is not None
    expected = {"example"} if render.variant != "external-stores" else {"acme"}
    assert set(outcome.policy_set.tenants) == expected
    if render.variant == "external-stores":  # the tenant's env: key is provided by a Secret reference
        assert outcome.policy_set.lookup(env["ACME_GATEWAY_KEY"]).tenant == "acme"


def test_config_file_is_valid_settings(render: Render) -> None:
    cm = render.one("ConfigMap", f"{FULL}-config")
    Settings.model_validate(yaml.safe_load(cm["data"]["config.yaml"]))
    c = render.gateway_container
    assert c["args"][c["args"].index("--config") + 1] == "/etc/gateway/config.yaml"
    [mount] = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/gateway/config.yaml"]
    assert mount["subPath"] == "config.yaml"


def test_policy_change_rolls_the_pods(render_values) -> None:
    def checksum(files: dict[str, str], roll: bool = True) -> str | None:
        r = render_values({"policies": {"files": files, "rollOnChange": roll}})
        return r.gateway["spec"]["template"]["metadata"]["annotations"].get("checksum/policies")

    a = checksum({"_defaults.yaml": "response_cache: {enabled: true}\n"})
    b = checksum({"_defaults.yaml": "response_cache: {enabled: false}\n"})
    assert a and b and a != b
    assert checksum({"_defaults.yaml": "response_cache: {enabled: true}\n"}, roll=False) is None
