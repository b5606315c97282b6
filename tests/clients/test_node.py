"""Node clients through the gateway: the Vercel AI SDK (`ai` with `@ai-sdk/openai`, `@ai-sdk/anthropic`,
`@ai-sdk/google`) and the official `openai` and `@anthropic-ai/sdk` packages, as pinned in
tests/clients/node/package-lock.json (`npm ci` there first). Each test runs one check in `node clients.mjs`
and asserts on what the client itself parsed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import CHECKS, KEY, LONG_SYSTEM, Gateway

NODE_DIR = Path(__file__).parent / "node"
CLIENTS = {"vercel-openai": "openai", "vercel-anthropic": "anthropic", "vercel-gemini": "gemini",
           "openai": "openai", "anthropic": "anthropic"}

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_DIR / "node_modules").is_dir(),
    reason="node or tests/clients/node/node_modules missing (run `npm ci` in tests/clients/node)")


def _run(gw: Gateway, client: str, check: str, between: Any = None) -> dict[str, Any]:
    env = {**os.environ, "GW_URL": gw.url, "GW_KEY": KEY, "LONG_SYSTEM": LONG_SYSTEM}
    proc = subprocess.Popen(["node", "clients.mjs", client, check], cwd=NODE_DIR, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for line in proc.stdout:
            step = json.loads(line)
            if step["step"] == "first":
                if between is not None:
                    between()
                proc.stdin.write("go\n")
                proc.stdin.flush()
            elif step["step"] == "error":
                raise AssertionError(step["error"])
            else:
                return step
        raise AssertionError(f"no result from node: {proc.stderr.read() if proc.stderr else ''}")
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("client", list(CLIENTS))
def test_node_client(gw: Gateway, client: str, check: str) -> None:
    vendor = CLIENTS[client]
    if check == "repeat":
        seen: dict[str, int] = {}

        def between() -> None:
            gw.settle()
            seen["before"] = gw.upstream(vendor)

        out = _run(gw, client, check, between)
        gw.settle()
        assert gw.upstream(vendor) == seen["before"] and gw.statuses()[-1] == "response-hit"
        assert out["second"] == out["first"] and out["first"]
        if "header" in out:
            assert out["header"] == "response-hit"
        return
    if check == "cached_tokens":
        out = _run(gw, client, check, gw.settle)
        first, second = out["cached"]
        assert not first and second > 1000, out
        return
    out = _run(gw, client, check)
    if check == "plain":
        assert out["text"] and out["finish"] in ("stop", "end_turn") and out["output_tokens"] > 0
    elif check == "stream":
        assert out["deltas"] > 1 and out["text"] == out["final"] and out["output_tokens"] > 0
        assert out["finish"] in ("stop", "end_turn")
    elif check == "tools":
        assert any("18C" in str(r) for r in out["tool_results"]) and "18C" in out["text"]
    elif check in ("structured", "structured_tools"):
        assert out["output"]["destination"] and isinstance(out["output"]["grid"], list)
        if check == "structured_tools":
            assert any("18C" in str(r) for r in out["tool_results"])
