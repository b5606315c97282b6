"""The gateway with all its layers in front of the cloud-platform emulators (Azure OpenAI, Vertex AI, Bedrock),
configured with the gateway's own platform credentials: an Azure key, a service account the Vertex emulator
knows, AWS keys from the standard chain (the environment) and a region. The gateway serves HTTPS with a
self-signed certificate, since boto3 sends a Bedrock API key only over TLS."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.usage.query import records
from gateway_dev.emulators import EmulatorSet
from gateway_dev.emulators.vertex_auth import make_service_account
from gateway_dev.localrun import LocalGateway
from gateway_dev.tls import self_signed

KEYS = {"acme": "key-acme-platforms", "globex": "key-globex-platforms"}
AZURE_KEY = "azure-gateway-resource-key"
AWS_KEY_ID, AWS_SECRET = "AKIAGATEWAYPLATFORMS", "gateway/aws/secret"
REGION = "us-east-1"
PROJECT = "gw-platform-project"
TENANTS = {t: {"key": k, "response_cache": {"enabled": True, "ttl": "1h", "scope": "tenant"},
               "provider_cache": {"gemini": {"enabled": True, "ttl": "10m", "min_expected_reuses": 3}}}
           for t, k in KEYS.items()}


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(latency="zero") as e:
        e.platforms.bedrock.auth.region = REGION
        e.platforms.bedrock.auth.add_key(AWS_KEY_ID, AWS_SECRET)
        yield e


@pytest.fixture(scope="module")
def service_account(emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    info, public = make_service_account(PROJECT, f"{emu.platform_url}/token")
    emu.platforms.vertex.register_service_account(info, public)
    path = tmp_path_factory.mktemp("sa") / "service-account.json"
    path.write_text(json.dumps(info))
    return info, path


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def gw(emu: EmulatorSet, service_account: tuple[dict[str, Any], Path], tls: tuple[Path, Path],
       tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalGateway]:
    mp = pytest.MonkeyPatch()
    # the standard AWS chain of the gateway process: its environment
    mp.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    mp.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    mp.delenv("AWS_SESSION_TOKEN", raising=False)
    mp.delenv("AWS_PROFILE", raising=False)
    gateway = LocalGateway(
        emu, TENANTS, tmp_path_factory.mktemp("gw"), tls=(str(tls[0]), str(tls[1])),
        azure_base_url=emu.platform_url, azure_api_key=AZURE_KEY, azure_openai_api_version="2024-10-21",
        vertex_ai_base_url=emu.platform_url, vertex_project=PROJECT, vertex_location="us-central1",
        vertex_credentials=str(service_account[1]),
        bedrock_base_url=emu.platform_url, bedrock_region=REGION).start()
    try:
        yield gateway
    finally:
        gateway.stop()
        mp.undo()


@pytest.fixture(autouse=True)
def _fresh(emu: EmulatorSet) -> None:
    emu.reset(caches=True)


def usage_records(gw: LocalGateway, tenant: str, request_ids: set[str], timeout: float = 15) -> dict[str, Any]:
    """The usage records of these requests, once the background flush wrote them."""
    deadline = time.monotonic() + timeout
    found: dict[str, Any] = {}
    while time.monotonic() < deadline and len(found) < len(request_ids):
        time.sleep(0.2)
        found = {r["request_id"]: r for r in gw.call(records(gw.components.store, tenant, 200))
                 if r["request_id"] in request_ids}
    assert len(found) == len(request_ids), f"records missing: {request_ids - set(found)}"
    return found
