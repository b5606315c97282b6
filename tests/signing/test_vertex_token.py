"""VertexTokenProvider against the Vertex emulator's OAuth endpoint: a service-account key file (fresh RSA key)
mints the token, refreshes run in a worker thread ahead of expiry, requests never see an expired token, a failing
token endpoint leaves the current token in use until it expires."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import google.auth.transport.requests
import pytest
from google.auth import exceptions as auth_errors

from gateway.signing.vertex_token import VertexTokenProvider
from gateway_dev.emulators import EmulatorSet
from gateway_dev.emulators.vertex_auth import make_service_account

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        yield e


@pytest.fixture
def account(emu: EmulatorSet) -> Iterator[tuple[dict[str, Any], str]]:
    info, public = make_service_account("gw-project", f"{emu.platform_url}/token")
    emu.platforms.vertex.register_service_account(info, public)
    emu.platforms.vertex.auth.clear()
    yield info, public
    emu.platforms.vertex.auth.expires_in = 3599


async def test_start_mints_once_and_serves_the_cached_token(emu: EmulatorSet, account: Any, tmp_path: Path) -> None:
    info, _ = account
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    threads: list[int] = []

    def request() -> google.auth.transport.requests.Request:
        threads.append(threading.get_ident())
        return google.auth.transport.requests.Request()

    provider = VertexTokenProvider.from_service_account_file(str(path), request_factory=request)
    try:
        await provider.start()
        tokens = {await provider.token() for _ in range(20)}
        assert len(tokens) == 1 and provider.refreshes == 1
        assert emu.platforms.vertex.auth.minted == [info["client_email"]]
        assert emu.platforms.vertex.auth.check(tokens.pop()) is not None
        assert threads and threading.get_ident() not in threads  # the token request ran off the event loop
        assert 3000 < provider.seconds_left() <= 3599
    finally:
        await provider.close()


async def test_short_lived_tokens_are_refreshed_before_they_expire(emu: EmulatorSet, account: Any) -> None:
    info, _ = account
    emu.platforms.vertex.auth.expires_in = 2  # refreshed in the background after ~1 s (half the lifetime)
    provider = VertexTokenProvider.from_service_account_info(info)
    try:
        await provider.start()
        seen: list[str] = []
        for _ in range(18):  # 3.6 s of traffic: each token is valid at the emulator when used
            token = await provider.token()
            assert emu.platforms.vertex.auth.check(token) is not None
            seen.append(token)
            await asyncio.sleep(0.2)
        assert len(set(seen)) >= 3 and provider.refreshes >= 3
    finally:
        await provider.close()


async def test_a_failing_endpoint_keeps_the_current_token_until_it_expires(emu: EmulatorSet, account: Any) -> None:
    info, public = account
    emu.platforms.vertex.auth.expires_in = 2
    provider = VertexTokenProvider.from_service_account_info(info, retry_s=0.2, max_retry_s=0.2)
    try:
        await provider.start()
        first = await provider.token()
        del emu.platforms.vertex.auth.accounts[info["client_email"]]  # every refresh now fails
        await asyncio.sleep(1.3)
        assert await provider.token() == first  # past the refresh point, still served
        await asyncio.sleep(1.0)
        with pytest.raises(auth_errors.RefreshError):
            await provider.token()
        emu.platforms.vertex.register_service_account(info, public)
        assert emu.platforms.vertex.auth.check(await provider.token()) is not None
    finally:
        await provider.close()


async def test_without_start_the_first_call_waits_and_later_calls_refresh_ahead(emu: EmulatorSet,
                                                                                account: Any) -> None:
    info, _ = account
    emu.platforms.vertex.auth.expires_in = 2
    provider = VertexTokenProvider.from_service_account_info(info)
    try:
        first = await asyncio.gather(*(provider.token() for _ in range(5)))
        assert len(set(first)) == 1 and len(emu.platforms.vertex.auth.minted) == 1  # one shared refresh
        await asyncio.sleep(1.2)
        assert await provider.token() == first[0]  # returned at once; a refresh started behind it
        await asyncio.sleep(0.5)
        assert provider.refreshes == 2 and await provider.token() != first[0]
    finally:
        await provider.close()
