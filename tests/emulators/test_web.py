"""The emulators' last-resort `Guard` (gateway_dev/emulators/web.py), on the running servers: an exception no
handler words becomes a logged 500 in the vendor's own shape (mid-stream: the vendor's in-stream error and a
clean end), and the keep-alive connection survives it. Before the Guard, uvicorn answered a bare 500 and
closed the connection, so the client's next request on it failed with "connection reset by peer"."""

from __future__ import annotations

import logging
from typing import Any

import httpx2
import pytest

from gateway_dev.emulators import EmulatorSet, vllm_app
from gateway_dev.emulators.tokens import get_tokenizer

H = {"authorization": "Bearer sk-1", "x-api-key": "k", "x-goog-api-key": "g", "anthropic-version": "2023-06-01"}
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("an emulator bug")


def _connections(client: httpx2.Client) -> int:
    return len(client._transport._pool.connections)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("path", "body", "target", "check"), [
    ("/v1/chat/completions", CHAT, "openai",
     lambda e: e["error"]["type"] == "server_error" and "param" in e["error"]),
    ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 9, "messages": CHAT["messages"]}, "anthropic",
     lambda e: e["type"] == "error" and e["error"]["type"] == "api_error"),
    ("/v1beta/models/gemini-2.5-flash:generateContent", {"contents": [{"parts": [{"text": "hi"}]}]}, "gemini",
     lambda e: e["error"]["code"] == 500 and e["error"]["status"] == "INTERNAL"),
])
def test_a_crash_is_a_vendor_shaped_500_and_the_connection_survives(emu: EmulatorSet, monkeypatch, caplog,
                                                                       path, body, target, check) -> None:
    with httpx2.Client(base_url=emu.vendor_url, headers=H, timeout=10) as client:
        assert client.post(path, json=body).status_code == 200
        monkeypatch.setattr(get_tokenizer(), "encode", _boom)  # every vendor tokenizes the prompt
        with caplog.at_level(logging.ERROR, logger="gateway_dev.emulators"):
            crashed = client.post(path, json=body)
        monkeypatch.undo()
        assert crashed.status_code == 500 and check(crashed.json()), crashed.text
        assert "Traceback" not in crashed.text
        assert any("an emulator bug" in (r.exc_text or "") or r.exc_info for r in caplog.records)
        again = client.post(path, json=body)  # same pooled connection: no reset
        assert again.status_code == 200
        assert _connections(client) == 1


def test_a_crash_mid_stream_ends_with_the_vendors_stream_error(emu: EmulatorSet, monkeypatch) -> None:
    with httpx2.Client(base_url=emu.vendor_url, headers=H, timeout=10) as client:
        monkeypatch.setattr(get_tokenizer(), "pieces", _boom)  # runs after the stream's status line is sent
        with client.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as resp:
            assert resp.status_code == 200
            text = resp.read().decode()
        assert text.rstrip().endswith('"code":null}}') and '"type":"server_error"' in text
        with client.stream("POST", "/v1/messages", json={"model": "claude-sonnet-4-5", "max_tokens": 9,
                                                         "messages": CHAT["messages"], "stream": True}) as resp:
            text = resp.read().decode()
        assert "event: error" in text and '"type":"api_error"' in text
        monkeypatch.undo()
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200
        assert _connections(client) == 1


def test_vllm_hot_path_crash_is_a_vllm_500(emu: EmulatorSet, monkeypatch) -> None:
    with httpx2.Client(base_url=emu.vllm_urls[0], timeout=10) as client:
        monkeypatch.setattr(vllm_app, "generate", _boom)
        crashed = client.post("/v1/chat/completions", json={"messages": CHAT["messages"]})
        monkeypatch.undo()
        assert crashed.status_code == 500
        assert crashed.json()["error"]["type"] == "InternalServerError" and crashed.json()["error"]["code"] == 500
        assert client.post("/v1/chat/completions", json={"messages": CHAT["messages"]}).status_code == 200
        assert _connections(client) == 1
