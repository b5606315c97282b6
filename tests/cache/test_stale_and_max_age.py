"""Per-request TTL (`Cache-Control: max-age`, `s-maxage`) and stale-if-error, through the official
SDKs → the gateway → the vendor emulators (faults injected there)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from gateway.usage.query import records
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import LocalGateway

KEYS = {"stale": "sk-stale-0001", "strict": "sk-strict-0001", "per-user": "sk-peruser-0001"}
TENANTS = {
    # fresh 1 s, then served for an hour more when the vendor fails
    "stale": {"key": KEYS["stale"], "response_cache": {"ttl": "1s", "stale_if_error": "1h"}},
    "strict": {"key": KEYS["strict"], "response_cache": {"ttl": "1s"}},
    "per-user": {"key": KEYS["per-user"], "response_cache": {"ttl": "1h", "scope": "user"}},
}


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet() as emulators:
        yield emulators


@pytest.fixture(scope="module")
def gw(emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalGateway]:
    with LocalGateway(emu, TENANTS, tmp_path_factory.mktemp("stale")) as gateway:
        yield gateway


def _chat(gw: LocalGateway, tenant: str, prompt: str, headers: dict[str, str] | None = None) -> Any:
    client = gw.openai(KEYS[tenant])
    try:
        return client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], extra_headers=headers or {})
    finally:
        client.close()


def _record(gw: LocalGateway, tenant: str, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        gw.wait_idle()
        for rec in gw.call(records(gw.components.store, tenant, 50)):
            if rec["request_id"] == request_id:
                return rec
        time.sleep(0.1)
    raise AssertionError(f"no usage record for {request_id}")


def _prompt() -> str:
    return f"What does a caching gateway do? {uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("fault", ["503", "429", "500"])
def test_an_expired_answer_stands_in_when_the_vendor_fails(gw: LocalGateway, emu: EmulatorSet, fault: str) -> None:
    prompt = _prompt()
    first = _chat(gw, "stale", prompt)
    assert first.headers["x-gateway-cache"] == "miss"
    time.sleep(1.3)  # past the 1 s ttl: the entry is expired, kept for the stale window
    emu.faults.openai.inject(fault)
    stale = _chat(gw, "stale", prompt)
    assert stale.headers["x-gateway-cache"] == "response-hit"
    assert stale.headers["x-gateway-stale"] == "stale-if-error"
    assert int(stale.headers["age"]) >= 1
    assert stale.parse().choices[0].message.content == first.parse().choices[0].message.content
    rec = _record(gw, "stale", stale.headers["x-gateway-request-id"])
    assert rec["gateway_cache"] == "response-hit"
    assert rec["stale"]["reason"] == "stale-if-error" and rec["stale"]["age_s"] >= 1
    # The vendor is back: the expired entry is not served any more, a fresh answer is.
    fresh = _chat(gw, "stale", prompt)
    assert fresh.headers["x-gateway-cache"] == "miss" and "x-gateway-stale" not in fresh.headers


def test_without_a_stale_window_the_vendor_error_reaches_the_caller(gw: LocalGateway, emu: EmulatorSet) -> None:
    prompt = _prompt()
    _chat(gw, "strict", prompt)
    time.sleep(1.3)
    emu.faults.openai.inject(503)
    with pytest.raises(openai.InternalServerError):
        _chat(gw, "strict", prompt)


def test_a_fresh_entry_is_not_marked_stale_and_errors_are_not_masked_before_expiry(
        gw: LocalGateway, emu: EmulatorSet) -> None:
    prompt = _prompt()
    _chat(gw, "stale", prompt)
    hit = _chat(gw, "stale", prompt)
    assert hit.headers["x-gateway-cache"] == "response-hit" and "x-gateway-stale" not in hit.headers
    # a prompt never answered before has no entry to fall back on
    emu.faults.openai.inject(503)
    with pytest.raises(openai.InternalServerError):
        _chat(gw, "stale", _prompt())


def test_stale_if_error_directive_narrows_the_window(gw: LocalGateway, emu: EmulatorSet) -> None:
    prompt = _prompt()
    _chat(gw, "stale", prompt)
    time.sleep(1.3)
    emu.faults.openai.inject(503)
    with pytest.raises(openai.InternalServerError):  # 0.3 s past freshness > the caller's 0 s
        _chat(gw, "stale", prompt, {"Cache-Control": "stale-if-error=0"})


def test_stale_if_error_through_the_anthropic_sdk(gw: LocalGateway, emu: EmulatorSet) -> None:
    client = gw.anthropic(KEYS["stale"])
    prompt = _prompt()
    try:
        first = client.messages.create(model="claude-sonnet-4-5", max_tokens=64,
                                       messages=[{"role": "user", "content": prompt}])
        time.sleep(1.3)
        emu.faults.anthropic.inject(529)
        raw = client.messages.with_raw_response.create(model="claude-sonnet-4-5", max_tokens=64,
                                                       messages=[{"role": "user", "content": prompt}])
    finally:
        client.close()
    assert raw.headers["x-gateway-stale"] == "stale-if-error"
    assert raw.parse().content[0].text == first.content[0].text


def test_max_age_refuses_older_entries(gw: LocalGateway) -> None:
    prompt = _prompt()
    _chat(gw, "per-user", prompt, {"x-gateway-user": "u1"})
    assert _chat(gw, "per-user", prompt, {"x-gateway-user": "u1"}).headers["x-gateway-cache"] == "response-hit"
    time.sleep(1.1)
    old = _chat(gw, "per-user", prompt, {"x-gateway-user": "u1", "Cache-Control": "max-age=1"})
    assert old.headers["x-gateway-cache"] == "miss"  # the entry is older than the caller accepts
    assert _chat(gw, "per-user", prompt, {"x-gateway-user": "u1", "Cache-Control": "max-age=60"}) \
        .headers["x-gateway-cache"] == "response-hit"


def test_max_age_sets_the_stored_entrys_ttl(gw: LocalGateway) -> None:
    prompt = _prompt()
    headers = {"x-gateway-user": "u2", "Cache-Control": "max-age=1"}
    assert _chat(gw, "per-user", prompt, headers).headers["x-gateway-cache"] == "miss"
    assert _chat(gw, "per-user", prompt, {"x-gateway-user": "u2"}).headers["x-gateway-cache"] == "response-hit"
    time.sleep(1.3)  # the policy's ttl is 1 h; this entry was stored for 1 s
    assert _chat(gw, "per-user", prompt, {"x-gateway-user": "u2"}).headers["x-gateway-cache"] == "miss"


def test_s_maxage_governs_shared_entries_and_max_age_per_user_ones(gw: LocalGateway, tmp_path: Path) -> None:
    prompt = _prompt()
    # per-user scope: s-maxage is for shared entries only, max-age applies
    headers = {"x-gateway-user": "u3", "Cache-Control": "s-maxage=1, max-age=3600"}
    _chat(gw, "per-user", prompt, headers)
    time.sleep(1.2)
    assert _chat(gw, "per-user", prompt, headers).headers["x-gateway-cache"] == "response-hit"
    # tenant scope: s-maxage wins over max-age
    shared = _prompt()
    _chat(gw, "stale", shared)
    both = {"Cache-Control": "max-age=0, s-maxage=3600"}
    assert _chat(gw, "stale", shared, both).headers["x-gateway-cache"] == "response-hit"
    assert _chat(gw, "stale", shared, {"Cache-Control": "s-maxage=0"}).headers["x-gateway-cache"] == "miss"


def test_a_malformed_max_age_is_a_400_in_the_callers_shape(gw: LocalGateway) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        _chat(gw, "stale", _prompt(), {"Cache-Control": "max-age=soon"})
    assert "max-age" in str(err.value)
    client = gw.anthropic(KEYS["stale"])
    try:
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(model="claude-sonnet-4-5", max_tokens=16,
                                   extra_headers={"Cache-Control": "max-age=-1"},
                                   messages=[{"role": "user", "content": "hi"}])
    finally:
        client.close()


def test_a_vendor_timeout_is_answered_from_the_expired_entry(emu: EmulatorSet, tmp_path: Path) -> None:
    """The gateway's own 504 (no answer within read_timeout) counts as the vendor failing."""
    with LocalGateway(emu, TENANTS, tmp_path, read_timeout=1.0) as gw:
        prompt = _prompt()
        first = _chat(gw, "stale", prompt)
        time.sleep(1.3)
        emu.faults.openai.inject("timeout=5")
        stale = _chat(gw, "stale", prompt)
        assert stale.headers["x-gateway-stale"] == "stale-if-error"
        assert stale.parse().choices[0].message.content == first.parse().choices[0].message.content
        assert _record(gw, "stale", stale.headers["x-gateway-request-id"])["stale"]["upstream_status"] == 504
