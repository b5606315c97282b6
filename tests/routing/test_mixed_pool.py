"""A pool mixing emulated vLLM and SGLang replicas, through the gateway with the openai SDK: both engines are
scraped (each under its own metric names), append-only sessions stick to one replica and hit its cache on
either engine, a dead SGLang replica's session fails over, and every usage record carries the engine and the
cached-token figure that engine reported."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from gateway.app import create_app
from gateway.assembly import build_components
from gateway.config import Settings
from gateway.routing import Router, RouteStage
from gateway.stores import open_store
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.emulators.vllm_app import VLLMConfig
from gateway_dev.localrun import UvicornThread, write_policies

from .conftest import MODEL

KEY = "key-acme"
ADMIN = "admin-key"
ENGINES = ["vllm", "vllm", "sglang", "sglang"]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[EmulatorSet, Router, openai.OpenAI, str]]:
    configs = [VLLMConfig(served_model_names=[MODEL], engine=e, enable_cache_report=True, kv_capacity_blocks=2048)
               for e in ENGINES]
    with EmulatorSet(vllm_configs=configs) as emu:
        write_policies(tmp_path / "policies", {"acme": {"key": KEY}})
        settings = Settings.load(env={"GATEWAY_ADMIN_KEY": ADMIN}, policies=tmp_path / "policies",
                                 data_dir=tmp_path / "data", vllm_endpoints=emu.vllm_urls,
                                 routing={"health_interval": 0.2, "metrics_interval": 0.2,
                                          "params": {"eject_base_s": 0.2}})
        parts = build_components(settings, store=open_store(settings))  # every layer, usage included
        route = parts.pipeline.stage("route")
        assert isinstance(route, RouteStage)
        router = route.router
        server = UvicornThread(create_app(settings, parts)).start()
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
        try:
            yield emu, router, client, server.url
        finally:
            client.close()
            server.stop()


def _turns(client: openai.OpenAI, session: int, turns: int) -> list[Any]:
    messages = [{"role": "system", "content": f"Agent {session}. " + " ".join(f"s{session}r{i}" for i in range(250))},
                {"role": "user", "content": f"Task {session}: start."}]
    out = []
    for t in range(turns):
        answer = client.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type]
        out.append(answer)
        messages += [{"role": "assistant", "content": answer.choices[0].message.content or ""},
                     {"role": "user", "content": f"Tool result {t}: " + " ".join(f"t{t}x{i}" for i in range(60))}]
    return out


def _records(url: str, n: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:  # records are flushed asynchronously
        got = httpx2.get(f"{url}/admin/usage/records", params={"tenant": "acme", "limit": n},
                         headers={"authorization": f"Bearer {ADMIN}"}).json()
        assert isinstance(got, list), got
        items = got
        if len(items) >= n or time.monotonic() > deadline:
            return items
        time.sleep(0.1)


def test_mixed_pool_scrapes_sticks_and_records_each_engines_cache(
        stack: tuple[EmulatorSet, Router, openai.OpenAI, str]) -> None:
    emu, router, client, url = stack
    sessions = [_turns(client, s, 6) for s in range(8)]
    engines_of = {u[7:]: e for u, e in zip(emu.vllm_urls, ENGINES, strict=True)}
    # Scraping: each replica read under its own engine's names, KV capacity learned from either.
    for name, replica in router.pool.replicas.items():
        assert replica.engine == engines_of[name]
        assert replica.stats is not None and replica.stats.kv_tokens == 2048 * 16
    served = [emu.calls(f"vllm{i}.chat") + emu.calls(f"sglang{i}.chat") for i in range(4)]
    assert sum(served) == 48 and min(served) > 0  # both engines took sessions
    # The sessions ran one after another, so their records, oldest first, come in blocks of 6.
    records = sorted(_records(url, 48), key=lambda r: r["ts"])
    assert len(records) == 48
    sticky = 0
    for s, answers in enumerate(sessions):
        block = records[6 * s: 6 * s + 6]
        home = block[0]["replica"]
        sticky += sum(r["replica"] == home for r in block[1:])
        cached = [a.usage.prompt_tokens_details.cached_tokens for a in answers]
        assert all(c > 0 for c in cached[1:]), cached  # the session's replica had it cached, on either engine
        # The record carries what that engine reported for the same request.
        assert [r["cached_input_tokens"] for r in block] == cached
    assert sticky / (8 * 5) >= 0.95
    for rec in records:
        assert rec["details"]["engine"] == engines_of[rec["replica"]]
    assert {rec["details"]["engine"] for rec in records} == {"vllm", "sglang"}
    # SGLang caches token by token, vLLM in full 16-token blocks.
    by_engine = {e: [r["cached_input_tokens"] for r in records if r["details"]["engine"] == e and
                     r["cached_input_tokens"]] for e in ("vllm", "sglang")}
    assert all(c % 16 == 0 for c in by_engine["vllm"]) and any(c % 16 for c in by_engine["sglang"])


def test_dead_sglang_replica_fails_over_without_an_error(
        stack: tuple[EmulatorSet, Router, openai.OpenAI, str]) -> None:
    emu, router, client, _ = stack
    _turns(client, 0, 2)
    home = max(range(4), key=lambda i: emu.calls(f"vllm{i}.chat") + emu.calls(f"sglang{i}.chat"))
    target = next(i for i, e in enumerate(ENGINES) if e == "sglang" and i != home) if ENGINES[home] != "sglang" \
        else home
    # Put the next session on an SGLang replica: the others are ejected for the moment.
    others = [r for name, r in router.pool.replicas.items() if name != emu.vllm_urls[target][7:]]
    for replica in others:
        replica.ejected, replica.ejected_until = True, float("inf")
    first = _turns(client, 1, 1)[0]
    assert emu.calls(f"sglang{target}.chat") >= 1 and first.choices[0].message.content
    for replica in others:
        replica.ejected, replica.ejected_until = False, 0.0
    emu.stop_vllm(target)
    again = client.chat.completions.create(model=MODEL, messages=[  # type: ignore[arg-type]
        {"role": "system", "content": "Agent 1. " + " ".join(f"s1r{i}" for i in range(250))},
        {"role": "user", "content": "Task 1: start over."}])
    assert again.choices[0].message.content
    assert not router.pool.replicas[emu.vllm_urls[target][7:]].available
