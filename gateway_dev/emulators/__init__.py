"""Vendor emulators: OpenAI, Anthropic, Gemini, DeepSeek and vLLM replicas that follow each vendor's caching
rules and usage fields. The ground truth for the tests, the demo and every benchmark (docs/emulators.md)."""

from gateway_dev.emulators.clock import Clock
from gateway_dev.emulators.faults import FAULT_HEADER, Fault, FaultController, Faults
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.emulators.latency import LatencyModel, parse_latency
from gateway_dev.emulators.process import EmulatorProcess
from gateway_dev.emulators.vllm_app import VLLMConfig

__all__ = ["FAULT_HEADER", "Clock", "EmulatorProcess", "EmulatorSet", "Fault", "FaultController", "Faults",
           "LatencyModel", "VLLMConfig", "parse_latency"]
