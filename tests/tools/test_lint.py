"""Cache lint: each pattern found, with money lost per 1,000 requests; the command's exit codes;
the per-template report from usage records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.provider_cache.tables import fallback_prices
from gateway.tools.lint import format_template_report, guess_protocol, lint_body, lint_command, template_report

RULES = " ".join(f"Rule {i}: returns within {i + 10} days." for i in range(200))


def anthropic_body(system: str, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 10, "system": system, "tools": tools or [],
            "messages": [{"role": "user", "content": "hi"}]}


def patterns(report: Any) -> list[str]:
    return [f.pattern for f in report.findings]


def test_volatile_value_early_in_the_prefix_loses_all_of_it() -> None:
    report = lint_body(anthropic_body(f"Now: 2026-11-05T10:23:45Z. {RULES}"))
    assert patterns(report) == ["volatile_in_prefix"]
    f = report.findings[0]
    assert f.tokens_lost == report.prefix_tokens > 1024
    prices = fallback_prices("anthropic", "claude-sonnet-4-5")
    assert f.usd_per_1000 == pytest.approx(f.tokens_lost * (prices.input - prices.read) * 1000)


def test_volatile_value_late_in_the_prefix_loses_only_what_follows() -> None:
    report = lint_body(anthropic_body(f"{RULES} Now: 2026-11-05T10:23:45Z. Be kind."))
    f = report.findings[0]
    assert 0 < f.tokens_lost < 50


def test_unsorted_tools_per_user_data_and_short_prefixes() -> None:
    schema = {"type": "object"}
    tools = [{"name": "zeta", "input_schema": schema}, {"name": "alpha", "input_schema": schema}]
    report = lint_body(anthropic_body(f"Customer: jane@example.com. {RULES}", tools))
    assert patterns(report) == ["unstable_tool_order", "per_user_before_shared"]
    # too short to cache: a note, no finding (nothing there can break a cache)
    short = lint_body(anthropic_body("Be brief. Now: 2026-11-05T10:23:45Z."))
    assert short.findings == [] and short.usd_per_1000 == 0 and "minimum cacheable length" in short.notes[0]
    clean = lint_body(anthropic_body(RULES))
    assert clean.findings == [] and clean.usd_per_1000 == 0 and clean.notes == []


def test_each_finding_has_its_own_loss_and_they_add_up() -> None:
    system = f"Now: 2026-11-05T10:23:45Z. {RULES} Request id: rq-88ab12cd. {RULES} Contact: ann@example.org. {RULES}"
    report = lint_body(anthropic_body(system))
    assert patterns(report) == ["volatile_in_prefix", "volatile_in_prefix", "per_user_before_shared"]
    losses = [f.tokens_lost for f in report.findings]
    assert len(set(losses)) == 3 and all(n > 1000 for n in losses)
    assert sum(losses) == report.tokens_lost == report.prefix_tokens  # the first finding is at the top
    assert report.usd_per_1000 == pytest.approx(sum(f.usd_per_1000 for f in report.findings))


def test_per_user_data_anywhere_in_the_instructions_is_flagged() -> None:
    late = lint_body(anthropic_body(f"{RULES} {RULES} Escalate to ops-team@initech.example if unsure."))
    assert patterns(late) == ["per_user_before_shared"] and late.findings[0].tokens_lost < 50
    openai = {"model": "gpt-4o", "messages": [{"role": "system", "content": f"User: bob@example.com. {RULES}"},
                                               {"role": "user", "content": "hi"}]}
    assert patterns(lint_body(openai)) == ["per_user_before_shared"]


@pytest.mark.parametrize(("body", "protocol"), [
    ({"model": "gpt-4o", "messages": []}, "openai_chat"),
    ({"model": "claude-x", "max_tokens": 1, "system": "s", "messages": []}, "anthropic_messages"),
    ({"model": "gpt-4o", "input": "hi"}, "openai_responses"),
    ({"contents": []}, "gemini"),
])
def test_protocol_guessed_from_the_shape(body: dict[str, Any], protocol: str) -> None:
    assert guess_protocol(body) == protocol


def test_lint_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    messages = [{"role": "system", "content": f"Request id: rq-88ab12cd. {RULES}"}, {"role": "user", "content": "hi"}]
    bad.write_text(orjson.dumps({"model": "gpt-4o", "messages": messages}).decode())
    assert lint_command(str(bad), None) == 1
    out = capsys.readouterr().out
    assert "volatile_in_prefix" in out and "per 1,000 requests" in out and "openai_chat" in out
    good = tmp_path / "good.json"
    good.write_text(orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                                  "systemInstruction": {"parts": [{"text": RULES * 3}]}}).decode())
    assert lint_command(str(good), "gemini") == 0
    assert "no cache-breaking pattern" in capsys.readouterr().out
    short = tmp_path / "short.json"
    short.write_text(orjson.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}).decode())
    assert lint_command(str(short), None) == 0
    assert "note:" in capsys.readouterr().out
    (tmp_path / "list.json").write_text("[1, 2]")
    assert lint_command(str(tmp_path / "list.json"), None) == 2
    assert lint_command(str(tmp_path / "missing.json"), None) == 2
    assert lint_command(str(good), "nope") == 2


def record(template: str, cached: int, *, moved: bool = True, resorted: bool = False, prefix: str = "p",
           decision: str = "cache_5m") -> dict[str, Any]:
    return {"kind": "request", "prompt_template_id": template, "provider": "anthropic", "model": "claude-sonnet-4-5",
            "input_tokens": 4000, "cached_input_tokens": cached, "cost_usd": 0.01, "saved_layer": "provider",
            "details": {"prefix_hash": prefix,
                        "rewrite": {"moved": [{"where": "system", "kind": "datetime", "chars": 20}] if moved else [],
                                    "tools_sorted": resorted},
                        "provider_cache": {"decision": decision, "prefix_tokens": 3000}}}


def test_template_report_from_usage_records() -> None:
    recs = [record("support", 3000, resorted=i % 2 == 0) for i in range(10)]
    recs += [record("search", 0, moved=False, prefix=f"p{i}", decision="skip_min") for i in range(8)]
    recs.append({**record("support", 0), "saved_layer": "response"})  # gateway hits are not judged
    rows = template_report(recs)
    assert [r["template"] for r in rows] == ["support", "search"]
    support, search = rows
    assert support["requests"] == 10 and support["cached_share"] == pytest.approx(0.75)
    found = {f["pattern"]: f for f in support["findings"]}
    assert set(found) == {"volatile_in_prefix", "unstable_tool_order"}
    assert "5/10" in found["unstable_tool_order"]["detail"]
    assert {f["pattern"] for f in search["findings"]} == {"per_user_before_shared", "prefix_under_minimum",
                                                         "uncached_prefix"}
    assert all(f["usd_per_1000"] > 0 for f in search["findings"])
    text = format_template_report(rows)
    assert "support: 10 requests" in text and "per 1,000 requests" in text


def test_lint_reads_standard_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io
    import sys

    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": f"Request id: rq-88ab12cd. {RULES}"},
                                            {"role": "user", "content": "hi"}]}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(orjson.dumps(body))))
    assert lint_command("-", None) == 1
    assert "volatile_in_prefix" in capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"not json")))
    assert lint_command("-", None) == 2
