"""Model names a caller makes up never become Prometheus series (`model="other"`), through the
official SDK → the gateway → the emulators, read back from `/metrics`."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx2
import openai
import pytest

from gateway.usage.labels import OTHER, model_label
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import LocalGateway


def test_made_up_model_names_are_counted_as_other(tmp_path: Path) -> None:
    made_up = f"gpt-9-turbo-{uuid.uuid4().hex[:6]}"
    with EmulatorSet() as emu, LocalGateway(emu, {"lab": {"key": "sk-lab-0001"}}, tmp_path) as gw:
        client = gw.openai("sk-lab-0001")
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model=made_up, messages=[{"role": "user", "content": "hi"}])
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        client.close()
        gw.wait_idle()
        text = httpx2.get(f"{gw.url}/metrics").text
    requests = [line for line in text.splitlines()
                if line.startswith("gateway_requests_total{") and 'tenant="lab"' in line]
    assert not [line for line in requests if made_up in line]
    assert [line for line in requests if 'model="other"' in line]
    assert [line for line in requests if 'model="gpt-4o-mini"' in line]


def test_the_label_rule() -> None:
    assert model_label("gpt-4o-mini", "litellm:gpt-4o-mini", 404) == "gpt-4o-mini"  # priced: known
    assert model_label("my-finetune-x", "unknown", 200) == "my-finetune-x"  # an upstream served it
    assert model_label("nonsense-" + uuid.uuid4().hex, "unknown", 404) == OTHER
    assert model_label("vllm/" + uuid.uuid4().hex, "self-hosted", 404) == OTHER
