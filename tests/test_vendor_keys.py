"""A gateway without a vendor's key: a warning at start naming the variable, and requests to that
vendor refused in the gateway's words (the caller's tenant key was fine), in each SDK's error shape."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import anthropic
import openai
import pytest
from google.genai import errors as genai_errors

from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import LocalGateway

KEY = "sk-keys-0001"
NO_KEYS = {"openai_api_key": None, "anthropic_api_key": None, "gemini_api_key": None, "deepseek_api_key": None}


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet() as emulators:
        yield emulators


@pytest.fixture
def gw(emu: EmulatorSet, tmp_path, caplog: pytest.LogCaptureFixture) -> Iterator[LocalGateway]:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.WARNING, logger="gateway")
    with LocalGateway(emu, {"keys": {"key": KEY}}, tmp_path, **NO_KEYS) as gateway:
        yield gateway


def test_start_warns_once_per_missing_vendor_key(gw: LocalGateway, caplog: pytest.LogCaptureFixture) -> None:
    lines = [r.getMessage() for r in caplog.get_records("setup") if "no vendor key configured" in r.getMessage()]
    for env in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY"):
        assert sum(env in line for line in lines) == 1, lines


def test_openai_request_without_the_gateways_key_is_refused_in_the_gateways_words(gw: LocalGateway,
                                                                                   emu: EmulatorSet) -> None:
    calls = emu.calls("openai.chat")
    client = gw.openai(KEY)
    with pytest.raises(openai.AuthenticationError) as err:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    client.close()
    assert "OPENAI_API_KEY" in err.value.message and "gateway" in err.value.message
    assert "didn't provide" not in err.value.message
    assert err.value.body["code"] == "gateway_upstream_key_missing"  # type: ignore[index]
    assert emu.calls("openai.chat") == calls  # never sent upstream without a key


def test_anthropic_and_gemini_and_embeddings_alike(gw: LocalGateway) -> None:
    client = gw.anthropic(KEY)
    with pytest.raises(anthropic.AuthenticationError) as err:
        client.messages.create(model="claude-haiku-4-5", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    client.close()
    assert "ANTHROPIC_API_KEY" in str(err.value)
    gemini = gw.gemini(KEY)
    with pytest.raises(genai_errors.ClientError) as gerr:
        gemini.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert gerr.value.code == 401 and "GEMINI_API_KEY" in str(gerr.value)
    oai = gw.openai(KEY)
    with pytest.raises(openai.AuthenticationError) as eerr:
        oai.embeddings.create(model="text-embedding-3-small", input="hi")
    oai.close()
    assert "OPENAI_API_KEY" in eerr.value.message


def test_byok_tenants_still_pass_their_own_key(emu: EmulatorSet, tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.WARNING, logger="gateway")
    with LocalGateway(emu, {"byok": {"key": "sk-byok-0001", "upstream_keys": "passthrough"}}, tmp_path,
                      **NO_KEYS) as gw:
        client = gw.openai("sk-byok-0001")
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        client.close()
    assert reply.choices[0].message.content
    assert not [r for r in caplog.records if "no vendor key configured" in r.getMessage()]
