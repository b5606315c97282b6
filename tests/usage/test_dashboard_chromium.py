"""The dashboard renders with data in headless Chromium (Debian's `chromium`), and a screenshot is
kept under test-artifacts/ (gitignored; CI keeps it as an artifact)."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from test_api import KEY, build_app
from test_query import mixed

from gateway.accounting.pricing import PriceBook
from gateway.config import Settings
from gateway.stores.memory import MemoryStore
from gateway.usage.stage import UsageStage
from gateway_dev.localrun import free_port

pytestmark = pytest.mark.chromium
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed (apt-get install -y chromium); .ci/run installs it")
    return exe


@pytest.fixture
def served(book: PriceBook) -> Iterator[str]:
    """A gateway usage router with a week of traffic for three tenants, on a real port."""
    store = MemoryStore()
    stage = UsageStage(Settings(), store, prices=book)
    now = time.time()
    for day in range(7):
        for hour in (2, 9, 15):
            t = now - day * 86400 - hour * 3600
            for tenant in ("acme", "globex", "initech")[: 1 + (day + hour) % 3]:
                # Vary the mix per bucket so the hit-rate lines differ.
                recs = mixed(book, tenant, t)
                for i, rec in enumerate(recs):
                    if i in (1, 2, 3) and (day + i) % 3 == 0:
                        continue
                    if i == 4:  # the summarize template's request broke its prefix on a timestamp
                        rec.prefix = {"previous_request_id": "gw-prev", "common_tokens": 40, "break": {
                            "part": "system", "cause": "volatile_value", "message_index": None,
                            "tokens_lost": 1800, "cost_lost_usd": 0.0049}}
                    stage.recorder.add(rec)
    asyncio.run(stage.recorder.flush())
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(store, stage), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _run_chromium(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
           f"--user-data-dir={profile}", "--window-size=1400,1700", "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_dashboard_renders_with_data(served: str, tmp_path: Path) -> None:
    # The key goes in once; the gateway answers with a cookie and a redirect to the page.
    url = f"{served}/dashboard?key={KEY}&since=7d"
    dom = _run_chromium(["--dump-dom", url], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-ready="1"' in html, html[:2000]
    points = re.findall(r'<circle class="pt"[^>]*data-series="(\w+)" data-value="([\d.e-]+)"', html)
    bars = re.findall(r'<rect class="bar"[^>]*data-series="(\w+)" data-value="([\d.e-]+)"', html)
    point_series = {s for s, v in points}
    assert {"response", "semantic", "single_flight", "provider"} <= point_series
    assert any(float(v) > 0 for s, v in points if s == "response")
    bar_series = {s for s, v in bars if float(v) > 0}
    assert {"uncached", "cache_read", "cache_write", "output", "gateway", "cost", "without"} <= bar_series
    for tenant in ("acme", "globex", "initech"):
        assert f'data-name="{tenant}"' in html
    assert 'data-name="acme · summarize@2"' in html
    # the prefix-break table: the template, its cause, and what the rewrite would have saved
    assert "acme · summarize@2</td>" in html and "volatile_value" in html

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "dashboard.png"
    shot.unlink(missing_ok=True)
    done = _run_chromium([f"--screenshot={shot}", url], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.stat().st_size > 20_000  # a page with charts, not a blank one


def test_dashboard_without_key_shows_the_login(served: str, tmp_path: Path) -> None:
    dom = _run_chromium(["--dump-dom", f"{served}/dashboard"], tmp_path)
    assert dom.returncode == 0 and 'name="key"' in dom.stdout and "<svg" not in dom.stdout
