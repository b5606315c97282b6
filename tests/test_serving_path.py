"""What `llm-cache-gateway serve` loads, and how the packages of `gateway/` depend on each other."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gateway"
DEV_NAMES = ("emulators", "emulator", "bench", "demo", "localrun", "redis_servers")

# Runs `serve` as the console script does, up to the point where uvicorn would take the app: the
# stand-in for `uvicorn.run` reports which modules creating the app loaded.
_SERVE = """
import json, sys
import uvicorn

def run(app, **kwargs):
    print(json.dumps(sorted(sys.modules)))

uvicorn.run = run
from gateway.cli import main
raise SystemExit(main(["serve", "--policies", sys.argv[1], "--port", "0"]))
"""


def _dev(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "gateway_dev" or (parts[0] == "gateway" and any(p in DEV_NAMES for p in parts[1:]))


def test_serve_loads_no_emulator_benchmark_or_demo_module(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "acme.yaml").write_text('tenant: acme\napi_keys: ["sha256:' + "0" * 64 + '"]\n')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true",
           "GATEWAY_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", _SERVE, str(policies)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert "gateway.app" in loaded and "gateway.assembly" in loaded  # the app was created
    assert [m for m in loaded if _dev(m)] == []


def _package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "gateway":
        return None
    return ".".join(parts[:2]) if len(parts) > 1 else "gateway"


def _runtime_imports(tree: ast.Module) -> list[str]:
    """Modules imported when the file runs: imports under `if TYPE_CHECKING:` are for annotations only."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    names: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def import_graph() -> dict[str, set[str]]:
    """Package → the packages it imports (a root module such as `gateway.handler` is its own node)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).parts
        source = "gateway" if rel == ("__init__.py",) else "gateway." + rel[0].removesuffix(".py")
        for name in _runtime_imports(ast.parse(path.read_text(), str(path))):
            target = _package_of(name)
            if target is None or target == source:
                continue
            leaf = target.split(".")[-1]
            if (PACKAGE / leaf).is_dir() or (PACKAGE / f"{leaf}.py").is_file() or target == "gateway":
                graph[source].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_the_packages_of_gateway() -> None:
    graph = import_graph()
    assert "gateway.vendors" in graph and "gateway.keys" in graph["gateway.cache"]  # the walk sees the code
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("layer", ["gateway.cache", "gateway.semantic", "gateway.rewrite", "gateway.provider_cache"])
def test_layers_never_import_the_wiring(layer: str) -> None:
    assert not import_graph()[layer] & {"gateway.handler", "gateway.app", "gateway.assembly", "gateway.adapt",
                                         "gateway.providers"}


def test_the_serving_package_imports_nothing_of_the_dev_package() -> None:
    for path in PACKAGE.rglob("*.py"):
        names = _runtime_imports(ast.parse(path.read_text(), str(path)))
        allowed = path.name == "cli.py"  # hands `emulator`, `bench` and `demo` over when they run
        assert allowed or not [n for n in names if n.split(".")[0] == "gateway_dev"], path
