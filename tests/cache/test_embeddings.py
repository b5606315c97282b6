"""The embeddings cache, per input string of a batch: official OpenAI SDK → the gateway → the
OpenAI emulator (its call counter and the inputs it received say what went upstream)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

from gateway.usage.query import records
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import LocalGateway

ADMIN = "adm-" + "e" * 20
KEYS = {"rag": "sk-rag-0001", "other": "sk-other-0001", "off": "sk-off-0001"}
TENANTS = {
    "rag": {"key": KEYS["rag"]},
    "other": {"key": KEYS["other"]},
    "off": {"key": KEYS["off"], "response_cache": {"routes": ["chat"]}},
}
MODEL = "text-embedding-3-small"


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet() as emulators:
        yield emulators


@pytest.fixture(scope="module")
def gw(emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalGateway]:
    with LocalGateway(emu, TENANTS, tmp_path_factory.mktemp("emb"), admin_key=ADMIN) as gateway:
        yield gateway


def _embed(gw: LocalGateway, tenant: str, inputs: str | list[str], **kw: Any) -> Any:
    client = gw.openai(KEYS[tenant])
    try:
        return client.embeddings.with_raw_response.create(model=MODEL, input=inputs, **kw)
    finally:
        client.close()


def _chunks(n: int) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"chunk {i} of document {tag}: caching gateways keep answers" for i in range(n)]


def _upstream_inputs(emu: EmulatorSet) -> list[Any]:
    return [r.body.get("input") for r in emu.requests("openai.embeddings")]


def test_a_repeated_batch_is_answered_from_the_cache_with_the_same_vectors(gw: LocalGateway, emu: EmulatorSet) -> None:
    batch = _chunks(4)
    first = _embed(gw, "rag", batch)
    assert first.headers["x-gateway-cache"] == "miss"
    assert first.headers["x-gateway-embeddings-cached"] == "0/4"
    calls = emu.calls("openai.embeddings")
    again = _embed(gw, "rag", batch)
    assert again.headers["x-gateway-cache"] == "response-hit"
    assert again.headers["x-gateway-embeddings-cached"] == "4/4"
    assert emu.calls("openai.embeddings") == calls  # no upstream call
    a, b = first.parse(), again.parse()
    assert [d.embedding for d in b.data] == [d.embedding for d in a.data]
    assert [d.index for d in b.data] == [0, 1, 2, 3] and b.model == a.model


def test_a_partly_stored_batch_sends_only_the_missing_inputs_and_keeps_the_order(
        gw: LocalGateway, emu: EmulatorSet) -> None:
    old = _chunks(3)
    stored = _embed(gw, "rag", old).parse()
    new = _chunks(2)
    mixed = [new[0], old[1], new[1], old[0]]
    before = len(_upstream_inputs(emu))
    raw = _embed(gw, "rag", mixed)
    assert raw.headers["x-gateway-cache"] == "miss" and raw.headers["x-gateway-embeddings-cached"] == "2/4"
    sent = _upstream_inputs(emu)[before:]
    assert sent == [new]  # one upstream call, with only the two new inputs
    got = raw.parse()
    assert got.data[1].embedding == stored.data[1].embedding and got.data[3].embedding == stored.data[0].embedding
    alone = _embed(gw, "other", [new[1]]).parse()  # another tenant: a miss of its own, same vector upstream
    assert got.data[2].embedding == pytest.approx(alone.data[0].embedding)
    assert [d.index for d in got.data] == [0, 1, 2, 3]


def test_a_single_string_input_and_float_vs_base64_are_separate_entries(gw: LocalGateway) -> None:
    text = _chunks(1)[0]
    assert _embed(gw, "rag", text).headers["x-gateway-cache"] == "miss"
    assert _embed(gw, "rag", text).headers["x-gateway-cache"] == "response-hit"
    floats = _embed(gw, "rag", text, encoding_format="float")
    assert floats.headers["x-gateway-cache"] == "miss"
    assert isinstance(floats.parse().data[0].embedding, list)
    assert _embed(gw, "rag", text, dimensions=256).headers["x-gateway-cache"] == "miss"
    assert len(_embed(gw, "rag", text, dimensions=256).parse().data[0].embedding) == 256


def test_tenants_never_share_embeddings_and_policy_routes_turn_it_off(gw: LocalGateway) -> None:
    batch = _chunks(2)
    _embed(gw, "rag", batch)
    assert _embed(gw, "other", batch).headers["x-gateway-cache"] == "miss"
    _embed(gw, "off", batch)
    assert _embed(gw, "off", batch).headers["x-gateway-cache"] == "bypass"


def test_no_cache_and_no_store(gw: LocalGateway) -> None:
    batch = _chunks(2)
    assert _embed(gw, "rag", batch, extra_headers={"Cache-Control": "no-store"}).headers["x-gateway-cache"] == "bypass"
    assert _embed(gw, "rag", batch).headers["x-gateway-cache"] == "miss"
    assert _embed(gw, "rag", batch, extra_headers={"Cache-Control": "no-cache"}) \
        .headers["x-gateway-embeddings-cached"] == "0/2"
    assert _embed(gw, "rag", batch).headers["x-gateway-cache"] == "response-hit"


def test_a_hit_records_the_tokens_it_saved_and_purge_removes_the_entries(gw: LocalGateway) -> None:
    batch = _chunks(3)
    miss = _embed(gw, "rag", batch)
    hit = _embed(gw, "rag", batch)
    wanted = {miss.headers["x-gateway-request-id"], hit.headers["x-gateway-request-id"]}
    found: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + 5
    while len(found) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
        found = {r["request_id"]: r for r in gw.call(records(gw.components.store, "rag", 50))
                 if r["request_id"] in wanted}
    m, h = found[miss.headers["x-gateway-request-id"]], found[hit.headers["x-gateway-request-id"]]
    assert m["gateway_cache"] == "miss" and m["input_tokens"] > 0 and m["cost_usd"] > 0
    assert h["gateway_cache"] == "response-hit" and h["cost_usd"] == 0
    assert h["input_tokens"] == pytest.approx(m["input_tokens"], abs=2)
    assert h["saved_usd"] == pytest.approx(m["cost_usd"], rel=0.1)
    with httpx2.Client(base_url=gw.url, headers={"authorization": f"Bearer {ADMIN}"}) as admin:
        removed = admin.post("/admin/cache/purge", json={"tenant": "rag", "layer": "response"}).json()
    assert removed["removed"]["response"] >= 3
    assert _embed(gw, "rag", batch).headers["x-gateway-cache"] == "miss"


def test_token_array_inputs_are_forwarded_uncached(gw: LocalGateway) -> None:
    tokens = [[1000, 2000, 3000 + int(uuid.uuid4().int % 1000)]]
    first = _embed(gw, "rag", tokens)  # type: ignore[arg-type]
    assert first.headers["x-gateway-cache"] == "bypass"
    assert _embed(gw, "rag", tokens).headers["x-gateway-cache"] == "bypass"  # type: ignore[arg-type]


def test_the_sdk_errors_stay_the_vendors(gw: LocalGateway) -> None:
    with pytest.raises(openai.BadRequestError):
        _embed(gw, "rag", _chunks(1), dimensions=100_000)
