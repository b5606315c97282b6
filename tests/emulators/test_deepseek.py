"""The DeepSeek emulator through the `openai` SDK (DeepSeek is OpenAI-compatible): context caching on disk
(cache prefix units), `prompt_cache_hit_tokens`/`prompt_cache_miss_tokens`, deepseek-reasoner."""

from __future__ import annotations

import openai
import pytest

from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)

A = [{"role": "system", "content": "You are a financial report analyst. " + "Revenue grew in every region. " * 40},
     {"role": "user", "content": "Here is the report: " + "Quarterly figures were stable across units. " * 30}]
B = {"role": "user", "content": "Summarize the key information."}
C = {"role": "user", "content": "Analyze the profitability."}
D = {"role": "user", "content": "List every risk mentioned."}


@pytest.fixture(scope="module")
def client(emu: EmulatorSet) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.deepseek_base_url, api_key="sk-deepseek-1", max_retries=0)


def _usage(client: openai.OpenAI, messages: list[dict], model: str = "deepseek-chat"):
    r = client.chat.completions.create(model=model, messages=messages)
    u = r.usage.model_dump()
    assert u["prompt_cache_hit_tokens"] + u["prompt_cache_miss_tokens"] == r.usage.prompt_tokens
    assert u["prompt_tokens_details"]["cached_tokens"] == u["prompt_cache_hit_tokens"]
    return r, u


def test_a_b_then_a_b_c_hits_a_b(client) -> None:
    _, first = _usage(client, [*A, B])
    assert first["prompt_cache_hit_tokens"] == 0
    _, second = _usage(client, [*A, B, C])
    # the unit ends where the user input of the first request ended: all of it but the assistant marker
    # that opens the answer (a handful of tokens)
    unit = second["prompt_cache_hit_tokens"]
    assert 0 < first["prompt_tokens"] - unit < 10
    _, repeat = _usage(client, [*A, B])  # the same request again hits the same unit
    assert repeat["prompt_cache_hit_tokens"] == unit


def test_a_b_then_a_c_misses_then_a_d_hits_a(client) -> None:
    _, ab = _usage(client, [*A, B])
    _, ac = _usage(client, [*A, C])
    assert ac["prompt_cache_hit_tokens"] == 0  # A+C does not fully match the unit A+B
    _, ad = _usage(client, [*A, D])  # ... but A was detected as a common prefix and persisted
    _, a_only = _usage(client, A)
    hit = ad["prompt_cache_hit_tokens"]
    assert a_only["prompt_tokens"] - 10 <= hit < ad["prompt_tokens"]  # A (plus the shared user-turn marker)
    assert hit < ab["prompt_tokens"]


def test_multi_turn_hits_the_unit_at_the_end_of_the_model_output(client) -> None:
    r, first = _usage(client, [*A, B])
    follow = [*A, B, {"role": "assistant", "content": r.choices[0].message.content}, C]
    _, second = _usage(client, follow)
    # prompt of turn 1 + its answer is one unit: the hit covers the answer too
    assert second["prompt_cache_hit_tokens"] > first["prompt_tokens"] + first["completion_tokens"] - 5


def test_short_prompts_are_not_cached_and_units_expire(emu: EmulatorSet, client) -> None:
    short = [{"role": "user", "content": "Hello!"}]
    _usage(client, short)
    assert _usage(client, short)[1]["prompt_cache_hit_tokens"] == 0  # under 64 tokens
    _usage(client, [*A, B])
    emu.clock.advance(6 * 3600)  # hours later: still on disk
    assert _usage(client, [*A, B, C])[1]["prompt_cache_hit_tokens"] > 0
    emu.clock.advance(24 * 3600 + 1)  # unused for more than a day: cleared
    assert _usage(client, [*A, B, D])[1]["prompt_cache_hit_tokens"] == 0


def test_units_are_per_api_key(emu: EmulatorSet, client) -> None:
    _usage(client, [*A, B])
    other = openai.OpenAI(base_url=emu.deepseek_base_url, api_key="sk-deepseek-2", max_retries=0)
    assert _usage(other, [*A, B, C])[1]["prompt_cache_hit_tokens"] == 0


def test_long_inputs_get_units_at_fixed_intervals(client) -> None:
    doc = [{"role": "user", "content": "Contract text: " + "The supplier shall deliver goods on time. " * 300}]
    _, first = _usage(client, [*doc, B])
    assert first["prompt_tokens"] > 2048
    _, second = _usage(client, [*doc, C])  # first sight of this pair: no common-prefix unit yet...
    assert second["prompt_cache_hit_tokens"] >= 1024 and second["prompt_cache_hit_tokens"] % 1024 == 0


def test_reasoner_stream_and_usage(emu: EmulatorSet, client) -> None:
    r, u = _usage(client, [*A, B], model="deepseek-reasoner")
    assert u["completion_tokens_details"]["reasoning_tokens"] > 0
    assert r.choices[0].message.reasoning_content  # an extra field the openai SDK keeps
    chunks = list(client.chat.completions.create(model="deepseek-reasoner", messages=[*A, B], stream=True,
                                                 stream_options={"include_usage": True}))
    usage = chunks[-1].usage.model_dump()
    assert chunks[-1].choices == [] and usage["prompt_cache_hit_tokens"] > 0
    reasoning = "".join(getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices)
    assert reasoning == r.choices[0].message.reasoning_content
    assert emu.calls("deepseek.chat") == 2 and emu.calls("openai.chat") == 0
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="deepseek-nonexistent", messages=[B])
    emu.state.valid_keys = {"sk-other"}
    with pytest.raises(openai.AuthenticationError) as e:
        client.chat.completions.create(model="deepseek-chat", messages=[B])
    assert e.value.body["type"] == "authentication_error"
