"""Offline checks of the Helm chart: render, lint, strict schema validation, yamllint.

    .venv/bin/python deploy/check_chart.py            # every ci/*-values.yaml variant; exit 1 on a finding

For each variant in `helm/llm-cache-gateway/ci/` (the chart-testing convention) it
1. renders the chart with Helm's own engine (helm-python-sdk: `Chart.load(...).render(values)`),
2. runs `helm lint --strict` on the chart with those values,
3. validates every rendered object with `kubernetes_validate.validate(obj, version, strict=True)` against
   each version in KUBE_VERSIONS (CRD kinds such as ServiceMonitor have no bundled schema: they are
   listed as skipped, and tests/deploy/test_chart.py checks their fields instead),
4. runs yamllint (deploy/yamllint.yaml) on the values files and on the rendered output.

The bundled-stores variant enables the qdrant and valkey dependency charts, which cannot be downloaded
here: with `charts/` absent Helm renders the chart's own templates and skips theirs, and `helm lint`
reports the missing dependencies, the one lint finding this script tolerates (and prints). After a
`helm dependency build` the same script renders and validates the dependencies' objects too.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import yaml
from yamllint import linter
from yamllint.config import YamlLintConfig

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "llm-cache-gateway"
YAMLLINT_CONFIG = Path(__file__).resolve().parent / "yamllint.yaml"
RELEASE = "lcg"
NAMESPACE = "llm"
# The oldest Kubernetes minor the chart is validated against, and the newest schema bundled with
# kubernetes-validate.
KUBE_VERSIONS = ("1.35.0", kubernetes_validate.latest_version())
# Custom resources without a schema in kubernetes-validate.
CRD_API_GROUPS = ("monitoring.coreos.com",)
MISSING_DEPS_PREFIX = "chart directory is missing these dependencies:"


@dataclass
class Report:
    variant: str
    objects: int = 0
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def variants() -> list[str]:
    return sorted(p.name.removesuffix("-values.yaml") for p in (CHART / "ci").glob("*-values.yaml"))


def variant_values(variant: str) -> dict[str, Any]:
    return yaml.safe_load((CHART / "ci" / f"{variant}-values.yaml").read_text()) or {}


def render(variant: str) -> dict[str, str]:
    """Template path → rendered text (NOTES.txt included), as `helm template` would produce."""
    with helm.Chart.load(CHART) as chart:
        return chart.render(variant_values(variant), name=RELEASE, namespace=NAMESPACE)


def manifests(rendered: dict[str, str]) -> list[dict[str, Any]]:
    """Every Kubernetes object of a render, in template order (NOTES.txt and empty documents left out)."""
    objects: list[dict[str, Any]] = []
    for path in sorted(rendered):
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(rendered[path]) if doc)
    return objects


def rendered_stream(rendered: dict[str, str]) -> str:
    """The render as one multi-document YAML stream, the shape `helm template` prints."""
    parts = [f"---\n# Source: {path}\n{text.strip()}\n" for path, text in sorted(rendered.items())
             if not path.endswith("NOTES.txt") and text.strip()]
    return "".join(parts)


def missing_dependencies() -> list[str]:
    return [f"{d['name']} {d['version']}" for d in helm.dependency_list(CHART) if d["status"] != "ok"]


def lint(variant: str) -> tuple[list[str], list[str]]:
    """(problems, tolerated findings) of `helm lint --strict` with the variant's values."""
    report = helm.lint(CHART, variant_values(variant), strict=True, namespace=NAMESPACE,
                       kube_version=f"v{KUBE_VERSIONS[0]}")
    problems: list[str] = []
    tolerated: list[str] = []
    for message in report["messages"]:
        if message["severity"] < 2:  # info ("icon is recommended")
            continue
        text = f"helm lint: {message['path']}: {message['error']}"
        if message["error"].startswith(MISSING_DEPS_PREFIX):
            tolerated.append(text)
        else:
            problems.append(text)
    # `errors` repeats the messages that fail the lint; keep only those not already listed.
    seen = {m["error"] for m in report["messages"]}
    problems.extend(f"helm lint: {e}" for e in report["errors"]
                    if not str(e).startswith(MISSING_DEPS_PREFIX) and str(e) not in seen)
    return problems, tolerated


def validate(objects: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(problems, skipped) of strict schema validation against every version in KUBE_VERSIONS."""
    problems: list[str] = []
    skipped: list[str] = []
    for obj in objects:
        name = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        if str(obj.get("apiVersion", "")).split("/")[0] in CRD_API_GROUPS:
            skipped.append(f"{name} ({obj['apiVersion']}: no bundled schema)")
            continue
        for version in KUBE_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError) as e:
                # The first line names the field and the rule; the rest dumps the whole schema.
                problems.append(f"kubernetes-validate {version}: {name}: {str(e).splitlines()[0]}")
    return problems, skipped


def yamllint_text(text: str, label: str) -> list[str]:
    conf = YamlLintConfig(file=str(YAMLLINT_CONFIG))
    return [f"yamllint: {label}:{p.line}:{p.column}: {p.desc} ({p.rule})" for p in linter.run(text, conf)]


def yamllint_files() -> list[str]:
    files = [CHART / "Chart.yaml", CHART / "values.yaml", *sorted((CHART / "ci").glob("*.yaml"))]
    problems: list[str] = []
    for path in files:
        problems.extend(yamllint_text(path.read_text(), str(path.relative_to(ROOT))))
    return problems


def check(variant: str) -> Report:
    report = Report(variant)
    try:
        rendered = render(variant)
    except helm.HelmError as e:
        report.problems.append(f"render: {e}")
        return report
    objects = manifests(rendered)
    report.objects = len(objects)
    lint_problems, tolerated = lint(variant)
    report.problems += lint_problems
    report.skipped += tolerated
    schema_problems, skipped = validate(objects)
    report.problems += schema_problems
    report.skipped += skipped
    report.problems += yamllint_text(rendered_stream(rendered), f"rendered[{variant}]")
    return report


def main() -> int:
    failed = False
    missing = missing_dependencies()
    if missing:
        print(f"dependency charts not in charts/ (cannot be downloaded offline): {', '.join(missing)}; "
              "their templates are skipped, the chart's own templates are rendered and checked")
    for problem in yamllint_files():
        failed = True
        print(f"FAIL values: {problem}")
    for variant in variants():
        report = check(variant)
        status = "FAIL" if report.problems else "ok"
        print(f"{status} {variant}: {report.objects} objects, k8s {', '.join(KUBE_VERSIONS)} strict")
        for problem in report.problems:
            print(f"  {problem}")
        for item in report.skipped:
            print(f"  skipped: {item}")
        failed = failed or bool(report.problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
