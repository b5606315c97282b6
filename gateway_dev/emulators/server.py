"""The emulators as a standalone server: `python -m gateway_dev.emulators` / `llm-cache-gateway emulator`.

The vendor app listens on `port`, vLLM replica i on `port + 1 + i` (all free ports when `port` is 0), the
cloud-platform emulators (Azure OpenAI, Vertex AI, Bedrock) on `platform_port` (default: a free port). The
URLs are printed, the last line machine-readable (`EMULATORS {...json...}`), and SIGTERM/SIGINT stop it
cleanly. The clock follows real time here (still movable through `POST /_emulator/clock`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from dataclasses import replace
from typing import Any

from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.emulators.latency import parse_latency
from gateway_dev.emulators.vllm_app import VLLMConfig

LATENCY_ENV = "GATEWAY_EMULATOR_LATENCY"


def run(port: int, vllm_replicas: int, host: str = "127.0.0.1", *, latency: str | None = None,
        kv_capacity_blocks: int | None = None, block_size: int | None = None, max_num_seqs: int | None = None,
        max_model_len: int | None = None, served_model_names: list[str] | None = None,
        output_tokens: int | None = None, valid_keys: list[str] | None = None, frozen_clock: bool = False,
        platform_port: int = 0, sglang_replicas: int = 0, shared_prefill: bool = False,
        enable_cache_report: bool = False, kv_events: bool = False,
        ready: threading.Event | None = None, stop: threading.Event | None = None,
        **latency_overrides: float) -> None:
    """Serve until SIGTERM/SIGINT (or `stop` is set). `latency` is a preset ("default", "zero", "realistic")
    or "base=..,prefill=..,cached=..,itl=.." (env GATEWAY_EMULATOR_LATENCY when None); `latency_overrides`
    (base=, prefill=, cached=, itl= or the long names) apply on top."""
    model = parse_latency(latency or os.environ.get(LATENCY_ENV) or "default")
    model.set(**{k: v for k, v in latency_overrides.items() if v is not None})
    cfg: dict[str, Any] = {"kv_capacity_blocks": kv_capacity_blocks, "block_size": block_size,
                           "max_num_seqs": max_num_seqs, "max_model_len": max_model_len,
                           "served_model_names": served_model_names, "shared_prefill": shared_prefill,
                           "enable_cache_report": enable_cache_report,
                           "kv_events": "tcp://127.0.0.1:*" if kv_events else None}
    vllm = VLLMConfig(**{k: v for k, v in cfg.items() if v is not None})
    configs = [replace(vllm, served_model_names=list(vllm.served_model_names)) for _ in range(vllm_replicas)]
    configs += [replace(vllm, engine="sglang", served_model_names=list(vllm.served_model_names))
                for _ in range(sglang_replicas)]
    vllm_replicas = len(configs)
    emu = EmulatorSet(vllm_configs=configs, latency=model, frozen_clock=frozen_clock,
                      valid_keys=set(valid_keys) if valid_keys else None, output_tokens=output_tokens or 40,
                      vllm=vllm, host=host, port=port,
                      vllm_ports=[port + 1 + i for i in range(vllm_replicas)] if port else None,
                      platform_port=platform_port)
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    with emu:
        info = emu.describe()
        print(f"vendor emulators (OpenAI, Anthropic, Gemini, DeepSeek): {info['vendor_url']}")
        print(f"  OpenAI/DeepSeek base_url: {info['openai_base_url']}   "
              f"Anthropic/Gemini base_url: {info['vendor_url']}")
        print(f"cloud platforms (Azure OpenAI, Vertex AI, Bedrock): {info['platform_url']}   "
              f"Vertex token endpoint: {info['platform_url']}/token")
        for i, url in enumerate(info["vllm_urls"]):
            engine = "SGLang" if url in info["sglang_urls"] else "vLLM"
            print(f"{engine} replica {i} ({', '.join(vllm.served_model_names)}): {url}")
        print(f"latency: {model.as_dict()}")
        print("EMULATORS " + json.dumps(info), flush=True)
        if ready is not None:
            ready.set()
        while not stop.wait(0.5):
            pass
    print("emulators stopped", flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The CLI options (shared by `python -m gateway_dev.emulators` and `llm-cache-gateway emulator`)."""
    p.add_argument("--port", type=int, default=8090, help="vendor port; vLLM replicas on port+1..port+K (0: free)")
    p.add_argument("--platform-port", type=int, default=0, help="Azure OpenAI / Vertex AI / Bedrock port (0: free)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--vllm-replicas", type=int, default=0)
    p.add_argument("--sglang-replicas", type=int, default=0,
                   help="SGLang replicas (radix cache, SGLang metrics), on the ports after the vLLM ones")
    p.add_argument("--shared-prefill", action="store_true",
                   help="concurrent prefills on a replica share one compute lane (TTFT grows with load)")
    p.add_argument("--kv-events", action="store_true",
                   help="vLLM replicas publish KV events over ZMQ as vLLM does (free loopback ports, listed)")
    p.add_argument("--enable-cache-report", action="store_true",
                   help="SGLang replicas report usage.prompt_tokens_details.cached_tokens (SGLang's flag)")
    p.add_argument("--latency", default=None, help='preset "default" | "zero" | "realistic", or "base=..,prefill=..'
                   ',cached=..,itl=.." (env GATEWAY_EMULATOR_LATENCY)')
    for name in ("base", "prefill", "cached", "itl"):
        p.add_argument(f"--{name}", type=float, default=None, help=f"latency figure {name} (seconds)")
    p.add_argument("--kv-capacity-blocks", type=int, default=None, help="vLLM KV capacity in blocks")
    p.add_argument("--block-size", type=int, default=None)
    p.add_argument("--max-num-seqs", type=int, default=None)
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--model", action="append", default=None, help="vLLM served model name (repeatable)")
    p.add_argument("--output-tokens", type=int, default=None, help="target answer length in tokens")
    p.add_argument("--valid-key", action="append", default=None, help="accepted API key (default: any)")


def run_from_args(args: argparse.Namespace) -> int:
    run(args.port, args.vllm_replicas, args.host, latency=args.latency, kv_capacity_blocks=args.kv_capacity_blocks,
        block_size=args.block_size, max_num_seqs=args.max_num_seqs, max_model_len=args.max_model_len,
        served_model_names=args.model, output_tokens=args.output_tokens, valid_keys=args.valid_key,
        platform_port=getattr(args, "platform_port", 0), sglang_replicas=getattr(args, "sglang_replicas", 0),
        shared_prefill=getattr(args, "shared_prefill", False),
        enable_cache_report=getattr(args, "enable_cache_report", False), kv_events=getattr(args, "kv_events", False),
        base=args.base, prefill=args.prefill, cached=args.cached, itl=args.itl)
    return 0


def main(argv: list[str] | None = None, prog: str = "python -m gateway_dev.emulators") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
