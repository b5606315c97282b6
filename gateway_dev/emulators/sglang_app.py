"""One SGLang replica (`python -m sglang.launch_server ... --enable-metrics`), the vLLM replica's sibling.

The same OpenAI surface (`/v1/chat/completions`, `/v1/completions`, `/v1/models`) and the same scheduler
shape (`--max-running-requests` ≈ `max_num_seqs`, a FIFO waiting queue), but SGLang's own parts:
- the prefix cache is RadixAttention (sglang_radix.py): reuse at token granularity, not 16-token blocks;
- `usage.prompt_tokens_details` is `{"cached_tokens": n}` only with `--enable-cache-report`, else null;
- `/health`, `/health_generate`, `/get_server_info` (and `/server_info`), `/get_model_info` (and
  `/model_info`), `/flush_cache` (refused while requests run or wait, as SGLang does);
- `/metrics` with SGLang's names (`sglang:num_running_reqs`, `sglang:num_queue_reqs`,
  `sglang:num_used_tokens`, `sglang:token_usage`, `sglang:cache_hit_rate`, `sglang:max_total_num_tokens`,
  `sglang:prompt_tokens_total`, `sglang:cached_tokens_total`, `sglang:num_requests_total`, ...).
docs/emulators.md cites SGLang's source for each.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import Metric
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway_dev.emulators.sglang_radix import RadixCache
from gateway_dev.emulators.vllm_app import VLLMReplica
from gateway_dev.emulators.vllm_metrics import LabelledFamilies, ReplicaMetrics
from gateway_dev.emulators.vllm_scheduler import Seq
from gateway_dev.emulators.web import EmulatorResponse, json_response

VERSION = "0.5.4+emulator"


class SGLangReplica(VLLMReplica):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = f"sglang{self.index}"

    @property
    def max_total_tokens(self) -> int:
        return self.config.kv_capacity_blocks * self.config.block_size

    def _new_cache(self) -> Any:
        return RadixCache(self.config.kv_capacity_blocks * self.config.block_size)

    def _new_seq(self, prompt: list[int], body: dict[str, Any], n_out: int) -> Seq:
        return Seq(prompt, [], n_out)  # total_blocks: the output tokens reserved at admission

    def _new_metrics(self) -> Any:
        return SGLangMetrics(self)

    def _report_cached(self, usage: dict[str, Any], seq: Seq) -> None:
        if self.config.enable_cache_report:
            usage["prompt_tokens_details"]["cached_tokens"] = seq.hit_tokens
        else:
            usage["prompt_tokens_details"] = None

    # -- scheduler ------------------------------------------------------------------------------------
    def _try_admit(self, seq: Seq) -> bool:
        if self.running >= self.config.max_num_seqs:
            return False
        admitted = self.kv.admit(seq.prompt, seq.total_blocks)
        if admitted is None:
            return False
        node, seq.hit_tokens = admitted
        seq.blocks = [node]  # type: ignore[list-item]
        self.running += 1
        return True

    def release(self, seq: Seq, output_tokens: list[int]) -> None:
        self.kv.finish(seq.blocks[0], seq.prompt, output_tokens, seq.total_blocks)
        seq.blocks = []
        self.running -= 1
        self._admit_waiting()

    # -- SGLang's own endpoints -----------------------------------------------------------------------
    def _server_info(self) -> dict[str, Any]:
        c = self.config
        return {"model_path": c.served_model_names[0], "served_model_name": c.served_model_names[0],
                "page_size": 1, "max_running_requests": c.max_num_seqs, "max_total_num_tokens": self.max_total_tokens,
                "context_length": self.max_model_len, "enable_metrics": True,
                "enable_cache_report": c.enable_cache_report, "disable_radix_cache": False,
                "schedule_policy": "fcfs", "version": VERSION}

    async def server_info(self, request: Request) -> EmulatorResponse:
        return json_response(self._server_info())

    async def model_info(self, request: Request) -> EmulatorResponse:
        return json_response({"model_path": self.config.served_model_names[0],
                              "tokenizer_path": self.config.served_model_names[0], "is_generation": True})

    async def flush_cache(self, request: Request) -> Response:
        if self.running or self.waiting:
            return Response("Cache not flushed.\nThere are running or waiting requests.", status_code=400)
        queries, hits = self.kv.queries, self.kv.hits  # the counters are the server's, not the cache's
        self.kv.reset()
        self.kv.queries, self.kv.hits = queries, hits
        self.on_flush()
        return Response("Cache flushed.\nPlease check backend logs for more details. (When there are running "
                        "or waiting requests, the operation will not be performed.)\n", status_code=200)

    def on_flush(self) -> None:
        """The whole cache was dropped (KV events: subclasses and publishers hook here)."""
        return None

    async def version(self, request: Request) -> EmulatorResponse:
        return json_response({"version": VERSION})

    def _extra_routes(self) -> list[Route]:
        return [*super()._extra_routes(),
            Route("/health_generate", self.health, methods=["GET"]),
            Route("/get_server_info", self.server_info, methods=["GET"]),
            Route("/server_info", self.server_info, methods=["GET"]),
            Route("/get_model_info", self.model_info, methods=["GET"]),
            Route("/model_info", self.model_info, methods=["GET"]),
            Route("/flush_cache", self.flush_cache, methods=["GET", "POST"]),
        ]


class SGLangMetrics(ReplicaMetrics):
    """SGLang's Prometheus families. `sglang:cache_hit_rate` is, as in SGLang, a recent-interval gauge: here the
    share of prompt tokens that hit since the previous scrape (the counters give the whole history)."""

    def __init__(self, replica: VLLMReplica) -> None:
        super().__init__(replica)
        self._seen = (0, 0)  # (queries, hits) at the previous scrape
        self._rate = 0.0

    def collect(self) -> Iterator[Metric]:
        r = self.replica
        kv = r.kv
        labels = ["model_name", "engine_type", "tp_rank", "pp_rank"]
        values = [r.config.served_model_names[0], "unified", "0", "0"]

        gauge, counter = LabelledFamilies(labels, values).pair()

        dq, dh = kv.queries - self._seen[0], kv.hits - self._seen[1]
        if dq > 0:
            self._rate, self._seen = dh / dq, (kv.queries, kv.hits)
        capacity = kv.capacity
        yield gauge("sglang:num_running_reqs", "The number of running requests.", r.running)
        yield gauge("sglang:num_used_tokens", "The number of used tokens.", kv.used)
        yield gauge("sglang:token_usage", "The token usage.", kv.used / capacity)
        yield gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", len(r.waiting))
        yield gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", self._rate)
        yield gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", capacity)
        yield gauge("sglang:gen_throughput", "The generation throughput (token/s).", 0.0)
        yield counter("sglang:prompt_tokens", "Number of prefill tokens processed.", kv.queries)
        yield counter("sglang:generation_tokens", "Number of generation tokens processed.", self.generation_tokens)
        yield counter("sglang:cached_tokens", "Number of cached prompt tokens.", kv.hits)
        yield counter("sglang:num_requests", "Number of requests processed.", sum(self.success.values()))
        yield counter("sglang:num_aborted_requests", "Number of requests aborted.", self.success.get("abort", 0))
        yield self.ttft.family("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                               labels, values)
        yield self.e2e.family("sglang:e2e_request_latency_seconds",
                              "Histogram of End-to-end request latency in seconds", labels, values)
