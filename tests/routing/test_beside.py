"""The work the layers do only for a response's headers and record runs beside the upstream call, not
before it: the prefix-break check of a request routed to a vLLM replica (its store read and its
classification) starts once the request is on its way, and the response's `x-gateway-prefix-break` header
and the usage record still carry its verdict. A check that fails is a stage failure, never the request's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest

from gateway.provider_cache.breaks import BreakStore
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.emulators.vllm_app import VLLMConfig
from gateway_dev.localrun import LocalGateway

from .conftest import MODEL

KEY = "key-beside"
SYSTEM = " ".join(f"Rule {i}: be brief about topic {i}." for i in range(200))


def chat(gw: LocalGateway, system: str, question: str, stream: bool = False) -> httpx2.Response:
    body: dict[str, Any] = {"model": f"vllm/{MODEL}", "max_tokens": 8, "stream": stream,
                            "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}]}
    r = httpx2.post(gw.url + "/v1/chat/completions", json=body, timeout=30,
                    headers={"authorization": f"Bearer {KEY}", "x-gateway-session": "conv-1"})
    assert r.status_code == 200, r.text
    return r


@pytest.fixture
def stack(tmp_path: Path) -> Any:
    # The tenant's default layers, the response cache off so that every request goes upstream.
    with EmulatorSet(vllm_configs=[VLLMConfig(served_model_names=[MODEL])]) as emu, \
            LocalGateway(emu, {"acme": {"key": KEY, "response_cache": {"enabled": False}}}, tmp_path) as gw:
        yield emu, gw


def test_the_prefix_check_runs_beside_the_upstream_call(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    emu, gw = stack
    at_check: list[int] = []
    original = BreakStore.find

    async def slow_find(self: BreakStore, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.3)  # a slow store: the send must not wait for it
        at_check.append(emu.calls("vllm0.chat"))  # requests the replica had received by the time it answered
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(BreakStore, "find", slow_find)
    chat(gw, SYSTEM, "First question?")
    edited = SYSTEM.replace("Rule 150:", "Rule 150 (revised):")
    r = chat(gw, edited, "Second question?", stream=True)
    assert "data: [DONE]" in r.text
    # Each request was at the replica while its check still waited on the store (before: 0, then 1).
    assert at_check == [1, 2]
    # The headers went out only once the check was done: the second request's break is in them.
    assert "system" in r.headers.get("x-gateway-prefix-break", "")
    gw.wait_idle()


def test_a_failing_check_is_the_stage_failing_not_the_request(stack: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.metrics import STAGE_ERRORS

    emu, gw = stack

    async def broken(self: BreakStore, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("store bug")

    monkeypatch.setattr(BreakStore, "find", broken)
    before = STAGE_ERRORS.labels("prefix_explain", "before")._value.get()
    r = chat(gw, SYSTEM, "A question?", stream=True)
    assert "data: [DONE]" in r.text and "x-gateway-prefix-break" not in r.headers
    gw.wait_idle()
    assert STAGE_ERRORS.labels("prefix_explain", "before")._value.get() == before + 1  # counted once
    assert emu.calls("vllm0.chat") == 1
