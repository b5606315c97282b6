"""The price map read from litellm's file agrees with litellm itself (`litellm.model_cost`,
`litellm.cost_per_token`), imported here, in the test process only."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from typing import Any

import pytest

from gateway.accounting.catalog import _PRICE_FIELD, bundled_path, expand_aliases, parse_cost_map, read_cost_map
from gateway.accounting.normalize import normalize
from gateway.accounting.pricing import PriceBook, cost


@pytest.fixture(scope="module")
def litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


@pytest.fixture(scope="module")
def ours() -> dict[str, Any]:
    return read_cost_map()


def _prices(entry: Any) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if _PRICE_FIELD.match(k)}


def test_every_name_and_price_field_matches_litellm(litellm: Any, ours: dict[str, Any]) -> None:
    theirs = litellm.model_cost
    assert len(theirs) > 1000
    assert set(ours) == set(theirs)
    mismatched = [name for name in theirs if _prices(theirs[name]) != ours[name]]
    assert mismatched == []


def test_alias_rows_are_served_as_their_owner(litellm: Any, ours: dict[str, Any]) -> None:
    import orjson

    raw = orjson.loads(bundled_path().read_bytes())  # type: ignore[union-attr]
    pointers = {k: v["alias_of"] for k, v in raw.items() if isinstance(v, dict) and isinstance(v.get("alias_of"), str)}
    assert pointers, "the bundled map has alias rows: the expansion is exercised"
    for alias, owner in list(pointers.items())[:50]:
        if alias in ours:
            assert ours[alias] is ours[owner]
            assert ours[alias] == _prices(litellm.model_cost[alias])


def test_price_book_lookups_match_on_litellm_s_map(litellm: Any, ours: dict[str, Any]) -> None:
    names = sorted(n for n, e in ours.items() if isinstance(e.get("input_cost_per_token"), int | float))
    sample = [*random.Random(7).sample(names, 300), "gpt-4o", "claude-sonnet-4-5", "gemini/gemini-2.5-pro",
              "deepseek/deepseek-chat", "gpt-5.6"]
    a, b = PriceBook(None, litellm.model_cost), PriceBook(None, ours)
    for name in sample:
        provider, _, model = name.rpartition("/")
        provider = provider if provider in ("gemini", "deepseek", "anthropic") else "openai"
        assert a.lookup(provider, model) == b.lookup(provider, model), name


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "claude-sonnet-4-5", "claude-haiku-4-5",
                                   "gemini/gemini-2.5-flash", "deepseek/deepseek-chat", "o3-mini"])
def test_costs_match_litellm_cost_per_token(litellm: Any, ours: dict[str, Any], model: str) -> None:
    provider, _, bare = model.rpartition("/")
    prices = PriceBook(None, ours).lookup(provider or "openai", bare)
    u = normalize("openai_chat", {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500})
    prompt_cost, completion_cost = litellm.cost_per_token(model=model, prompt_tokens=1200, completion_tokens=300)
    assert cost(u, prices) == pytest.approx(prompt_cost + completion_cost, rel=1e-9)


def test_claude_cache_read_matches_litellm(litellm: Any, ours: dict[str, Any]) -> None:
    prices = PriceBook(None, ours).lookup("anthropic", "claude-sonnet-4-5")
    u = normalize("anthropic", {"input_tokens": 400, "cache_read_input_tokens": 600, "output_tokens": 100})
    p, c = litellm.cost_per_token(model="claude-sonnet-4-5", prompt_tokens=1000, completion_tokens=100,
                                  cache_read_input_tokens=600)
    assert cost(u, prices) == pytest.approx(p + c, rel=1e-9)


def test_alias_conflicts_and_dangling_pointers() -> None:
    rows = {"a": {"input_cost_per_token": 1, "aliases": ["b", "c"]}, "c": {"input_cost_per_token": 2},
            "d": {"alias_of": "a"}, "e": {"alias_of": "missing"}, "f": {"alias_of": "d"}}
    out = expand_aliases(rows)
    assert out["b"] is out["a"] and out["d"] is out["a"]
    assert out["c"]["input_cost_per_token"] == 2  # a canonical entry wins over an alias
    assert "e" not in out and "f" not in out


def test_unreadable_file_prices_nothing(tmp_path: Any) -> None:
    bad = tmp_path / "prices.json"
    bad.write_bytes(b"[1, 2]")
    assert read_cost_map(bad) == {}
    assert parse_cost_map(b'{"m": {"input_cost_per_token": 1e-6, "max_tokens": 9}}') == {
        "m": {"input_cost_per_token": 1e-6}}


def test_reading_prices_does_not_import_litellm() -> None:
    code = ("import sys; from gateway.accounting.pricing import load_cost_map; m = load_cost_map(); "
            "assert len(m) > 1000; assert 'litellm' not in sys.modules, 'litellm imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
