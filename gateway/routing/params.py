"""Tuning of the vLLM routing layer: `routing.params` in the config file (docs/routing.md explains each)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class RoutingParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # ---- prefix index (cache_aware) ----
    chunk_bytes: int = Field(64, ge=8)  # bytes per index chunk: ~16 tokens, vLLM's default block
    max_chunks: int = Field(4096, ge=1)  # chunks hashed per request (~256 KB of prompt)
    # Chunks each replica's index holds. None: learned from `vllm:cache_config_info` (num_gpu_blocks ×
    # block_size tokens), else `default_index_capacity`.
    index_capacity: int | None = Field(None, ge=1)
    default_index_capacity: int = Field(31_250, ge=1)  # llm-d's lruCapacityPerServer
    # Rendered bytes per token: converts the replica's KV capacity (tokens) into index chunks. This is
    # the starting value; with `calibrate` it is learned from vllm:prompt_tokens_total.
    bytes_per_token: float = Field(4.0, gt=0)
    calibrate: bool = True

    # ---- cache_aware choice ----
    cache_threshold: float = Field(0.3, ge=0, le=1)  # prefix share below which a decision is `least_loaded`
    # Weight of the prefill work this gateway has in flight on a replica beyond the least such (predicted
    # uncached bytes of its requests there), as a share of this prompt, against the uncached share.
    w_pending: float = Field(0.5, ge=0)
    # On a replica holding the request's prefix, count only the prefill queued there by the same prefix group,
    # and for a request that is no session's next turn apply the load guard there only when that group alone
    # has `balance_abs` requests in flight there (a group grows onto a second one when its own load demands it).
    group_pending: bool = True
    w_load: float = Field(0.5, ge=0)  # weight of (load − min load) / (mean load + 1) against the uncached share
    # A new session's load term weighs the turns an average session brings (requests per new session,
    # learned from the traffic), at most `expected_turns_max`: the load it joins lasts its whole life, the
    # prefill of a prefix it does not find there is paid once. 1 (or False) weighs this request alone.
    expected_turns: bool = True
    expected_turns_max: float = Field(4.0, ge=1)
    w_kv: float = Field(0.25, ge=0)  # weight of (kv_cache_usage_perc − the lowest one)
    # Load guard: a replica is overloaded when its load exceeds the least-loaded one's by `balance_abs`
    # AND is at least `balance_rel` × that least load (SGLang's two conditions, applied per replica).
    balance_abs: float = Field(8, ge=0)
    balance_rel: float = Field(1.5, ge=1)

    # ---- KV events (precise mode, kv_events.py): vLLM's ZMQ stream of the blocks each replica holds ----
    # Endpoints per replica (name host:port -> "tcp://host:5557"), or `kv_events_port` on each replica's host
    # (a pod's --kv-events-config endpoint). Neither: the prediction alone.
    kv_events_endpoints: dict[str, str] = Field(default_factory=dict)
    kv_events_port: int | None = Field(None, ge=1, le=65535)
    kv_events_stale_s: float = Field(2.0, gt=0)  # a request placed this long without a batch: stream stopped

    # ---- session affinity ----
    session_affinity: bool = True
    session_ttl: float = Field(3600.0, gt=0)  # idle seconds before a session's binding is forgotten
    local_sessions: int = Field(100_000, ge=1)  # bindings kept in process (the store holds the shared copy)

    # ---- health ----
    eject_after_5xx: int = Field(3, ge=1)  # consecutive 5xx answers that eject a replica
    eject_base_s: float = Field(2.0, ge=0)  # first ejection lasts at least this; doubles per repeat
    eject_max_s: float = Field(60.0, ge=0)
    unhealthy_after: int = Field(2, ge=1)  # consecutive failed /health checks that mark a replica down
    probe_timeout: float = Field(2.0, gt=0)  # /health, /metrics, /v1/models calls
    hit_rate_window: float = Field(60.0, gt=0)  # seconds of counters behind gateway_vllm_prefix_cache_hit_rate

    @classmethod
    def parse(cls, params: dict[str, Any] | None) -> RoutingParams:
        return cls.model_validate(params or {})
