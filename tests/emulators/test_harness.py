"""The harness: EmulatorSet (sync and async), call counters and recorded requests, the controllable clock,
the latency model, fault injection (header and controller) across vendors, and the subprocess server."""

from __future__ import annotations

import time
import warnings

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from gateway_dev.emulators import FAULT_HEADER, EmulatorSet
from gateway_dev.emulators.process import EmulatorProcess
from gateway_dev.localrun import free_port

pytestmark = [pytest.mark.timeout(60), pytest.mark.filterwarnings("ignore::DeprecationWarning")]
warnings.filterwarnings("ignore", category=DeprecationWarning)
MSG = [{"role": "user", "content": "Hello there"}]


def test_counters_and_recorded_requests(emu: EmulatorSet) -> None:
    c = openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-1", max_retries=0)
    c.chat.completions.create(model="gpt-4o", messages=MSG, prompt_cache_key="k")
    c.chat.completions.create(model="deepseek-chat", messages=MSG)
    assert emu.calls("openai.chat") == 1 and emu.calls("deepseek.chat") == 1 and emu.calls("openai") == 1
    rec = emu.requests("openai.chat")[0]
    assert rec.body["prompt_cache_key"] == "k" and rec.headers["authorization"] == "Bearer sk-1"
    assert rec.path == "/v1/chat/completions" and rec.method == "POST"
    emu.reset()
    assert emu.calls("openai.chat") == 0 and emu.requests() == []


async def test_async_usage_and_separate_sets() -> None:
    async with EmulatorSet(vllm_replicas=1, latency="zero") as emu:
        c = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
        r = await c.chat.completions.create(model="gpt-4o", messages=MSG)
        v = openai.AsyncOpenAI(base_url=f"{emu.vllm_urls[0]}/v1", api_key="k", max_retries=0)
        s = await v.chat.completions.create(model="Qwen/Qwen3-8B", messages=MSG, stream=True)
        text = "".join([ch.choices[0].delta.content or "" async for ch in s if ch.choices])
        assert r.choices[0].message.content and text
        assert emu.calls("vllm0.chat") == 1
        await c.close()
        await v.close()


def test_latency_model_and_per_request_override(emu: EmulatorSet) -> None:
    c = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
    t0 = time.perf_counter()
    c.chat.completions.create(model="gpt-4o", messages=MSG)
    fast = time.perf_counter() - t0
    emu.latency.set(base=0.25, itl=0.01)
    t0 = time.perf_counter()
    stream = c.chat.completions.create(model="gpt-4o", messages=MSG, stream=True)
    next(iter(stream))
    ttft = time.perf_counter() - t0
    chunks = 1 + sum(1 for _ in stream)
    total = time.perf_counter() - t0
    assert ttft >= 0.25 and total >= 0.25 + 0.01 * (chunks - 4)
    emu.latency.zero()
    t0 = time.perf_counter()
    c.chat.completions.create(model="gpt-4o", messages=MSG, extra_headers={"x-emulator-latency": "base=0.3"})
    assert time.perf_counter() - t0 >= 0.3 > fast


def test_prefill_cost_depends_on_cached_tokens(emu: EmulatorSet, long_system: str) -> None:
    c = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
    msgs = [{"role": "system", "content": long_system}, {"role": "user", "content": "Q"}]
    emu.latency.set(base=0, prefill=4e-4, cached=0, itl=0)  # ~0.6 s uncached, ~0.05 s when 1.4k are cached

    def timed() -> float:
        t0 = time.perf_counter()
        c.chat.completions.create(model="gpt-4o", messages=msgs)
        return time.perf_counter() - t0

    cold, warm = timed(), timed()
    assert cold >= 0.5 and warm < cold - 0.3


def test_status_faults_use_each_vendors_error_shape(emu: EmulatorSet) -> None:
    oa = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.RateLimitError) as e:
        oa.chat.completions.create(model="gpt-4o", messages=MSG,
                                   extra_headers={FAULT_HEADER: "status=429,retry_after=0"})
    assert e.value.response.headers["retry-after"] == "0" and e.value.body["type"] == "requests"
    an = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.OverloadedError) as e2:
        an.messages.create(model="claude-sonnet-4-6", max_tokens=20, messages=MSG,
                           extra_headers={FAULT_HEADER: "status=529"})
    assert e2.value.status_code == 529 and e2.value.body["error"]["type"] == "overloaded_error"
    emu.faults.gemini.inject("status=503")
    g = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=emu.gemini_base_url))
    with pytest.raises(genai_errors.ServerError) as e3:
        g.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert e3.value.code == 503 and e3.value.status == "UNAVAILABLE"
    assert g.models.generate_content(model="gemini-2.5-flash", contents="hi").text  # the fault was used up
    for status, exc in ((400, openai.BadRequestError), (401, openai.AuthenticationError),
                        (500, openai.InternalServerError)):
        emu.faults.openai.next_status = status
        with pytest.raises(exc):
            oa.chat.completions.create(model="gpt-4o", messages=MSG)


