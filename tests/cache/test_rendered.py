"""Rendered bytes of a replayed answer: a template only where it gives the adapter's own bytes."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from gateway.answer import Answer, ToolCall
from gateway.cache import rendered
from gateway.cache.rendered import RenderedAnswers
from gateway.protocols import ADAPTERS, get_adapter


def _answer() -> Answer:
    return Answer(text="Paris is the capital of France.", model="gpt-4o-mini", finish_reason="tool_calls",
                  tool_calls=[ToolCall("call_1", "lookup", '{"city": "Paris"}')], provider="openai",
                  usage_raw={"prompt_tokens": 12, "completion_tokens": 20})


def _clock(monkeypatch: pytest.MonkeyPatch, second: list[float]) -> None:
    monkeypatch.setattr(rendered.time, "time", lambda: second[0])
    monkeypatch.setattr("gateway.protocols.common.time.time", lambda: second[0])


@pytest.mark.parametrize("protocol", sorted(ADAPTERS))
def test_every_render_is_the_adapters_own(protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_800_000_000.2]
    _clock(monkeypatch, now)
    adapter, answer, body = get_adapter(protocol), _answer(), {"model": "gpt-4o-mini", "stream": False}
    cache = RenderedAnswers()
    for i in range(6):
        if i == 4:
            now[0] += 1  # a new second: the template of the last one no longer fits
        rid = f"gw-{i:024x}"
        want = adapter.render_answer(answer, body, rid)
        got = orjson.loads(cache.render(adapter, answer, body, rid))
        assert got == want, (protocol, i)


def test_a_template_is_built_on_the_second_render_within_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    _clock(monkeypatch, [1_800_000_000.0])
    adapter, answer, body = get_adapter("openai_chat"), _answer(), {"model": "gpt-4o-mini"}
    cache = RenderedAnswers()
    cache.render(adapter, answer, body, "gw-1")
    assert not cache._templates  # seen once: no template
    cache.render(adapter, answer, body, "gw-2")
    assert len(cache._templates) == 1
    out = orjson.loads(cache.render(adapter, answer, body, "gw-3"))
    assert out["id"] == "chatcmpl-gw-3" and out["created"] == 1_800_000_000
    # Another framing (a transport field of the body) does not use that template.
    other = orjson.loads(cache.render(adapter, answer, {**body, "stream": False}, "gw-4"))
    assert other == adapter.render_answer(answer, {**body, "stream": False}, "gw-4")


class _Noisy:
    """An adapter that adds a fresh random value to each render: it must never get a template."""

    name = "noisy"
    transport_fields: frozenset[str] = frozenset()

    def render_answer(self, answer: Answer, body: dict[str, Any], rid: str) -> dict[str, Any]:
        return {"id": rid, "nonce": random.getrandbits(64), "text": answer.text}


def test_an_adapter_with_other_per_request_values_never_gets_a_template(monkeypatch: pytest.MonkeyPatch) -> None:
    _clock(monkeypatch, [1_800_000_000.0])
    cache, answer = RenderedAnswers(), _answer()
    nonces = {orjson.loads(cache.render(_Noisy(), answer, {}, f"gw-{i}"))["nonce"] for i in range(5)}  # type: ignore[arg-type]
    assert len(nonces) == 5 and not cache._templates


def test_a_request_id_in_the_answer_text_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    _clock(monkeypatch, [1_800_000_000.0])
    adapter, cache = get_adapter("openai_chat"), RenderedAnswers()
    answer = Answer(text="ids look like gw-000000000000000000000002", model="m")
    for i in range(4):
        rid = f"gw-{i:024x}"
        assert orjson.loads(cache.render(adapter, answer, {}, rid)) == adapter.render_answer(answer, {}, rid)


def test_bounded_by_count() -> None:
    adapter, cache = get_adapter("openai_chat"), RenderedAnswers(max_templates=3)
    answers = [Answer(text=f"answer {i}", model="m") for i in range(10)]
    for answer in answers:
        for i in range(3):
            cache.render(adapter, answer, {}, f"gw-{i}")
    assert len(cache._templates) <= 3
    assert cache._bytes == sum(t.size for t in cache._templates.values())
