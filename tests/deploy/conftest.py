"""Fixtures for the chart and image checks: each CI variant rendered once per session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

# The test modules import deploy_support by name; keep that working under --import-mode=importlib too.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from deploy_support import VARIANTS, Render


@pytest.fixture(scope="session")
def renders() -> dict[str, Render]:
    return {v: Render(v) for v in VARIANTS}


@pytest.fixture(params=VARIANTS)
def render(request: pytest.FixtureRequest, renders: dict[str, Render]) -> Render:
    return renders[request.param]


@pytest.fixture(scope="session")
def render_values():
    """Render the chart with ad-hoc values (for the cases no CI variant covers)."""

    def make(values: dict[str, Any]) -> Render:
        return Render("ad-hoc", values)

    return make
