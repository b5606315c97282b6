"""Fixtures for the policy tests: write a policy folder from dedented YAML snippets."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ._helpers import Writer


@pytest.fixture
def policy_dir(tmp_path: Path) -> Writer:
    """`policy_dir(acme="tenant: acme ...", _defaults="...")` writes `<name>.yaml` files and returns
    the folder; a name with a dot is used as written (`**{"b.yml": ...}`). Call it again to rewrite."""
    folder = tmp_path / "policies"
    folder.mkdir()

    def write(**files: str) -> Path:
        for name, text in files.items():
            filename = name if "." in name else f"{name}.yaml"
            (folder / filename).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return folder

    return write