def test_queued_faults_meet_sdk_retries(emu: EmulatorSet) -> None:
    emu.faults.openai.inject("status=503,retry_after=0.01", count=2)  # the SDK honours retry-after
    retrying = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=2)
    r = retrying.with_options(timeout=10).chat.completions.create(model="gpt-4o", messages=MSG)
    assert r.choices[0].message.content and emu.calls("openai.chat") == 3
    emu.faults.vllm[0].set_always("status=500")
    v = openai.OpenAI(base_url=f"{emu.vllm_urls[0]}/v1", api_key="k", max_retries=0)
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            v.chat.completions.create(model="Qwen/Qwen3-8B", messages=MSG)
    emu.faults.vllm[0].clear()
    assert v.chat.completions.create(model="Qwen/Qwen3-8B", messages=MSG).choices


def test_timeout_and_slow_first_byte(emu: EmulatorSet) -> None:
    c = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0, timeout=0.5)
    with pytest.raises(openai.APITimeoutError):
        c.chat.completions.create(model="gpt-4o", messages=MSG, extra_headers={FAULT_HEADER: "timeout"})
    t0 = time.perf_counter()
    c.with_options(timeout=5).chat.completions.create(model="gpt-4o", messages=MSG,
                                                       extra_headers={FAULT_HEADER: "slow_first_byte=0.3"})
    assert time.perf_counter() - t0 >= 0.3


def test_stream_cut_and_in_stream_errors(emu: EmulatorSet) -> None:
    c = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
    got = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in c.chat.completions.create(model="gpt-4o", messages=MSG, stream=True,
                                               extra_headers={FAULT_HEADER: "cut_stream_after=3"}):
            got.append(chunk)
    assert len(got) == 3
    with pytest.raises(openai.APIError):
        list(c.chat.completions.create(model="gpt-4o", messages=MSG, stream=True,
                                       extra_headers={FAULT_HEADER: "stream_error_after=2"}))
    with pytest.raises(openai.APIConnectionError):  # a non-stream body cut half-way
        c.chat.completions.create(model="gpt-4o", messages=MSG, extra_headers={FAULT_HEADER: "cut_stream_after=0"})
    an = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="k", max_retries=0)
    events = []
    with pytest.raises(anthropic.APIStatusError) as e:
        for ev in an.messages.create(model="claude-sonnet-4-6", max_tokens=50, messages=MSG, stream=True,
                                     extra_headers={FAULT_HEADER: "stream_error_after=4"}):
            events.append(ev.type)
    assert events[0] == "message_start" and "Overloaded" in str(e.value)
    g = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=emu.gemini_base_url))
    with pytest.raises(genai_errors.APIError):
        list(g.models.generate_content_stream(model="gemini-2.5-flash", contents="hi " * 50, config={
            "http_options": {"headers": {FAULT_HEADER: "stream_error_after=1"}}}))


def test_clock_is_frozen_and_movable(emu: EmulatorSet) -> None:
    t = emu.clock.now()
    time.sleep(0.05)
    assert emu.clock.now() == t
    assert emu.clock.advance(3600) == t + 3600


def test_subprocess_server_cli_admin_and_sigterm() -> None:
    """`python -m gateway_dev.emulators` (what EmulatorProcess runs): fixed ports N, N+1.., options, control
    over /_emulator, a clean stop on SIGTERM."""
    port = free_port(2)
    with EmulatorProcess(vllm_replicas=1, latency="zero", port=port,
                         extra_args=["--kv-capacity-blocks", "128", "--model", "my/model"]) as p:
        assert p.vendor_url == f"http://127.0.0.1:{port}" and p.vllm_urls == [f"http://127.0.0.1:{port + 1}"]
        c = openai.OpenAI(base_url=p.openai_base_url, api_key="k", max_retries=0)
        assert c.chat.completions.create(model="gpt-4o", messages=MSG).choices
        v = openai.OpenAI(base_url=f"{p.vllm_urls[0]}/v1", api_key="k", max_retries=0)
        assert [m.id for m in v.models.list()] == ["my/model"]
        p.inject_fault("openai", "status=503")
        with pytest.raises(openai.InternalServerError):
            c.chat.completions.create(model="gpt-4o", messages=MSG)
        assert p.calls("openai.chat") == 2
        before = p.state()["clock"]
        assert p.advance_clock(100) >= before + 100
        assert p.state(p.vllm_urls[0])["kv"]["queries"] == 0
        proc = p.proc
    assert proc is not None and proc.returncode == 0  # SIGTERM: clean stop
    assert "emulators stopped" in p.output[-1]


def test_the_sdks_are_the_pinned_versions() -> None:
    """The wire formats these tests check are those of these SDK versions (pyproject pins them)."""
    from importlib.metadata import version

    assert (version("openai"), version("anthropic"), version("google-genai")) == ("3.57.0", "2.14.0", "3.6.1")
