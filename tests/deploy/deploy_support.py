"""Shared by the deploy tests: deploy/check_chart.py loaded by path, and a rendered chart variant."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _load_check_chart() -> ModuleType:
    # deploy/ is not a package (it holds the Dockerfile and compose file); load the script by path.
    spec = importlib.util.spec_from_file_location("check_chart", ROOT / "deploy" / "check_chart.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_chart"] = module
    spec.loader.exec_module(module)
    return module


check_chart = _load_check_chart()
VARIANTS = ("default", "external-stores", "bundled-stores")


class Render:
    """One rendered variant: its objects, looked up by kind and name."""

    def __init__(self, variant: str, values: dict[str, Any] | None = None) -> None:
        self.variant = variant
        if values is None:
            self.rendered = check_chart.render(variant)
        else:
            import helm_python as helm

            with helm.Chart.load(check_chart.CHART) as chart:
                self.rendered = chart.render(values, name=check_chart.RELEASE, namespace=check_chart.NAMESPACE)
        self.objects = check_chart.manifests(self.rendered)

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [o for o in self.all(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.variant}: expected one {kind} {name or ''}, found {len(found)}"
        return found[0]

    @property
    def gateway(self) -> dict[str, Any]:
        return self.one("Deployment", f"{check_chart.RELEASE}-llm-cache-gateway")

    @property
    def gateway_container(self) -> dict[str, Any]:
        return self.gateway["spec"]["template"]["spec"]["containers"][0]

    @property
    def env(self) -> dict[str, dict[str, Any]]:
        return {e["name"]: e for e in self.gateway_container["env"]}

    @property
    def vllm(self) -> dict[str, Any]:
        return self.one("StatefulSet", f"{check_chart.RELEASE}-llm-cache-gateway-vllm")

    @property
    def vllm_container(self) -> dict[str, Any]:
        return self.vllm["spec"]["template"]["spec"]["containers"][0]
