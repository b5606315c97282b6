"""The uvicorn-vs-granian comparison: its command line, and its section with and without granian."""

from __future__ import annotations

from gateway_dev.bench.asgi_servers import GranianProcess, servers_lines


def test_granian_runs_the_same_app_factory_on_its_port() -> None:
    proc = GranianProcess("http://127.0.0.1:1", {"bench": {"key": "k"}}, port=4321)
    cmd = proc.command()
    assert cmd[-1] == "gateway.app:app_from_env" and "--factory" in cmd
    assert cmd[cmd.index("--interface") + 1] == "asgi" and cmd[cmd.index("--port") + 1] == "4321"


def test_section_reports_ratios_stream_check_and_skips() -> None:
    side = {"cpu_ms_per_hit": 0.5, "cpu_ms_per_miss": 3.0, "hits_per_s": 1000.0, "rss_end_mib": 150.0,
            "ready_s": 2.0, "stream_intact": True, "errors": 0, "not_hit": 0}
    lines = servers_lines({"uvicorn": side, "granian": {**side, "cpu_ms_per_hit": 0.75, "stream_intact": False}})
    assert "| CPU ms per Redis hit | 0.500 | 0.750 | 1.50 |" in lines
    assert any(line.startswith("| stream intact") and "| True | False |" in line for line in lines)
    assert servers_lines({"skipped": "granian is not installed"})[-1] == "Skipped: granian is not installed."
    assert servers_lines(None) == []
