"""Shared adapter helpers."""

from __future__ import annotations

from gateway.protocols.common import error_message, stable_json, with_prefix, without_cache_control


def test_stable_json_sorts_keys() -> None:
    assert stable_json({"b": 1, "a": {"d": 2, "c": "é"}}) == '{"a":{"c":"é","d":2},"b":1}'


def test_without_cache_control_is_deep_and_does_not_mutate() -> None:
    block = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"},
             "content": [{"type": "text", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}
    assert without_cache_control(block) == {"type": "text", "text": "x", "content": [{"type": "text"}]}
    assert "cache_control" in block


def test_with_prefix() -> None:
    assert with_prefix("msg_", "abc") == "msg_abc" and with_prefix("msg_", "msg_abc") == "msg_abc"


def test_error_message_shapes() -> None:
    assert error_message(b'[{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}]') == (
        "bad", "INVALID_ARGUMENT")
    assert error_message(b"", 502) == ("upstream error (HTTP 502)", None)
    assert error_message(b'"oops"') == ("oops", None)
