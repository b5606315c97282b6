"""Through the gateway with the official openai SDK: the route stage wired the way the app must wire it
(`RouteStage` in the pipeline, the router as the relay's failover hook, the pool answering `serves`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from gateway.app import create_app
from gateway.assembly import build_components
from gateway.config import Settings
from gateway.routing import ReplicaPool, Router, RouteStage
from gateway.stores import open_store
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.emulators.vllm_app import VLLMConfig
from gateway_dev.localrun import UvicornThread, write_policies

from .conftest import MODEL

KEY = "key-acme"


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[EmulatorSet, Any, openai.OpenAI]]:
    with EmulatorSet(vllm_configs=[VLLMConfig(served_model_names=[MODEL]) for _ in range(3)]) as emu:
        write_policies(tmp_path / "policies", {"acme": {"key": KEY}})
        settings = Settings.load(env={}, policies=tmp_path / "policies", data_dir=tmp_path / "data",
                                 vllm_endpoints=emu.vllm_urls,
                                 routing={"health_interval": 0.2, "metrics_interval": 0.2,
                                          "params": {"eject_base_s": 0.2}})
        # Only the route stage: build_components wires it to the pool and to failover, as the app does.
        store = open_store(settings)
        router = Router(ReplicaPool.from_settings(settings), settings.routing, store)
        parts = build_components(settings, store=store, stages=[RouteStage(router)])
        server = UvicornThread(create_app(settings, parts)).start()
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
        try:
            yield emu, router, client
        finally:
            client.close()
            server.stop()


def calls(emu: EmulatorSet) -> list[int]:
    return [emu.calls(f"vllm{i}.chat") for i in range(3)]


def test_sdk_conversation_sticks_fails_over_and_moves(stack: tuple[EmulatorSet, Any, openai.OpenAI]) -> None:
    emu, router, client = stack
    messages: list[dict[str, str]] = [
        {"role": "system", "content": " ".join(f"rule{i}" for i in range(300))},
        {"role": "user", "content": "Plan the migration."},
    ]
    cached = []
    for turn in range(4):
        stream = turn == 2
        if stream:
            chunks = list(client.chat.completions.create(
                model=f"vllm/{MODEL}", messages=messages, stream=True, stream_options={"include_usage": True},
                extra_headers={"x-gateway-session": "s-1"}))
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            usage = chunks[-1].usage
        else:
            answer = client.chat.completions.create(model=MODEL, messages=messages,
                                                    extra_headers={"x-gateway-session": "s-1"})
            text, usage = answer.choices[0].message.content or "", answer.usage
        assert usage is not None and text
        cached.append(usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0)
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": f"Next step {turn}?"}]
    served = calls(emu)
    assert sorted(served) == [0, 0, 4]  # one replica took every turn ...
    assert all(c > 0 for c in cached[1:])  # ... and had the conversation cached
    home = served.index(4)

    emu.stop_vllm(home)  # the session's replica dies
    answer = client.chat.completions.create(model=MODEL, messages=messages,
                                            extra_headers={"x-gateway-session": "s-1"})
    assert answer.choices[0].message.content  # retried on another replica before any byte reached us
    assert not router.pool.replicas[emu.vllm_urls[home][7:]].available
    messages += [{"role": "assistant", "content": answer.choices[0].message.content},
                 {"role": "user", "content": "And then?"}]
    again = client.chat.completions.create(model=MODEL, messages=messages,
                                           extra_headers={"x-gateway-session": "s-1"})
    assert again.usage is not None and again.usage.prompt_tokens_details is not None
    assert again.usage.prompt_tokens_details.cached_tokens > 0  # its new home keeps it
    after = calls(emu)
    assert after[home] == 4 and sum(after) == 6 and max(after) == 4


def test_no_replica_left_is_a_clean_openai_error(stack: tuple[EmulatorSet, Any, openai.OpenAI]) -> None:
    emu, _, client = stack
    for i in range(3):
        emu.stop_vllm(i)
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code in (502, 503)
    assert isinstance(err.value.body, dict) and "message" in err.value.body


def test_stream_whose_replica_dies_before_its_first_byte_is_retried(
        stack: tuple[EmulatorSet, Any, openai.OpenAI]) -> None:
    """A replica that crashes while it prefills has sent the stream's headers but no byte of its body: the
    gateway holds the client's stream until the first body bytes, so the request moves to another replica
    and the client sees one whole answer (a stream cut after bytes reached the client cannot be retried)."""
    emu, router, client = stack
    emu.state.latency = emu.latency.set(base_s=1.5)  # a long prefill on every replica
    killed: list[int] = []

    def kill_the_busy_one() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not killed:
            busy = [i for i, n in enumerate(calls(emu)) if n]
            if busy:
                time.sleep(0.3)  # well inside its 1.5 s prefill
                emu.stop_vllm(busy[0])  # abrupt: the open connection is reset
                killed.append(busy[0])
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_busy_one)
    killer.start()
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Summarise the incident."}], stream=True))
    killer.join()
    assert killed, "no replica was busy"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    served = calls(emu)
    assert served[killed[0]] == 1 and sum(served) == 2  # the dead replica's try, then one other's answer
    # The gateway closes the request's in-flight count after its last byte is written, so the client can
    # hold the whole answer a moment before the count drops: wait for it, briefly, rather than race it.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not settled(router):
        time.sleep(0.02)
    assert settled(router), [(r.name, r.inflight, r.pending_bytes) for r in router.pool.replicas.values()]


def settled(router: Any) -> bool:
    return all(r.pending_bytes == 0 and r.inflight == 0 for r in router.pool.replicas.values())
