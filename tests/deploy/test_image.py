"""deploy/Dockerfile and deploy/compose.yaml, checked statically.

`docker build` cannot run on the CI machines (no Docker daemon, no registry), so the Dockerfile is
parsed and its rules asserted; what the runtime stage installs is checked by resolving the package's
own dependency closure (no extras) from the installed metadata.
"""

from __future__ import annotations

import re
from importlib import metadata

import pytest
import yaml
from deploy_support import ROOT, check_chart
from packaging.requirements import Requirement

DOCKERFILE = ROOT / "deploy" / "Dockerfile"
COMPOSE = ROOT / "deploy" / "compose.yaml"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        pending += (" " if pending else "") + line.removesuffix("\\").strip()
        if not line.endswith("\\"):
            word, _, rest = pending.partition(" ")
            out.append((word.upper(), rest.strip()))
            pending = ""
    return out


def stages() -> dict[str, list[tuple[str, str]]]:
    result: dict[str, list[tuple[str, str]]] = {}
    current = None
    for word, rest in instructions():
        if word == "FROM":
            m = re.fullmatch(r"(\S+)\s+AS\s+(\S+)", rest, re.IGNORECASE)
            assert m, f"every stage is named: FROM {rest}"
            current = m.group(2)
            result[current] = []
        elif current:
            result[current].append((word, rest))
    return result


def build_args() -> dict[str, str]:
    args = {}
    for word, rest in instructions():
        if word == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            args.setdefault(name, value.strip('"'))
    return args


def test_multi_stage_on_a_pinned_base() -> None:
    froms = [rest for word, rest in instructions() if word == "FROM"]
    assert len(froms) >= 2
    assert list(stages())[-1] == "runtime"
    base = build_args()["PYTHON_IMAGE"]
    # A patch-level tag of the slim image, never latest or a floating minor.
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    assert all(f.startswith("${PYTHON_IMAGE}") for f in froms)
    assert "@sha256:<digest>" in DOCKERFILE.read_text()  # how to pin the digest is documented


def test_runtime_runs_as_a_numeric_non_root_user() -> None:
    users = [rest for word, rest in stages()["runtime"] if word == "USER"]
    assert users, "the runtime stage sets USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_healthcheck_probes_healthz() -> None:
    checks = [rest for word, rest in stages()["runtime"] if word == "HEALTHCHECK"]
    assert len(checks) == 1 and "/healthz" in checks[0]


def test_runtime_installs_offline_without_the_st_extra() -> None:
    runs = [rest for word, rest in stages()["runtime"] if word == "RUN"]
    installs = [r for r in runs if "pip install" in r]
    assert installs and all("--no-index" in r for r in installs)
    text = DOCKERFILE.read_text()
    assert "[st]" not in text.replace("`st` extra", "")
    assert any("import torch" in r and "exit 1" in r for r in runs), "the build fails if torch is present"
    builder = [rest for word, rest in stages()["builder"] if word == "RUN"]
    assert any("pip wheel" in r for r in builder)


def test_runtime_environment_is_offline() -> None:
    env = " ".join(rest for word, rest in stages()["runtime"] if word == "ENV")
    for setting in ("HF_HUB_OFFLINE=1", "LITELLM_LOCAL_MODEL_COST_MAP=True", "LITELLM_OFFLINE_MODE=true",
                    "GATEWAY_DATA_DIR=/var/lib/gateway", "GATEWAY_POLICIES=/etc/gateway/policies"):
        assert setting in env


def test_entrypoint_and_port() -> None:
    runtime = dict(stages()["runtime"])
    assert runtime["ENTRYPOINT"] == '["llm-cache-gateway"]'
    assert runtime["EXPOSE"] == "8080"
    assert '"serve"' in runtime["CMD"] and '"0.0.0.0"' in runtime["CMD"]


def test_build_context_keeps_the_package() -> None:
    ignore = (ROOT / "deploy" / "Dockerfile.dockerignore").read_text().splitlines()
    for needed in ("!pyproject.toml", "!README.md", "!gateway/"):
        assert needed in ignore


def _closure(dist: str) -> set[str]:
    """Every distribution the package pulls in without extras of its own, by normalized name (the
    extras its dependencies ask for, such as uvicorn[standard], are followed)."""
    seen: set[tuple[str, str]] = set()
    names: set[str] = set()
    todo: list[tuple[str, str]] = [(dist, "")]
    while todo:
        name, extra = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if (key, extra) in seen:
            continue
        seen.add((key, extra))
        names.add(key)
        for spec in metadata.requires(name) or []:
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                continue  # another extra, or another platform
            try:
                metadata.version(req.name)
            except metadata.PackageNotFoundError:
                continue  # not installed here: it cannot be torch's way in either
            todo.append((req.name, ""))
            todo.extend((req.name, e) for e in req.extras)
    return names


def test_no_torch_in_the_runtime_dependency_closure() -> None:
    try:
        closure = _closure("llm-cache-gateway")
    except metadata.PackageNotFoundError:
        pytest.skip("the project is not installed in this environment")
    assert "onnxruntime" in closure and "tokenizers" in closure  # the ONNX embedding path
    assert not {"torch", "sentence-transformers", "transformers"} & closure
    assert not [d for d in closure if d.startswith("nvidia-")]


# ---------------------------------------------------------------------------------------------
# compose.yaml: one GPU host


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_services(compose: dict) -> None:
    services = compose["services"]
    assert {"gateway", "redis", "qdrant"} <= set(services)
    engines = sorted(n for n in services if n.startswith("vllm-"))
    assert len(engines) >= 2
    env = services["gateway"]["environment"]
    assert env["GATEWAY_REDIS_URL"] == "redis://redis:6379/0"
    assert env["GATEWAY_QDRANT_URL"] == "http://qdrant:6333"
    assert env["GATEWAY_VLLM_ENDPOINTS"].split(",") == [f"http://{n}:8000" for n in engines]
    assert services["gateway"]["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}


def test_compose_gateway_hardening(compose: dict) -> None:
    gw = compose["services"]["gateway"]
    assert gw["read_only"] is True
    assert gw["user"].split(":")[0] != "0"
    assert gw["cap_drop"] == ["ALL"]
    assert "/tmp" in gw["tmpfs"]
    assert "../policies:/etc/gateway/policies:ro" in gw["volumes"]


def test_compose_engines_reserve_gpus_with_prefix_caching(compose: dict) -> None:
    values = yaml.safe_load((check_chart.CHART / "values.yaml").read_text())["vllm"]
    engines = {n: s for n, s in compose["services"].items() if n.startswith("vllm-")}
    devices = []
    for name, svc in engines.items():
        [device] = svc["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"], name
        devices.append(device["device_ids"][0])
        assert "--enable-prefix-caching" in svc["command"]
        assert svc["environment"]["PYTHONHASHSEED"] == values["pythonHashSeed"]
        assert svc["image"] == f"{values['image']['repository']}:{values['image']['tag']}"  # same engine as the chart
        assert svc["shm_size"]
    assert len(set(devices)) == len(devices), "one GPU per replica by default"


def test_compose_passes_yamllint() -> None:
    assert check_chart.yamllint_text(COMPOSE.read_text(), "deploy/compose.yaml") == []
