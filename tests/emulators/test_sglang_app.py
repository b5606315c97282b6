"""The SGLang replica emulator: RadixAttention reuse at token granularity, LRU eviction of unlocked leaves,
SGLang's endpoints and metric names, `--enable-cache-report`."""

from __future__ import annotations

import httpx2
import openai
from prometheus_client.parser import text_string_to_metric_families

from gateway_dev.emulators import EmulatorSet, VLLMConfig
from gateway_dev.emulators.sglang_radix import RadixCache

MODEL = "Qwen/Qwen3-8B"


def test_radix_reuses_any_prefix_token_by_token_and_caps_below_the_prompt() -> None:
    cache = RadixCache(1000)
    node, hit = cache.admit(list(range(100)), 10)  # type: ignore[misc]
    assert hit == 0
    cache.finish(node, list(range(100)), list(range(500, 510)), 10)
    assert cache.match([*list(range(37)), 999])[0] == 37  # not a multiple of any block size
    assert cache.match(list(range(100)))[0] == 99  # one token is always computed
    assert cache.match(list(range(100)) + list(range(500, 505)) + [7])[0] == 105  # the output was cached too
    assert cache.used == 0 and cache.tree_tokens == 110


def test_radix_evicts_unlocked_leaves_lru_and_never_a_running_prefix() -> None:
    cache = RadixCache(300)
    a = [1, *list(range(1000, 1099))]
    b = [2, *list(range(2000, 2099))]
    na, _ = cache.admit(a, 0)  # type: ignore[misc]
    nb, _ = cache.admit(b, 0)  # type: ignore[misc]
    cache.finish(nb, b, [], 0)  # b finished; a still runs
    c = [3, *list(range(3000, 3199))]
    got = cache.admit(c, 0)  # needs 200: only b (unlocked) can go
    assert got is not None
    assert cache.match([*a, 0])[0] == 100 and cache.match([*b, 0])[0] == 0
    assert cache.admit([4] * 50, 0) is None  # everything left is locked: wait
    cache.finish(na, a, [], 0)


def test_sglang_replica_surface_metrics_and_cache_report() -> None:
    configs = [VLLMConfig(served_model_names=[MODEL], engine="sglang", enable_cache_report=True),
               VLLMConfig(served_model_names=[MODEL], engine="sglang")]
    with EmulatorSet(vllm_configs=configs) as emu:
        url, plain = emu.sglang_urls
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        system = {"role": "system", "content": "policy " * 80}
        client.chat.completions.create(model=MODEL, messages=[system, {"role": "user", "content": "one"}])
        second = client.chat.completions.create(model=MODEL, messages=[system, {"role": "user", "content": "two"}])
        assert second.usage and second.usage.prompt_tokens_details
        cached = second.usage.prompt_tokens_details.cached_tokens
        assert 80 < cached < second.usage.prompt_tokens
        quiet = openai.OpenAI(base_url=f"{plain}/v1", api_key="x", max_retries=0).chat.completions.create(
            model=MODEL, messages=[system, {"role": "user", "content": "one"}])
        assert quiet.usage and quiet.usage.prompt_tokens_details is None  # no --enable-cache-report
        info = httpx2.get(f"{url}/get_server_info").json()
        assert info["page_size"] == 1 and info["max_total_num_tokens"] == 8192 * 16
        assert httpx2.get(f"{url}/health").status_code == 200
        assert httpx2.get(f"{url}/model_info").json()["model_path"] == MODEL
        samples = {s.name: s.value for f in text_string_to_metric_families(httpx2.get(f"{url}/metrics").text)
                   for s in f.samples}
        assert samples["sglang:cached_tokens_total"] == cached
        assert samples["sglang:num_requests_total"] == 2 and samples["sglang:num_queue_reqs"] == 0
        assert samples["sglang:num_running_reqs"] == 0 and samples["sglang:num_used_tokens"] == 0
        assert 0 < samples["sglang:cache_hit_rate"] < 1
        assert httpx2.post(f"{url}/flush_cache").status_code == 200
        third = client.chat.completions.create(model=MODEL, messages=[system, {"role": "user", "content": "two"}])
        assert third.usage and third.usage.prompt_tokens_details
        assert third.usage.prompt_tokens_details.cached_tokens == 0  # flushed
