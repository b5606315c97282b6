"""The exact cache's fast key: a repeated body's key from its bytes, never different from the slow one."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.cache import key as keys
from gateway.cache.key import cache_key, keep_fast_key

from ._helpers import make_ctx
from .test_key import BASES, CASES, CHANGES


def _both(protocol: str, body: dict[str, Any], user_scope: bool = False, **kw: Any) -> tuple[str, str, str]:
    slow = cache_key(make_ctx(body, protocol=protocol, **kw), user_scope=user_scope)
    ctx = make_ctx(body, protocol=protocol, **kw)
    ctx.raw_body = orjson.dumps(body)
    first = cache_key(ctx, user_scope=user_scope)
    keep_fast_key(ctx, user_scope, first)  # as the stage does when the key found an entry
    again = make_ctx(body, protocol=protocol, **kw)
    again.raw_body = ctx.raw_body
    return slow, first, cache_key(again, user_scope=user_scope)


@pytest.mark.parametrize(("protocol", "change"), CASES)
def test_fast_key_is_the_slow_key(protocol: str, change: str) -> None:
    body = orjson.loads(orjson.dumps(BASES[protocol]))
    CHANGES[protocol][change](body)
    slow, first, again = _both(protocol, body)
    assert slow == first == again


def test_same_bytes_other_identity_other_key() -> None:
    body = BASES["openai_chat"]
    acme = _both("openai_chat", body, tenant="acme")
    globex = _both("openai_chat", body, tenant="globex")
    assert acme[2] != globex[2] and globex[0] == globex[2]
    u1 = _both("openai_chat", body, user="u1", user_scope=True)
    u2 = _both("openai_chat", body, user="u2", user_scope=True)
    assert u1[2] != u2[2] and u1[0] == u1[2] and u2[0] == u2[2]
    beta = _both("openai_chat", body, headers={"openai-beta": "assistants=v2"})
    assert beta[2] != acme[2] and beta[0] == beta[2]


def test_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "_fast", {})
    monkeypatch.setattr(keys, "_fast_bytes", 0)
    monkeypatch.setattr(keys, "FAST_KEYS", 8)
    for i in range(50):
        body = {**BASES["openai_chat"], "temperature": i}
        slow, fast, again = _both("openai_chat", body)
        assert slow == fast == again
    assert len(keys._fast) <= 8
    assert keys._fast_bytes == sum(len(a) + len(b) for a, b in keys._fast)
    big = {**BASES["openai_chat"], "messages": [{"role": "user", "content": "x" * (keys.FAST_KEY_MAX_BODY + 1)}]}
    before = dict(keys._fast)
    _both("openai_chat", big)
    assert keys._fast == before  # too large to keep


def test_only_a_key_that_found_an_entry_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "_fast", {})
    body = {**BASES["openai_chat"], "temperature": 0.25}
    ctx = make_ctx(body)
    ctx.raw_body = orjson.dumps(body)
    digest = cache_key(ctx, user_scope=False)
    assert not keys._fast  # a miss leaves nothing behind
    keep_fast_key(ctx, False, digest)
    assert list(keys._fast.values()) == [digest]
