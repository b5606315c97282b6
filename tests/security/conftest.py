"""The security suite's gateway: one per module (emulators + two tenants + an admin key), plus helpers
that tell the gateway's own 5xx from an upstream's 5xx relayed by it, and check vendor error shapes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import LocalGateway

ADMIN = "admin-security-key"
KEYS = {"alpha": "key-security-alpha", "beta": "key-security-beta"}
TENANTS = {name: {"key": key} for name, key in KEYS.items()}
MAX_BODY = 64 * 1024  # a small body limit makes the 413 probes cheap


class Probe:
    """A running gateway on emulators, and a plain HTTP client for both."""

    def __init__(self, emu: EmulatorSet, gw: LocalGateway) -> None:
        self.emu, self.gw = emu, gw
        self.http = httpx2.Client(base_url=gw.url, timeout=30.0)
        self.direct = httpx2.Client(base_url=emu.vendor_url, timeout=30.0)

    def post(self, path: str, body: Any = None, *, key: str | None = KEYS["alpha"], raw: bytes | None = None,
             headers: dict[str, str] | None = None, params: dict[str, str] | None = None) -> httpx2.Response:
        h = {"content-type": "application/json", **(headers or {})}
        if key is not None:
            h.setdefault("authorization", f"Bearer {key}")
        if raw is None:
            import orjson

            raw = orjson.dumps(body)
        return self.http.post(path, content=raw, headers=h, params=params)

    def gateway_5xx(self, status: int, path: str, raw: bytes) -> bool:
        """True when a 5xx came from the gateway itself: the emulator, asked the same directly,
        does not fail (an upstream's own 5xx relayed by the gateway is not the gateway's)."""
        if status < 500:
            return False
        try:
            direct = self.direct.post(path, content=raw, headers={"content-type": "application/json",
                                                                   "authorization": "Bearer sk-direct",
                                                                   "x-api-key": "sk-direct",
                                                                   "x-goog-api-key": "direct",
                                                                   "anthropic-version": "2023-06-01"})
        except httpx2.TransportError:  # the emulator itself broke the connection: the upstream failed
            return False
        return direct.status_code < 500

    def close(self) -> None:
        self.http.close()
        self.direct.close()


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    with EmulatorSet() as emu:
        gw = LocalGateway(emu, TENANTS, tmp_path_factory.mktemp("security"), admin_key=ADMIN,
                          max_body_bytes=MAX_BODY).start()
        p = Probe(emu, gw)
        try:
            yield p
        finally:
            p.close()
            gw.stop()


def vendor_of(path: str) -> str:
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith(("/v1beta/", "/v1/models/")) or ":" in path:
        return "gemini"
    return "openai"


def assert_error_shape(vendor: str, resp: httpx2.Response) -> None:
    """The error body the vendor's own SDK parses (gateway/errors.py documents the three shapes)."""
    data = resp.json()
    assert isinstance(data, dict), data
    if vendor == "anthropic":
        assert data.get("type") == "error", data
        assert isinstance(data["error"]["type"], str) and isinstance(data["error"]["message"], str), data
    elif vendor == "gemini":
        err = data["error"]
        assert isinstance(err["code"], int) and isinstance(err["message"], str) and isinstance(err["status"], str), data
    else:
        err = data["error"]
        assert isinstance(err["message"], str), data
        assert "type" in err, data
    assert "Traceback" not in resp.text
