"""The gateway as `serve` assembles it (every layer, in its order) with the repo's shipped
`policies/_defaults.yaml` and a tenant file that sets nothing but its key, on the vendor emulators.

- The `initech` traffic that once cost more than no caching: eleven Anthropic requests whose ~5.1k-token
  system prompt starts with a timestamp, the rewrite off (the shipped default). With the layer learning
  from observed outcomes the bill stays within the cost without caching plus the stated probe bound.
- Per-template rows: a response-cache hit carries the template identity of the prompt it answered, so a
  miss and its hit share one row (`prefix:<family>`, or the client's `x-gateway-template`); requests
  without any template parts get one "(no template)" row per provider and model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.provider_cache.outcomes import max_unread_writes, probe_bound
from gateway_dev.emulators import EmulatorSet
from gateway_dev.localrun import LocalGateway

from .live import ADMIN, admin, post, records_of

pytestmark = pytest.mark.timeout(300)

SHIPPED = yaml.safe_load((Path(__file__).resolve().parents[2] / "policies" / "_defaults.yaml").read_text())
KEY, ROWS_KEY = "sk-initech-shipped", "sk-rows-shipped"
N = 11
HANDBOOK = " ".join(f"Rule {i}: items bought in category {i} may be returned within {i + 10} days with the "
                    f"receipt, and refunds go to the original payment method." for i in range(170))
ANTHROPIC = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}


@pytest.fixture(scope="module")
def gw(emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalGateway]:
    tenants = {"initech": {"key": KEY}, "rows": {"key": ROWS_KEY}}
    g = LocalGateway(emu, tenants, tmp_path_factory.mktemp("shipped"), defaults=SHIPPED, admin_key=ADMIN,
                     vllm_endpoints=[])
    g.start()
    try:
        yield g
    finally:
        g.stop()


def test_the_shipped_defaults_are_the_ones_that_once_raised_the_bill() -> None:
    assert SHIPPED["prompt_rewrite"]["enabled"] is False
    assert SHIPPED["provider_cache"]["anthropic"]["enabled"] is True


def test_initech_on_the_shipped_defaults_costs_at_most_no_caching_plus_the_probe_bound(gw: LocalGateway) -> None:
    ids = []
    for i in range(N):
        system = f"Current time: 2026-11-05T10:00:{i:02d}Z. You are Initech's support assistant. {HANDBOOK}"
        question = f"Customer {i}: can I return a stapler?"
        r = post(gw, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": system,
                                      "messages": [{"role": "user", "content": question}]}, ANTHROPIC)
        gw.wait_idle()  # one after another: each outcome is in before the next decision
        ids.append(r.headers["x-gateway-request-id"])
    recs = records_of(gw, "initech", ids)
    assert 5000 < max(r["input_tokens"] for r in recs) < 5300  # the ~5.1k-token prompt
    assert all(r["gateway_cache"] not in ("response-hit", "semantic-hit") for r in recs)  # every one upstream
    cost = sum(r["cost_usd"] for r in recs)
    without = sum(r["cost_without_cache_usd"] for r in recs)
    p = gw.components.pipeline.stage("usage").prices.lookup("anthropic", "claude-sonnet-4-5")  # type: ignore[union-attr]
    premium = max(r["input_tokens"] for r in recs) * max(0.0, p.write_rate - p.input)  # one unread 5m write
    bound = probe_bound(N, premium)
    assert bound > 0
    assert cost <= without + bound + 1e-9, (cost, without, bound)
    writes = [r for r in recs if r["cache_creation_input_tokens"] > 0]
    assert 1 <= len(writes) <= max_unread_writes(N)  # it tried, then stopped writing what nobody read
    assert all(r["cache_read_input_tokens"] == 0 for r in recs)  # the timestamp at the top: nothing to read
    totals = admin(gw, "/admin/usage", tenant="initech")
    assert totals["cost_usd"] == pytest.approx(cost)
    assert totals["cost_without_cache_usd"] == pytest.approx(without)
    print(f"initech shipped defaults: cost {cost:.4f} without {without:.4f} bound {bound:.4f} writes {len(writes)}")


def _twice(gw: LocalGateway, path: str, body: dict[str, Any], headers: dict[str, str]) -> list[str]:
    ids = []
    for _ in range(2):
        r = post(gw, path, body, headers)
        gw.wait_idle()  # the response cache stores the first answer before the second asks
        ids.append(r.headers["x-gateway-request-id"])
    return ids


def test_hits_land_in_the_row_of_the_prompt_they_answered(gw: LocalGateway) -> None:
    oai = {"authorization": f"Bearer {ROWS_KEY}"}
    ant = {"x-api-key": ROWS_KEY, "anthropic-version": "2023-06-01"}
    system = "You are Globex's billing assistant. Answer from the price list. " + HANDBOOK[:4000]
    cases = {
        # a prompt with template parts and no x-gateway-template: its family
        "family": _twice(gw, "/v1/chat/completions", {"model": "gpt-4o", "messages": [
            {"role": "system", "content": system}, {"role": "user", "content": "What does a refund cost?"}]}, oai),
        # the client names its template
        "named": _twice(gw, "/v1/chat/completions", {"model": "gpt-4o", "messages": [
            {"role": "system", "content": system}, {"role": "user", "content": "Is shipping free?"}]},
            {**oai, "x-gateway-template": "billing@3"}),
        # nothing a cache could share across conversations: one untemplated row per provider and model
        # (max_tokens large enough that the answer is not cut short, which the shipped defaults never store)
        "bare-openai": _twice(gw, "/v1/chat/completions", {"model": "gpt-4o", "messages": [
            {"role": "user", "content": "Say hello."}]}, oai),
        "bare-anthropic": _twice(gw, "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
            {"role": "user", "content": "Say hello."}]}, ant),
    }
    recs = {name: records_of(gw, "rows", ids) for name, ids in cases.items()}
    for name, (miss, hit) in recs.items():
        assert miss["gateway_cache"] != "response-hit" and hit["gateway_cache"] == "response-hit", name
        assert hit["prompt_template_id"] == miss["prompt_template_id"], name
        assert hit["prompt_template_version"] == miss["prompt_template_version"], name
    assert recs["family"][1]["prompt_template_id"].startswith("prefix:")
    assert (recs["named"][1]["prompt_template_id"], recs["named"][1]["prompt_template_version"]) == ("billing", "3")
    assert recs["bare-openai"][1]["prompt_template_id"] is None

    report = admin(gw, "/admin/usage/report", tenant="rows", since="7d")["tenants"][0]
    rows = {t["template"]: t for t in report["templates"]}
    family = recs["family"][0]["prompt_template_id"]
    expected = {family: ("openai", "gpt-4o"), "billing@3": ("openai", "gpt-4o"),
                "-:openai/gpt-4o": ("openai", "gpt-4o"), "-:anthropic/claude-sonnet-4-5": ("anthropic",
                                                                                         "claude-sonnet-4-5")}
    assert set(rows) == set(expected), sorted(rows)
    for template, (provider, model) in expected.items():
        row = rows[template]
        assert row["requests"] == 2 and row["hit_rate"]["response"] == pytest.approx(0.5), (template, row)
        assert (row["provider"], row["model"]) == (provider, model), template
    assert not any(t == "-" for t in rows)  # no mixed "(no template)" row
