"""One latency model for every emulator.

    time to first token = base + prefill x uncached input tokens + cached x cached input tokens (+ queueing)
    then one token every `inter_token` seconds.

Queueing only exists where a vendor really queues in a way the gateway can observe: the vLLM replicas
(`max_num_seqs` and a waiting queue). The hosted vendors are modelled as unbounded.

The defaults keep the realistic *ratios* (prefill is ~25x dearer per token than a cache read, decode
dominates short prompts) but are scaled down ~20x so a test suite with hundreds of calls stays fast.
`PRESETS["realistic"]` is the unscaled figure set of an 8B model on one H100 (llm-d-inference-sim's
`8b-h100-balanced-per-token` profile), for benchmarks.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, fields, replace

# Short names accepted in the `x-emulator-latency` header, the CLI and the env variable.
_ALIASES = {
    "base": "base_s",
    "prefill": "prefill_per_token_s",
    "cached": "cached_per_token_s",
    "itl": "inter_token_s",
    "inter_token": "inter_token_s",
}


@dataclass(slots=True)
class LatencyModel:
    base_s: float = 0.004
    prefill_per_token_s: float = 4e-6
    cached_per_token_s: float = 1.5e-7
    inter_token_s: float = 4e-4

    def ttft(self, uncached_tokens: int, cached_tokens: int = 0) -> float:
        return max(
            0.0,
            self.base_s + uncached_tokens * self.prefill_per_token_s + cached_tokens * self.cached_per_token_s,
        )

    def decode(self, output_tokens: int) -> float:
        """Time from the first output token to the last."""
        return max(0, output_tokens - 1) * self.inter_token_s

    @property
    def is_zero(self) -> bool:
        return not (self.base_s or self.prefill_per_token_s or self.cached_per_token_s or self.inter_token_s)

    def set(self, **values: float) -> LatencyModel:
        """Change figures in place (accepts the short names); returns self. Running emulators see it at once."""
        for key, value in values.items():
            setattr(self, _field_name(key), float(value))
        return self

    def zero(self) -> LatencyModel:
        return self.set(base_s=0, prefill_per_token_s=0, cached_per_token_s=0, inter_token_s=0)

    def copy(self) -> LatencyModel:
        return replace(self)

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def with_overrides(self, spec: str | None) -> LatencyModel:
        """A per-request copy with `spec` ("base=0.1,itl=0.01" or a preset name) applied; self if none."""
        if not spec:
            return self
        return parse_latency(spec, base=self.copy())

    @classmethod
    def preset(cls, name: str) -> LatencyModel:
        try:
            return replace(PRESETS[name])
        except KeyError:
            raise ValueError(f"unknown latency preset {name!r}; known: {', '.join(PRESETS)}") from None


PRESETS: dict[str, LatencyModel] = {
    "default": LatencyModel(),
    "zero": LatencyModel(0.0, 0.0, 0.0, 0.0),
    # llm-d-inference-sim 8b-h100-balanced-per-token: overhead 30 ms, 250 us/token prefill, ITL 12 ms.
    "realistic": LatencyModel(base_s=0.03, prefill_per_token_s=2.5e-4, cached_per_token_s=1e-5, inter_token_s=0.012),
}


def _field_name(key: str) -> str:
    key = key.strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in {f.name for f in fields(LatencyModel)}:
        raise ValueError(f"unknown latency setting {key!r}")
    return key


def parse_latency(spec: str, base: LatencyModel | None = None) -> LatencyModel:
    """Parse "realistic", "zero", or "base=0.03,prefill=0.00025,cached=1e-5,itl=0.012" (a preset may lead:
    "realistic,itl=0")."""
    model = base if base is not None else LatencyModel()
    for part in spec.replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            preset = LatencyModel.preset(part)
            for f in fields(LatencyModel):
                setattr(model, f.name, getattr(preset, f.name))
            continue
        key, _, value = part.partition("=")
        setattr(model, _field_name(key), float(value))
    return model


async def pause(seconds: float) -> None:
    """Real sleep (never the fake clock); skips the event-loop round trip when there is nothing to wait."""
    if seconds > 0:
        await asyncio.sleep(seconds)
