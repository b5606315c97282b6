"""A gateway without cloud-platform settings: `azure/…`, `vertex_ai/…` and `bedrock/…` are refused with a clear 404
in the caller's shape naming the missing setting, on every surface, and nothing is sent anywhere."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

pytestmark = pytest.mark.timeout(120)
KEY = "key-acme"


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    return gateway_factory()


@pytest.mark.parametrize(("model", "setting"), [("azure/gpt-4o", "GATEWAY_AZURE_OPENAI_ENDPOINT"),
                                                ("vertex_ai/gemini-2.5-flash", "GATEWAY_VERTEX_PROJECT"),
                                                ("bedrock/anthropic.claude-sonnet-4-20250514-v1:0",
                                                 "GATEWAY_BEDROCK_REGION")])
def test_openai_protocol_names_the_missing_setting(gw: Any, model: str, setting: str) -> None:
    r = httpx2.post(f"{gw.url}/v1/chat/completions", headers={"authorization": f"Bearer {KEY}"},
                    json={"model": model, "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 404 and setting in r.json()["error"]["message"]


def test_native_surfaces(gw: Any) -> None:
    azure = httpx2.post(f"{gw.url}/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
                        headers={"api-key": KEY}, json={"messages": [{"role": "user", "content": "hi"}]})
    assert azure.status_code == 404 and "GATEWAY_AZURE_OPENAI_ENDPOINT" in azure.json()["error"]["message"]
    vertex = httpx2.post(f"{gw.url}/v1beta1/projects/p/locations/us-central1/publishers/google/models/"
                         "gemini-2.5-flash:generateContent", headers={"authorization": f"Bearer {KEY}"},
                         json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    assert vertex.status_code == 404 and vertex.json()["error"]["status"] == "NOT_FOUND"
    bedrock = httpx2.post(f"{gw.url}/model/anthropic.claude-sonnet-4-20250514-v1%3A0/converse",
                          headers={"authorization": f"Bearer {KEY}"},
                          json={"messages": [{"role": "user", "content": [{"text": "hi"}]}]})
    assert bedrock.status_code == 404 and "GATEWAY_BEDROCK_REGION" in bedrock.json()["message"]
    assert bedrock.headers["x-amzn-errortype"].startswith("ResourceNotFoundException")
    other = httpx2.post(f"{gw.url}/v1beta1/projects/p/locations/us-central1/publishers/anthropic/models/"
                        "claude-sonnet-4:rawPredict", headers={"authorization": f"Bearer {KEY}"}, json={})
    assert other.status_code == 404  # Claude on Vertex is not served
