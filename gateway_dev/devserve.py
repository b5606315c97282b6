"""`llm-cache-gateway serve --with-emulators`: the gateway in front of the bundled vendor emulators,
both on free local ports, for trying the gateway without vendor accounts.

The emulators take the place of every vendor (their URLs and keys are set for the gateway); tenant
keys written `env:VARNAME` in the policy folder get a development key when the variable is unset
(`dev-<tenant>-key`); the admin key is `dev-admin-key` unless `GATEWAY_ADMIN_KEY` is set. It prints
the base URLs, the keys and a snippet for each official SDK, then serves until Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from gateway_dev.localrun import free_port

DEV_ADMIN_KEY = "dev-admin-key"
_VENDOR_KEYS = {"OPENAI_API_KEY": "sk-dev-openai", "ANTHROPIC_API_KEY": "sk-dev-anthropic",
                "GEMINI_API_KEY": "dev-gemini", "DEEPSEEK_API_KEY": "sk-dev-deepseek"}


def dev_keys(folder: Path) -> dict[str, tuple[str, str | None]]:
    """tenant → (the key a client can use, the env variable it came from; None: the policy lists only
    sha256 digests, whose keys only their owner knows). Sets unset `env:` variables in os.environ."""
    out: dict[str, tuple[str, str | None]] = {}
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        if path.name.startswith(("_", ".")):
            continue
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue  # the gateway's own loader reports it properly at start
        if not isinstance(doc, dict) or not isinstance(doc.get("tenant"), str):
            continue
        tenant = doc["tenant"]
        for ref in doc.get("api_keys") or []:
            if isinstance(ref, str) and ref.startswith("env:"):
                var = ref[4:]
                if not os.environ.get(var):
                    os.environ[var] = f"dev-{tenant}-key"
                out[tenant] = (os.environ[var], var)
                break
        else:
            out[tenant] = ("<the key whose sha256 the policy lists>", None)
    return out


def snippets(url: str, key: str) -> str:
    return "\n".join([
        "OpenAI (Python):",
        f'    client = openai.OpenAI(base_url="{url}/v1", api_key="{key}")',
        "Anthropic (Python):",
        f'    client = anthropic.Anthropic(base_url="{url}", api_key="{key}")',
        "Gemini (google-genai):",
        f'    client = genai.Client(api_key="{key}", http_options=types.HttpOptions(base_url="{url}"))',
        "curl:",
        f"    curl {url}/v1/chat/completions -H 'authorization: Bearer {key}' -H 'content-type: application/json' "
        "-d '{\"model\": \"gpt-4o-mini\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}'",
    ])


def run_dev(host: str | None, port: int | None, policies: str | None, config: str | None, log_level: str) -> int:
    import uvicorn

    from gateway import logs
    from gateway.app import create_app
    from gateway.cli import UVICORN
    from gateway.config import Settings
    from gateway.policy.issues import PolicyError
    from gateway_dev.emulators.harness import EmulatorSet

    logs.configure(log_level)
    folder = Path(policies or os.environ.get("GATEWAY_POLICIES") or "./policies")
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if not folder.is_dir():
        tmp = tempfile.TemporaryDirectory(prefix="gateway-dev-")
        folder = Path(tmp.name)
        (folder / "dev.yaml").write_text("tenant: dev\napi_keys: ['env:GATEWAY_DEV_TENANT_KEY']\n")
    keys = dev_keys(folder)
    os.environ.setdefault("GATEWAY_ADMIN_KEY", DEV_ADMIN_KEY)
    for var, value in _VENDOR_KEYS.items():
        os.environ[var] = value  # the emulators stand in for every vendor: never send a real key there
    emu = EmulatorSet(frozen_clock=False).start()
    try:
        overrides: dict[str, Any] = {
            "openai_base_url": emu.openai_base_url, "anthropic_base_url": emu.anthropic_base_url,
            "gemini_base_url": emu.gemini_base_url, "deepseek_base_url": emu.deepseek_base_url,
        }
        settings = Settings.load(config, host=host or "127.0.0.1", port=port or free_port(), policies=str(folder),
                                 **overrides)
        try:
            app = create_app(settings)
        except PolicyError as exc:
            print(f"policies: {exc}", file=sys.stderr)
            return 1
        url = f"http://{'127.0.0.1' if settings.host in ('0.0.0.0', '::') else settings.host}:{settings.port}"
        # The banner once the gateway answers: what it prints works as soon as it is printed.
        threading.Thread(target=_banner_when_ready, daemon=True,
                         args=(url, emu.vendor_url, keys, os.environ["GATEWAY_ADMIN_KEY"])).start()
        uvicorn.run(app, host=settings.host, port=settings.port, **UVICORN)
    finally:
        emu.stop()
        if tmp is not None:
            tmp.cleanup()
    return 0


def _banner_when_ready(url: str, emulators: str, keys: dict[str, tuple[str, str | None]], admin: str) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    _banner(url, emulators, keys, admin)


def _banner(url: str, emulators: str, keys: dict[str, tuple[str, str | None]], admin: str) -> None:
    lines = [f"gateway    {url}", f"emulators  {emulators}  (OpenAI, Anthropic, Gemini and DeepSeek)", "tenant keys:"]
    for tenant, (key, var) in keys.items():
        lines.append(f"    {tenant:<12} {key}" + (f"   ({var})" if var else ""))
    lines.append(f"admin key: {admin}   (llm-cache-gateway report --url {url}  with GATEWAY_ADMIN_KEY={admin})")
    usable = next((k for k, v in keys.values() if v), None)
    if usable:
        lines += ["", snippets(url, usable)]
    print("\n".join(lines), flush=True)
