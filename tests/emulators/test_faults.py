"""Fault specs and controllers (the `x-emulator-fault` grammar)."""

from __future__ import annotations

import math

import pytest

from gateway_dev.emulators.faults import Fault, FaultController, Faults


def test_parse_the_header_grammar() -> None:
    assert Fault.parse("status=529") == Fault(status=529)
    assert Fault.parse("529") == Fault(status=529)
    assert Fault.parse("timeout").timeout == math.inf
    assert Fault.parse("timeout=5; slow_first_byte=2.0").timeout == 5.0
    f = Fault.parse("status=429,retry_after=3,message=Slow down")
    assert (f.status, f.retry_after, f.message) == (429, 3.0, "Slow down")
    assert Fault.parse("cut_stream_after=3").cut_stream_after == 3
    assert Fault.parse("stream-error-after=2").stream_error_after == 2
    assert Fault.parse(Fault(status=500, slow_first_byte=1.5).describe()) == Fault(status=500, slow_first_byte=1.5)
    with pytest.raises(ValueError):
        Fault.parse("explode=1")


def test_controller_queue_persistent_and_header_precedence() -> None:
    c = FaultController()
    c.inject("status=503", count=2)
    c.set_always("slow_first_byte=0.1")
    assert c.next_status == 503 and c.pending == 2
    assert c.take("status=400") == Fault(status=400)  # the request's own header wins and uses nothing up
    assert c.take(None) == Fault(status=503)
    assert c.take(None) == Fault(status=503)
    assert c.take(None) == Fault(slow_first_byte=0.1)
    c.next_status = 500
    assert c.take(None) == Fault(status=500)
    c.clear()
    assert c.take(None) is None


def test_faults_board() -> None:
    board = Faults(vllm_replicas=2)
    board["openai"].inject(429)
    board["vllm1"].inject("timeout")
    assert board.openai.pending == 1 and board.vllm[1].pending == 1
    board.clear_all()
    assert board.openai.pending == 0 and board.vllm[1].pending == 0
    with pytest.raises(KeyError):
        board["no-such-vendor"]


def test_a_bad_control_header_is_a_400_in_the_vendors_shape(emu) -> None:
    import httpx2

    r = httpx2.post(f"{emu.anthropic_base_url}/v1/messages", headers={
        "x-api-key": "k", "anthropic-version": "2023-06-01", "x-emulator-fault": "explode"},
        json={"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx2.post(f"{emu.openai_base_url}/chat/completions", headers={
        "authorization": "Bearer k", "x-emulator-output-tokens": "many"},
        json={"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 400 and "emulator control header" in r.json()["error"]["message"]
