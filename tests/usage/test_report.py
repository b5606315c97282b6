"""`llm-cache-gateway report`: from Redis directly, and from a running gateway's admin API."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import uvicorn
from test_api import KEY, build_app
from test_query import mixed

from gateway.accounting.pricing import PriceBook
from gateway.cli import main
from gateway.config import Settings
from gateway.stores import open_store
from gateway.stores.memory import MemoryStore
from gateway.usage.recorder import UsageRecorder
from gateway.usage.report import report_command
from gateway.usage.stage import UsageStage
from gateway_dev.localrun import free_port


async def _fill(settings: Settings, book: PriceBook, tenant: str) -> None:
    store = open_store(settings.model_copy(update={"store_timeout": 2.0}))
    recorder = UsageRecorder(store)
    for _ in range(3):
        for rec in mixed(book, tenant, time.time()):
            recorder.add(rec)
    assert await recorder.stop()
    await store.close()


def test_report_reads_redis(book: PriceBook, redis_server, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    settings = Settings(redis_url=redis_server.url)
    asyncio.run(_fill(settings, book, tenant))
    assert report_command(settings, tenant, "7d") == 0
    out = capsys.readouterr().out
    assert "Usage per tenant (since 7d)" in out and "Usage per prompt template" in out
    assert tenant in out and "summarize@2" in out and "faq@1" in out and "(no template)" in out
    summary = next(line for line in out.splitlines() if tenant in line)
    assert "27" in summary  # 3 × 9 requests
    template_line = next(line for line in out.splitlines() if "summarize@2" in line)
    assert "claude-sonnet-4-5" in template_line and "caching pays" in template_line


def test_report_cli_entry_point(redis_server, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GATEWAY_REDIS_URL", redis_server.url)
    assert main(["report", "--tenant", "nobody-here", "--since", "1d"]) == 0
    assert "No usage recorded" in capsys.readouterr().out
    assert main(["report", "--since", "soon"]) == 2


@pytest.fixture
def gateway_port(book: PriceBook) -> Iterator[int]:
    store = MemoryStore()
    stage = UsageStage(Settings(), store, prices=book)
    for rec in mixed(book, "acme", time.time()):
        stage.recorder.add(rec)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(store, stage), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(timeout=10)


def test_report_asks_the_running_gateway(gateway_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(port=gateway_port, admin_key=KEY)
    assert report_command(settings, None, "7d") == 0
    out = capsys.readouterr().out
    assert "acme" in out and "summarize@2" in out
    assert report_command(Settings(port=gateway_port, admin_key="wrong"), None, "7d") == 1
    assert "answered 401" in capsys.readouterr().out
    assert report_command(Settings(port=gateway_port), None, "7d") == 1
    assert "GATEWAY_ADMIN_KEY" in capsys.readouterr().out


def test_report_without_a_gateway(capsys: pytest.CaptureFixture[str]) -> None:
    assert report_command(Settings(port=free_port(), admin_key=KEY), None, "7d") == 1
    assert "no gateway answered" in capsys.readouterr().out
