"""Fixtures of the accounting tests: one price book on litellm's real cost map per session."""

from __future__ import annotations

import pytest

from gateway.accounting.pricing import PriceBook, load_cost_map


@pytest.fixture(scope="session")
def cost_map():  # type: ignore[no-untyped-def]
    return load_cost_map()  # litellm's bundled map (offline: conftest sets LITELLM_LOCAL_MODEL_COST_MAP)


@pytest.fixture
def book(cost_map) -> PriceBook:  # type: ignore[no-untyped-def]
    return PriceBook(None, cost_map)
