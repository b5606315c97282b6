"""The real-client suite: popular client libraries, pinned in the `[clients]` extra and in
tests/clients/node/package-lock.json, drive the gateway on the vendor emulators as their users would
(base URL and key changed, nothing else).

Each client runs the same checks (CHECKS): a plain call, a stream, a tool round trip, structured output in
the library's default way, structured output with tools, a repeat answered by the response cache, and its
own cached-token usage field after a long repeated prefix. Every test gets a fresh emulator set and gateway
(`gateway_factory`), so the upstream counts and the access log it reads are its own.

No client may reach the internet: telemetry and tracing are off (below), model price maps are local, and
the suite passes inside a network namespace with only loopback (docs/emulators.md, "Real clients").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

for _name, _value in {
    "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true",
    "LITELLM_TELEMETRY": "False", "OPENAI_AGENTS_DISABLE_TRACING": "1", "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false", "LANGCHAIN_CALLBACKS_BACKGROUND": "false", "DO_NOT_TRACK": "1",
    "LOGFIRE_IGNORE_NO_CONFIG": "1", "OTEL_SDK_DISABLED": "true", "GOOGLE_CLOUD_DISABLE_GRPC": "true",
}.items():
    os.environ[_name] = _value
for _name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL",
              "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
    os.environ.pop(_name, None)

KEY = "key-acme"
CHECKS = ["plain", "stream", "tools", "structured", "structured_tools", "repeat", "cached_tokens"]

# ~3,000 tokens of stable system prompt: above every emulated cache minimum of the models used here
# (OpenAI 1,024; claude-sonnet-4-5 1,024; gemini-2.5-flash 2,048).
LONG_SYSTEM = "You are the support assistant of Acme Corp. Answer from the handbook below. " + " ".join(
    f"Handbook rule {i}: a customer who keeps the receipt may return item class {i} within {i % 30 + 10} days."
    for i in range(150))

WEATHER_QUESTION = "Use the get_weather tool to find the weather in Paris."


@dataclass
class Gateway:
    """What a client test needs of its gateway: the URLs, the key, the access log, upstream counts."""

    url: str
    emu: Any
    local: Any
    access: list[dict[str, Any]]

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    def upstream(self, vendor: str) -> int:
        return int(self.emu.calls(vendor))

    def settle(self) -> None:
        """Wait until every request's after-stages (response-cache writes, usage) have run."""
        self.local.wait_idle()

    def statuses(self) -> list[str]:
        """The cache status of every request so far, in order (its access-log line is written after the
        response, by the after-stages: settled first)."""
        self.settle()
        return [str(r.get("cache")) for r in self.access if r.get("cache") is not None]


class _Collect(logging.Handler):
    def __init__(self, sink: list[dict[str, Any]]) -> None:
        super().__init__(logging.INFO)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append({k: getattr(record, k, None) for k in ("cache", "status", "model", "provider", "path")})


@pytest.fixture
def gw(gateway_factory: Any, emulators: Any) -> Iterator[Gateway]:
    records: list[dict[str, Any]] = []
    handler = _Collect(records)
    access = logging.getLogger("gateway.access")
    old_level = access.level
    access.setLevel(logging.INFO)
    access.addHandler(handler)
    local = gateway_factory()
    try:
        yield Gateway(local.url, emulators, local, records)
    finally:
        access.removeHandler(handler)
        access.setLevel(old_level)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.clients)
            # The libraries' own deprecation and typing warnings are theirs, not the gateway's.
            item.add_marker(pytest.mark.filterwarnings("ignore::UserWarning"))
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning"))
            item.add_marker(pytest.mark.filterwarnings("ignore::PendingDeprecationWarning"))
