"""The vendors' current caching rules, each checked on the emulator it belongs to (docs/emulators.md,
"Caching rules verified in 2026", lists each with the vendor page it was read on). Every test here fails
when its rule is broken; the gateway side of each rule is tests/provider_cache/test_vendor_rules_2026.py."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import pytest

from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)

TEXT = " ".join(f"Clause {i}: a returned item needs its receipt and its original box." for i in range(400))


def words(n_tokens: int) -> str:
    """About `n_tokens` tokens of plain text (the emulators count with o200k)."""
    return " ".join(f"w{i % 97}" for i in range(n_tokens // 2))


@pytest.fixture
def oai(emu: EmulatorSet) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-rules", max_retries=0)


@pytest.fixture
def ant(emu: EmulatorSet) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="sk-ant-rules", max_retries=0)


# ---- OpenAI -------------------------------------------------------------------------------------------


def test_openai_retention_values_per_model(oai: openai.OpenAI) -> None:
    msgs = [{"role": "user", "content": "hi"}]
    # gpt-5.5 and later accept only 24h
    with pytest.raises(openai.BadRequestError):
        oai.chat.completions.create(model="gpt-5.5", messages=msgs, prompt_cache_retention="in_memory")
    oai.chat.completions.create(model="gpt-5.5", messages=msgs, prompt_cache_retention="24h")
    # models of the extended list take both; the others only in_memory
    for value in ("in_memory", "24h"):
        oai.chat.completions.create(model="gpt-4.1", messages=msgs, prompt_cache_retention=value)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError):
        oai.chat.completions.create(model="gpt-4o", messages=msgs, prompt_cache_retention="24h")


def test_openai_gpt_5_6_bills_writes_and_explicit_mode_without_breakpoints_writes_nothing(oai: openai.OpenAI) -> None:
    msgs = [{"role": "system", "content": TEXT}, {"role": "user", "content": "Can I return a lamp?"}]
    first = oai.chat.completions.create(model="gpt-5.6", messages=msgs).usage
    assert first.prompt_tokens_details.cache_write_tokens > 1024 and first.prompt_tokens_details.cached_tokens == 0
    again = oai.chat.completions.create(model="gpt-5.6", messages=msgs).usage
    assert again.prompt_tokens_details.cached_tokens > 1024 and again.prompt_tokens_details.cache_write_tokens == 0
    other = [{"role": "system", "content": TEXT + " v2"}, msgs[1]]
    quiet = oai.chat.completions.create(model="gpt-5.6", messages=other,
                                        extra_body={"prompt_cache_options": {"mode": "explicit"}}).usage
    assert quiet.prompt_tokens_details.cache_write_tokens == 0 and quiet.prompt_tokens_details.cached_tokens == 0
    # before GPT-5.6: no breakpoints, no options, writes free (no cache_write_tokens at all)
    with pytest.raises(openai.BadRequestError):
        oai.chat.completions.create(model="gpt-5.5", messages=msgs,
                                    extra_body={"prompt_cache_options": {"mode": "explicit"}})
    old = oai.chat.completions.create(model="gpt-4.1", messages=msgs).usage
    assert not getattr(old.prompt_tokens_details, "cache_write_tokens", None)


def test_openai_at_most_four_writes_and_the_1024_token_minimum(oai: openai.OpenAI) -> None:
    bp = {"mode": "explicit"}
    parts = [{"type": "text", "text": words(600) + f" part {i}", "prompt_cache_breakpoint": bp} for i in range(6)]
    msgs = [{"role": "user", "content": parts}]
    first = oai.chat.completions.create(model="gpt-5.6", messages=msgs,  # type: ignore[arg-type]
                                        extra_body={"prompt_cache_options": {"mode": "explicit"}}).usage
    # six explicit breakpoints; the first (~600 tokens) is under 1024; only the latest four are written
    written = first.prompt_tokens_details.cache_write_tokens
    assert 0 < written < first.prompt_tokens
    shorter = [{"role": "user", "content": parts[:2]}]  # ends at the second breakpoint: not written
    miss = oai.chat.completions.create(model="gpt-5.6", messages=shorter,  # type: ignore[arg-type]
                                       extra_body={"prompt_cache_options": {"mode": "explicit"}}).usage
    assert miss.prompt_tokens_details.cached_tokens == 0
    longer = [{"role": "user", "content": parts[:3]}]  # the third is among the latest four: read
    hit = oai.chat.completions.create(model="gpt-5.6", messages=longer,  # type: ignore[arg-type]
                                      extra_body={"prompt_cache_options": {"mode": "explicit"}}).usage
    assert hit.prompt_tokens_details.cached_tokens > 1024


def test_openai_prompt_cache_diagnostics(oai: openai.OpenAI) -> None:
    tools = [{"type": "function", "name": "get_time", "parameters": {"type": "object"}}]
    first = oai.responses.create(model="gpt-5.6", instructions=TEXT, input="What time is it?", tools=tools)
    assert first.prompt_cache_diagnostics is None  # none asked for
    same = oai.responses.create(model="gpt-5.6", instructions=TEXT, input="What time is it?", tools=tools,
                                extra_body={"prompt_cache_options": {"comparison_response_id": first.id}})
    assert same.prompt_cache_diagnostics.type == "cache_hit"
    renamed = [{**tools[0], "name": "get_date"}]
    changed = oai.responses.create(model="gpt-5.6", instructions=TEXT, input="What time is it?", tools=renamed,
                                   extra_body={"prompt_cache_options": {"comparison_response_id": first.id}})
    d = changed.prompt_cache_diagnostics
    assert (d.type, d.reason) == ("cache_miss", "tools_changed") and d.cache_missed_tokens > 1024
    compare = {"prompt_cache_options": {"comparison_response_id": first.id}}
    edited = oai.responses.create(model="gpt-5.6", instructions=TEXT + " Be brief.", input="What time is it?",
                                  tools=tools, extra_body=compare)
    assert edited.prompt_cache_diagnostics.reason == "input_changed"
    lost = oai.responses.create(model="gpt-5.6", instructions=TEXT, input="x", tools=tools,
                                extra_body={"prompt_cache_options": {"comparison_response_id": "resp_unknown"}})
    assert lost.prompt_cache_diagnostics.type == "comparison_response_not_found"


# ---- Anthropic ----------------------------------------------------------------------------------------

EPH = {"type": "ephemeral"}


def _ask(ant: anthropic.Anthropic, model: str, system: Any, **kw: Any) -> Any:
    return ant.messages.create(model=model, max_tokens=32, system=system,
                               messages=kw.pop("messages", [{"role": "user", "content": "Hello?"}]), **kw)


def test_anthropic_top_level_cache_control_is_automatic_and_counts_toward_four(ant: anthropic.Anthropic) -> None:
    system = [{"type": "text", "text": TEXT}]
    first = _ask(ant, "claude-sonnet-4-5", system, cache_control=EPH).usage
    assert first.cache_creation_input_tokens > 1024
    assert _ask(ant, "claude-sonnet-4-5", system, cache_control=EPH).usage.cache_read_input_tokens > 1024
    four = [{"type": "text", "text": f"part {i} " + words(300), "cache_control": EPH} for i in range(4)]
    _ask(ant, "claude-sonnet-4-5", four)  # four block markers: allowed
    with pytest.raises(anthropic.BadRequestError, match="Found 5"):
        _ask(ant, "claude-sonnet-4-5", four, cache_control=EPH,
             messages=[{"role": "user", "content": "Hello?"}])


@pytest.mark.parametrize(("model", "tokens", "cached"), [
    ("claude-opus-5", 700, True), ("claude-sonnet-4-5", 700, False), ("claude-sonnet-4-5", 1300, True),
    ("claude-opus-4-7", 1300, False), ("claude-opus-4-7", 2300, True), ("claude-haiku-4-5", 3000, False),
    ("claude-haiku-4-5", 4500, True), ("claude-opus-4-6", 3000, False)])
def test_anthropic_minimum_cacheable_length_per_model(ant: anthropic.Anthropic, model: str, tokens: int,
                                                      cached: bool) -> None:
    system = [{"type": "text", "text": f"{model} " + words(tokens), "cache_control": EPH}]
    usage = _ask(ant, model, system).usage
    assert (usage.cache_creation_input_tokens > 0) is cached, usage


def _grow(kind: str, n: int, k: int) -> list[dict[str, Any]]:
    """An assistant turn with n blocks and the user turn answering it."""
    if kind == "tools":
        calls = [{"type": "tool_use", "id": f"toolu_{k}_{i}", "name": "lookup", "input": {"i": i}} for i in range(n)]
        results = [{"type": "tool_result", "tool_use_id": f"toolu_{k}_{i}", "content": f"r{i}"} for i in range(n)]
        return [{"role": "assistant", "content": calls}, {"role": "user", "content": results}]
    texts = [{"type": "text", "text": f"note {k}.{i}"} for i in range(n)]
    return [{"role": "assistant", "content": texts}, {"role": "user", "content": [*texts[:1], {"type": "text",
                                                                                              "text": "go on"}]}]


@pytest.mark.parametrize(("kind", "reads"), [("tools", True), ("text", False)])
def test_anthropic_lookback_is_20_positions_and_a_run_of_tool_blocks_is_one(ant: anthropic.Anthropic, kind: str,
                                                                            reads: bool) -> None:
    tools = [{"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}]
    start = [{"role": "user", "content": [{"type": "text", "text": TEXT + kind}]}]
    first = ant.messages.create(model="claude-sonnet-4-5", max_tokens=16, tools=tools, messages=start,
                                cache_control=EPH).usage
    assert first.cache_creation_input_tokens > 1024
    grown = start + _grow(kind, 24, 1)  # 48 new blocks: as tool runs, two positions; as text, 48
    second = ant.messages.create(model="claude-sonnet-4-5", max_tokens=16, tools=tools, messages=grown,
                                 cache_control=EPH).usage
    assert (second.cache_read_input_tokens > 1024) is reads, second


def test_anthropic_longer_ttl_before_shorter(ant: anthropic.Anthropic) -> None:
    hour = {"type": "ephemeral", "ttl": "1h"}
    good = [{"type": "text", "text": words(1500), "cache_control": hour},
            {"type": "text", "text": words(1500) + " b", "cache_control": EPH}]
    u = _ask(ant, "claude-sonnet-4-5", good).usage
    assert u.cache_creation.ephemeral_1h_input_tokens > 1024 and u.cache_creation.ephemeral_5m_input_tokens > 700
    bad = [{**good[0], "cache_control": EPH}, {**good[1], "cache_control": hour}]
    with pytest.raises(anthropic.BadRequestError):
        _ask(ant, "claude-sonnet-4-5", bad)


def test_anthropic_cache_diagnostics(ant: anthropic.Anthropic) -> None:
    system = [{"type": "text", "text": TEXT}]
    msgs = [{"role": "user", "content": "Can I return a lamp?"}]
    first = _ask(ant, "claude-sonnet-4-5", system, messages=msgs, diagnostics={"previous_message_id": None})
    assert first.diagnostics is None

    def diag(**kw: Any) -> Any:
        kw.setdefault("messages", msgs)
        r = _ask(ant, kw.pop("model", "claude-sonnet-4-5"), kw.pop("system", system),
                 diagnostics={"previous_message_id": first.id}, **kw)
        return r.diagnostics.cache_miss_reason if r.diagnostics else None

    appended = [*msgs, {"role": "assistant", "content": "Yes."}, {"role": "user", "content": "And a chair?"}]
    assert diag(messages=appended) is None  # append-only: nothing diverged
    assert diag(model="claude-sonnet-4-6").type == "model_changed"
    assert diag(system=[{"type": "text", "text": TEXT + " Be brief."}]).type == "system_changed"
    changed = diag(tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}])
    assert changed.type == "tools_changed" and changed.cache_missed_input_tokens > 1024
    edited = diag(messages=[{"role": "user", "content": "Can I return a chair?"}])
    assert edited.type == "messages_changed"
    assert diag(tool_choice={"type": "none"}).type == "unavailable"
    gone = _ask(ant, "claude-sonnet-4-5", system, messages=msgs, diagnostics={"previous_message_id": "msg_nope"})
    assert gone.diagnostics.cache_miss_reason.type == "previous_message_not_found"


# ---- Gemini -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "tokens", "cached"), [
    ("gemini-2.5-flash", 1500, False), ("gemini-2.5-flash", 2600, True), ("gemini-2.5-pro", 2600, True),
    ("gemini-3-flash-preview", 2600, False), ("gemini-3-flash-preview", 4600, True)])
def test_gemini_implicit_cache_minimum_per_model(emu: EmulatorSet, model: str, tokens: int, cached: bool) -> None:
    url = f"{emu.gemini_base_url}/v1beta/models/{model}:generateContent"
    body = {"systemInstruction": {"parts": [{"text": f"{model} {tokens} " + words(tokens)}]},
            "contents": [{"role": "user", "parts": [{"text": "Hello?"}]}]}
    for _ in range(2):
        r = httpx2.post(url, json=body, headers={"x-goog-api-key": "k-rules"})
        assert r.status_code == 200, r.text
    assert (r.json()["usageMetadata"].get("cachedContentTokenCount", 0) > 0) is cached


def test_gemini_explicit_cache_reports_what_storage_is_billed_on(emu: EmulatorSet) -> None:
    """Storage is billed on the cached tokens for the cache's lifetime: the resource states both."""
    url = f"{emu.gemini_base_url}/v1beta/cachedContents"
    body = {"model": "models/gemini-2.5-flash", "ttl": "600s",
            "systemInstruction": {"parts": [{"text": words(3000)}]}}
    r = httpx2.post(url, json=body, headers={"x-goog-api-key": "k-rules"})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["usageMetadata"]["totalTokenCount"] > 2048
    from gateway_dev.emulators.gemini_cache import parse_rfc3339

    assert parse_rfc3339(res["expireTime"]) - parse_rfc3339(res["createTime"]) == pytest.approx(600, abs=1)
