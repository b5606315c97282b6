"""vLLM replica emulators driven by the `openai` SDK: Automatic Prefix Caching as vLLM reports it, `/metrics`
moving when a prefix repeats and when capacity forces eviction, the `max_num_seqs` queue, restarts."""

from __future__ import annotations

import threading
import time

import httpx2
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway_dev.emulators import EmulatorSet, VLLMConfig

pytestmark = pytest.mark.timeout(60)
MODEL = "Qwen/Qwen3-8B"


def metrics(url: str) -> dict[str, float]:
    text = httpx2.get(f"{url}/metrics").text
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name.endswith("_bucket"):
                continue
            key = s.name + (f"[{s.labels['finished_reason']}]" if "finished_reason" in s.labels else "")
            out[key] = s.value
    return out


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


def _doc(tag: str, sentences: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": f"Document {tag}. " + " ".join(
        f"{tag} clause {i} states the obligations of party {i % 7}." for i in range(sentences))},
        {"role": "user", "content": f"Summarize {tag}."}]


def test_prefix_repeat_moves_hits_queries_and_ttft(emu: EmulatorSet, sdk_check) -> None:
    url = emu.vllm_urls[0]
    client = _client(url)
    before = metrics(url)
    first = client.chat.completions.create(model=MODEL, messages=_doc("alpha", 40))
    sdk_check(first)
    n = first.usage.prompt_tokens
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    second = client.chat.completions.create(model=MODEL, messages=_doc("alpha", 40))
    hit = second.usage.prompt_tokens_details.cached_tokens
    assert hit == (n - 1) // 16 * 16  # full 16-token blocks, capped below the prompt length
    after = metrics(url)
    assert after["vllm:prefix_cache_queries_total"] - before["vllm:prefix_cache_queries_total"] == 2 * n
    assert after["vllm:prefix_cache_hits_total"] - before["vllm:prefix_cache_hits_total"] == hit
    assert after["vllm:time_to_first_token_seconds_count"] - before["vllm:time_to_first_token_seconds_count"] == 2
    assert after["vllm:request_success_total[stop]"] - before.get("vllm:request_success_total[stop]", 0) == 2
    assert after["vllm:num_requests_running"] == 0 and after["vllm:kv_cache_usage_perc"] == 0
    # the other replica has its own cache
    other = _client(emu.vllm_urls[1]).chat.completions.create(model=MODEL, messages=_doc("alpha", 40))
    assert other.usage.prompt_tokens_details.cached_tokens == 0
    # a different salt is a different first block
    salted = client.chat.completions.create(model=MODEL, messages=_doc("alpha", 40),
                                            extra_body={"cache_salt": "tenant-b"})
    assert salted.usage.prompt_tokens_details.cached_tokens == 0


def test_capacity_forces_lru_eviction() -> None:
    with EmulatorSet(vllm_replicas=1, latency="zero", vllm=VLLMConfig(kv_capacity_blocks=64)) as emu:
        url = emu.vllm_urls[0]
        client = _client(url)

        def hit(messages: list[dict[str, str]]) -> int:
            r = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=4)
            return r.usage.prompt_tokens_details.cached_tokens

        small = _doc("beta", 20)  # ~270 tokens, 18 blocks
        assert hit(small) == 0
        full = hit(small)
        assert full > 240
        before = metrics(url)["vllm:prefix_cache_hits_total"]
        big = _doc("gamma", 60)  # ~780 tokens: needs 49 of the 64 blocks, more than are unused
        assert hit(big) == 0
        after_eviction = hit(small)
        assert after_eviction < full  # LRU evicted the small prompt's blocks (its tail first)
        big_again = hit(big)
        assert big_again > 700  # the most recent prompt survived
        m = metrics(url)
        assert m["vllm:prefix_cache_hits_total"] - before == after_eviction + big_again
        assert m["vllm:kv_cache_usage_perc"] == 0
        with pytest.raises(openai.BadRequestError) as e:  # more than the whole KV cache
            client.chat.completions.create(model=MODEL, messages=_doc("delta", 80))
        assert "maximum context length is 1024 tokens" in e.value.message


def test_max_num_seqs_queue_and_running_gauges() -> None:
    with EmulatorSet(vllm_replicas=1, latency="base=0.4", vllm=VLLMConfig(max_num_seqs=1)) as emu:
        url = emu.vllm_urls[0]
        client = _client(url)
        results: list[float] = []

        def one(i: int) -> None:
            t0 = time.perf_counter()
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"Question {i}"}])
            results.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 5
        seen = {}
        while time.monotonic() < deadline:
            m = metrics(url)
            if m["vllm:num_requests_waiting"] == 2:
                seen = m
                break
            time.sleep(0.02)
        for t in threads:
            t.join()
        assert seen["vllm:num_requests_running"] == 1 and seen["vllm:kv_cache_usage_perc"] > 0
        assert max(results) >= 1.2  # the third waited for two 0.4 s prefills
        end = metrics(url)
        assert end["vllm:num_requests_running"] == 0 and end["vllm:num_requests_waiting"] == 0


def test_endpoints_stream_and_errors(emu: EmulatorSet, sdk_check) -> None:
    url = emu.vllm_urls[0]
    client = _client(url)
    assert httpx2.get(f"{url}/health").status_code == 200
    assert [m.id for m in client.models.list()] == [MODEL]
    chunks = list(client.chat.completions.create(model=MODEL, messages=_doc("eps", 5), stream=True,
                                                 stream_options={"include_usage": True}))
    for c in chunks:
        sdk_check(c)
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens_details.cached_tokens == 0
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="other/model", messages=_doc("eps", 5))
    legacy = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=8)
    assert legacy.choices[0].finish_reason == "length" and legacy.usage.completion_tokens == 8
    tok = httpx2.post(f"{url}/tokenize", json={"model": MODEL, "prompt": "hello world"}).json()
    assert tok["count"] == 2 and len(tok["tokens"]) == 2


def test_stop_and_restart_a_replica(emu: EmulatorSet) -> None:
    url = emu.vllm_urls[1]
    client = _client(url)
    client.chat.completions.create(model=MODEL, messages=_doc("zeta", 30))
    emu.stop_vllm(1)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model=MODEL, messages=_doc("zeta", 30))
    assert httpx2.get(f"{emu.vllm_urls[0]}/health").status_code == 200  # the other one is unaffected
    emu.start_vllm(1)
    assert emu.vllm_urls[1] == url  # same port
    again = _client(url).chat.completions.create(model=MODEL, messages=_doc("zeta", 30))
    assert again.usage.prompt_tokens_details.cached_tokens == 0  # a restarted vLLM starts cold
    assert metrics(url)["vllm:prefix_cache_queries_total"] == again.usage.prompt_tokens


def test_a_client_leaving_a_stream_frees_its_blocks() -> None:
    with EmulatorSet(vllm_replicas=1, latency="itl=0.05") as emu:
        url = emu.vllm_urls[0]
        with httpx2.stream("POST", f"{url}/v1/chat/completions", json={
                "model": MODEL, "stream": True, "messages": [{"role": "user", "content": "A long story"}]}) as resp:
            lines = resp.iter_lines()  # keep it: a collected line iterator closes the stream
            next(lines)
            assert metrics(url)["vllm:num_requests_running"] == 1
        deadline = time.monotonic() + 3
        while metrics(url)["vllm:num_requests_running"] and time.monotonic() < deadline:
            time.sleep(0.02)
        m = metrics(url)
        assert m["vllm:num_requests_running"] == 0 and m["vllm:kv_cache_usage_perc"] == 0
        assert m["vllm:request_success_total[abort]"] == 1
