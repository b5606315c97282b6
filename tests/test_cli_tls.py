"""`serve --ssl-certfile/--ssl-keyfile`: the gateway answers over HTTPS with the given certificate (what boto3
needs to send a Bedrock API key), refuses half a configuration, and plain HTTP is not served on that port."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from gateway.cli import tls_options
from gateway_dev.localrun import free_port
from gateway_dev.tls import self_signed

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[1]


def test_serve_speaks_https_with_the_given_certificate(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    port = free_port()
    env = {**os.environ, "GATEWAY_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--port", str(port), "--policies",
                             str(ROOT / "policies"), "--ssl-certfile", str(cert), "--ssl-keyfile", str(key)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                r = httpx2.get(f"https://127.0.0.1:{port}/healthz", verify=str(cert), timeout=2)
                break
            except httpx2.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the gateway did not start"
                time.sleep(0.3)
        assert r.status_code == 200
        with pytest.raises(httpx2.TransportError):  # not trusted without the certificate
            httpx2.get(f"https://127.0.0.1:{port}/healthz", timeout=2)
        try:  # the port speaks TLS only
            plain_status: int | None = httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code
        except httpx2.TransportError:
            plain_status = None
        assert plain_status != 200
        # A client idle in its keep-alive pool reads nothing, so it never answers the server's close_notify:
        # the shutdown does not wait for that answer (it held SIGTERM for the whole 30 s grace period).
        idle = httpx2.Client(verify=str(cert))
        assert idle.get(f"https://127.0.0.1:{port}/healthz").status_code == 200
        started = time.monotonic()
        proc.terminate()
        assert proc.wait(30) is not None
        assert time.monotonic() - started < 10, "the shutdown waited on an idle TLS keep-alive connection"
        idle.close()
    finally:
        proc.terminate()
        proc.wait(30)


def test_half_a_tls_configuration_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = self_signed(tmp_path)
    monkeypatch.delenv("GATEWAY_SSL_CERTFILE", raising=False)
    monkeypatch.delenv("GATEWAY_SSL_KEYFILE", raising=False)
    assert tls_options(argparse.Namespace(ssl_certfile=None, ssl_keyfile=None)) == {}
    assert tls_options(argparse.Namespace(ssl_certfile=str(cert), ssl_keyfile=str(key))) == {
        "ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    with pytest.raises(SystemExit, match="go together"):
        tls_options(argparse.Namespace(ssl_certfile=str(cert), ssl_keyfile=None))
    with pytest.raises(SystemExit, match="not found"):
        tls_options(argparse.Namespace(ssl_certfile=str(cert), ssl_keyfile=str(tmp_path / "missing.key")))
    monkeypatch.setenv("GATEWAY_SSL_CERTFILE", str(cert))
    monkeypatch.setenv("GATEWAY_SSL_KEYFILE", str(key))
    assert tls_options(argparse.Namespace(ssl_certfile=None, ssl_keyfile=None))["ssl_keyfile"] == str(key)
