"""`serve --with-emulators` starts the emulators and the gateway on free ports and prints the URLs,
keys and SDK snippets; those work as printed, and `report --url` reads that gateway's usage."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anthropic
import openai

from gateway_dev.bench.common import OFFLINE_ENV


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GATEWAY_") and not k.endswith("_API_KEY")}
    return {**env, **OFFLINE_ENV, **extra}


def test_serve_with_emulators_prints_working_snippets_and_report_url_reads_it(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "team.yaml").write_text("tenant: team\napi_keys: ['env:TEAM_API_KEY']\n")
    env = _env(GATEWAY_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--with-emulators", "--policies", str(policies),
                             "--log-level", "warning"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    out: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            if line.startswith("curl:"):
                done.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert done.wait(120), "".join(out) + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        time.sleep(0.5)
        text = "".join(out)
        base = re.search(r'openai\.OpenAI\(base_url="([^"]+)", api_key="([^"]+)"\)', text)
        assert base, text
        url, key = base.group(1), base.group(2)
        assert key == "dev-team-key" and "TEAM_API_KEY" in text
        assert re.search(r"emulators\s+http://127\.0\.0\.1:\d+", text)
        reply = openai.OpenAI(base_url=url, api_key=key, max_retries=0).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
        assert reply.choices[0].message.content
        anth = re.search(r'anthropic\.Anthropic\(base_url="([^"]+)"', text)
        assert anth
        message = anthropic.Anthropic(base_url=anth.group(1), api_key=key, max_retries=0).messages.create(
            model="claude-haiku-4-5", max_tokens=32, messages=[{"role": "user", "content": "Hi"}])
        assert message.content
        gateway_url = url.removesuffix("/v1")
        time.sleep(1.0)  # usage records flush in the background
        report = subprocess.run([sys.executable, "-m", "gateway", "report", "--url", gateway_url],
                                env=_env(GATEWAY_ADMIN_KEY="dev-admin-key", COLUMNS="200"),
                                capture_output=True, text=True, timeout=120)
        assert report.returncode == 0, report.stdout + report.stderr
        assert "team" in report.stdout
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)


def test_report_without_a_gateway_says_how_to_point_it_at_one(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "gateway", "report", "--url", "http://127.0.0.1:9"],
                         env=_env(GATEWAY_ADMIN_KEY="k" * 20), capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "--url" in out.stdout and "GATEWAY_PORT" in out.stdout
