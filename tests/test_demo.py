"""`llm-cache-gateway demo`, run as a user runs it, twice on one Redis: its tables say what happened
in words that cannot be misread (the intended misses say so, requests and tokens apart, costs with
their digits, no bare price warning, a model list is no request, a second run is not a leak)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from gateway_dev.bench.common import OFFLINE_ENV


def _demo(*args: str) -> str:
    env = {**os.environ, **OFFLINE_ENV, "COLUMNS": "220"}
    out = subprocess.run([sys.executable, "-m", "gateway", "demo", *args], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout + out.stderr


def _row(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.strip("│ ").startswith(start))


def test_the_demo_tables_read_right_and_a_second_run_on_the_same_redis_reads_the_same(redis_server) -> None:  # type: ignore[no-untyped-def]
    runs = [_demo("--redis-url", redis_server.url) for _ in range(2)]
    for text in runs:
        lines = text.splitlines()
        assert not any(line.startswith("no price for model") for line in lines)
        assert "x-gateway-cache" in text and "requests" in text and "prompt tokens" in text
        look = _row(text, "look-alike questions")
        assert "miss" in look and "intended" in look
        other = _row(text, "another tenant, same FAQ")
        assert "miss" in other and "intended" in other and "hit" not in other
        assert not re.search(r"\b0\.0000(?!\d)", text)  # a real cost rounded away
        # every request the workload made is in the first table; the usage table counts exactly those
        # (the vLLM workload's models.list() is not a request)
        first = text.split("Prompt tokens")[0]
        made = sum(int(m.group(1).replace(",", "")) for m in
                   re.finditer(r"│\s+(?:miss|response-hit|semantic-hit|bypass)\s+│\s+([\d,]+)\s+│", first))
        acme = re.search(r"│\s+acme\s+│\s+(\d+)\s+│", _row(text, "acme"))
        globex_n = re.search(r"│\s+globex\s+│\s+(\d+)\s+│", _row(text, "globex"))
        assert acme and globex_n and int(acme.group(1)) + int(globex_n.group(1)) == made, (made, text[-3000:])
        globex = _row(text, "globex")
        assert re.search(r"│\s+globex\s+│\s+2\s+│\s+0\s+│\s+0\s+│", globex), globex
