"""The context hash (everything but the final question must match) and which requests qualify."""

from __future__ import annotations

import pytest

from gateway.semantic.key import context_hash, excluded, skip_reason

from ._helpers import chat, make_ctx, policy

EMB = ("use-multilingual-v3", 512)


def digest(body: dict, **kw: object) -> str:
    version = str(kw.pop("version", ""))
    user_scope = bool(kw.pop("user_scope", False))
    embedder = kw.pop("embedder", EMB)
    return context_hash(make_ctx(body, **kw), user_scope, version, embedder)  # type: ignore[arg-type]


def test_only_the_final_question_is_free() -> None:
    base = digest(chat("How do I reset my password?", system="You are support."))
    assert base == digest(chat("Where do I change my password?", system="You are support."))
    assert base == digest({**chat("How do I reset my password?", system="You are support."), "stream": True})
    for other in (
        digest(chat("How do I reset my password?", system="You are sales.")),
        digest(chat("How do I reset my password?", system="You are support.", model="gpt-4o")),
        digest(chat("How do I reset my password?", system="You are support.", temperature=0.2)),
        digest(chat("How do I reset my password?", system="You are support.", history=[("user", "hi"),
                                                                                       ("assistant", "hello")])),
        digest(chat("How do I reset my password?", system="You are support.",
                    tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}])),
        digest(chat("How do I reset my password?", system="You are support.",
                    response_format={"type": "json_object"})),
        digest(chat("How do I reset my password?", system="You are support."), tenant="globex"),
        digest(chat("How do I reset my password?", system="You are support."), version="kb-2"),
        digest(chat("How do I reset my password?", system="You are support."), template=("faq", "3")),
        digest(chat("How do I reset my password?", system="You are support."), embedder=("other", 384)),
        digest(chat("How do I reset my password?", system="You are support."), user="u1", user_scope=True),
    ):
        assert other != base


def test_skip_reasons() -> None:
    pol = policy("acme")
    assert skip_reason(make_ctx(chat("How do I reset my password?"), pol=pol), pol.semantic_cache, False, 2000) is None
    off = policy("acme", enabled=False)
    assert skip_reason(make_ctx(chat("q?"), pol=off), off.semantic_cache, False, 2000) == "disabled"
    assert skip_reason(make_ctx(chat("q?"), pol=pol, no_store=True), pol.semantic_cache, False, 2000) == "no-store"
    long_history = chat("and then?", history=[("user", "a"), ("assistant", "b")] * 2)
    assert skip_reason(make_ctx(long_history, pol=pol), pol.semantic_cache, False, 2000) == "history"
    tool_turn = {"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "user", "content": "thanks, and tomorrow?"}]}
    assert skip_reason(make_ctx(tool_turn, pol=pol), pol.semantic_cache, False, 2000) in ("tool traffic", "history")
    assert skip_reason(make_ctx(chat("x" * 50), pol=pol), pol.semantic_cache, False, 10) == "question too long"
    assert skip_reason(make_ctx(chat("q?"), pol=pol), pol.semantic_cache, True, 2000) == "no user"
    assert skip_reason(make_ctx(chat("q?", n=2), pol=pol), pol.semantic_cache, False, 2000) == "n > 1"
    assert skip_reason(make_ctx(chat("What is the latest version?"), pol=pol), pol.semantic_cache, False,
                       2000) == "excluded"


@pytest.mark.parametrize("text", [
    "What's the weather today?", "What is the latest release?", "What is the current price of gold?",
    "今天的汇率是多少？", "最新版本是多少？", "实时库存还有多少？", "My email is jane.doe@example.com, why no receipt?",
    "Call me at +1 415 555 0199", "身份证 11010519491231002X 怎么实名？",
])
def test_time_sensitive_and_personal_questions_are_excluded(text: str) -> None:
    assert excluded(text)


def test_ordinary_questions_are_not_excluded_and_tenant_patterns_add() -> None:
    assert not excluded("How do I reset my password?")
    assert not excluded("退货运费谁出？")
    assert excluded("What is our Q3 roadmap?", [r"\broadmap\b"])
