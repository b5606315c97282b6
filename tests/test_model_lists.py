"""Model lists through the official SDKs: OpenAI's `models.list()` / `models.retrieve()`, Anthropic's
and google-genai's `models.list()` / `models.get()`; the gateway in front of the emulators."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from gateway.usage.query import records
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import LocalGateway

KEY = "sk-lists-0001"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalGateway]:
    with EmulatorSet() as emu, LocalGateway(emu, {"lists": {"key": KEY}}, tmp_path_factory.mktemp("lists")) as g:
        yield g


def test_openai_list_names_every_vendor_served_through_the_openai_protocol(gw: LocalGateway) -> None:
    client = gw.openai(KEY)
    ids = {m.id for m in client.models.list()}
    assert any(i.startswith("gpt-") for i in ids)
    assert any(i.startswith("claude-") for i in ids)
    assert any(i.startswith("gemini-") for i in ids)
    assert any(i.startswith("deepseek-") for i in ids)
    client.close()


def test_openai_retrieve_answers_a_model_or_a_404_in_openais_shape(gw: LocalGateway) -> None:
    client = gw.openai(KEY)
    assert client.models.retrieve("gpt-4o-mini").id == "gpt-4o-mini"
    assert client.models.retrieve("claude-haiku-4-5").owned_by == "anthropic"
    with pytest.raises(openai.NotFoundError) as err:
        client.models.retrieve("gpt-9-turbo")
    assert err.value.body["code"] == "model_not_found"  # type: ignore[index]
    client.close()


def test_anthropic_models_list_gets_anthropics_own_list(gw: LocalGateway) -> None:
    client = gw.anthropic(KEY)
    ids = [m.id for m in client.models.list()]
    assert ids and all(i.startswith("claude-") for i in ids)
    client.close()


@pytest.mark.parametrize("version", [None, "v1beta"])
def test_gemini_models_list_and_get(gw: LocalGateway, version: str | None) -> None:
    client = gw.gemini(KEY, api_version=version)
    names = [m.name for m in client.models.list()]
    assert names and any("gemini" in n for n in names)
    one = client.models.get(model="gemini-2.5-flash")
    assert one.name and "gemini-2.5-flash" in one.name


def test_lists_need_a_tenant_key_and_are_not_usage_records(gw: LocalGateway) -> None:
    bad = openai.OpenAI(base_url=f"{gw.url}/v1", api_key="sk-nobody", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()
    bad.close()
    gw.openai(KEY).models.list()
    gw.wait_idle()
    assert [r for r in gw.call(records(gw.components.store, "lists", 50)) if r.get("endpoint") == "models"] == []
