"""The README's quickstart names every system package the tests need — the ones `.ci/run` installs
on a fresh machine — and its two commands are the ones `.ci/run` runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_lists_every_package_ci_installs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    needed = {pkg for group in re.findall(r"need\+=\(([^)]*)\)", ci) for pkg in group.split()}
    assert {"redis-server", "redis-tools", "chromium", "fonts-dejavu-core"} <= needed
    install = re.search(r"apt-get install -y ([^`\n]+)", readme)
    assert install, "the README has no apt-get install line"
    assert needed <= set(install.group(1).split()), needed - set(install.group(1).split())


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    install = "pip install -q -e '.[test]' && (cd tests/clients/node && npm ci --no-audit --no-fund)"
    assert f"{install} && pytest -q" in readme
    assert install in ci and re.search(r"^pytest -q$", ci, re.M)  # CI adds its static checks in between
