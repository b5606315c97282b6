"""Fault injection: per request (the `x-emulator-fault` header) or per emulator (`FaultController`).

Spec grammar (header value, `inject()` argument, CLI): comma- or semicolon-separated items
    status=529              answer this status with the vendor's own error body (any 4xx/5xx)
    message=...             the error message to use with `status` (no commas)
    retry_after=2           add a `retry-after` header (seconds) to the error
    timeout                 hold the request until the client gives up (or `timeout=5`: answer after 5 s)
    slow_first_byte=2.0     wait 2 s before the first byte of the response (headers included)
    cut_stream_after=3      drop the connection after 3 stream events (non-stream: after half the body)
    stream_error_after=2    after 2 events send the vendor's in-stream error event (HTTP status stays 200)
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, fields

FAULT_HEADER = "x-emulator-fault"


@dataclass(slots=True, frozen=True)
class Fault:
    status: int | None = None
    message: str | None = None
    retry_after: float | None = None
    timeout: float | None = None
    slow_first_byte: float | None = None
    cut_stream_after: int | None = None
    stream_error_after: int | None = None

    @classmethod
    def parse(cls, spec: str) -> Fault:
        values: dict[str, object] = {}
        for part in spec.replace(";", ",").split(","):
            part = part.strip()
            if not part:
                continue
            key, eq, raw = part.partition("=")
            key = key.strip().lower().replace("-", "_")
            raw = raw.strip()
            if key == "timeout":
                values["timeout"] = float(raw) if eq and raw else math.inf
            elif key in ("status", "cut_stream_after", "stream_error_after"):
                values[key] = int(raw)
            elif key in ("slow_first_byte", "retry_after"):
                values[key] = float(raw)
            elif key == "message":
                values[key] = raw
            elif key.isdigit():  # a bare status code: "529"
                values["status"] = int(key)
            else:
                raise ValueError(f"unknown fault {part!r} (known: {', '.join(f.name for f in fields(cls))})")
        return cls(**values)  # type: ignore[arg-type]

    def describe(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                parts.append(f.name if value == math.inf else f"{f.name}={value}")
        return ",".join(parts)


def as_fault(fault: Fault | str | int) -> Fault:
    if isinstance(fault, Fault):
        return fault
    if isinstance(fault, int):
        return Fault(status=fault)
    return Fault.parse(fault)


class FaultController:
    """Faults for one emulator: queued ones (each used by one request, in order) and an optional
    persistent one. A request's own `x-emulator-fault` header wins over both."""

    def __init__(self) -> None:
        self._queue: deque[Fault] = deque()
        self._lock = threading.Lock()
        self.always: Fault | None = None

    def inject(self, fault: Fault | str | int, count: int = 1) -> None:
        """The next `count` requests get `fault`."""
        f = as_fault(fault)
        with self._lock:
            self._queue.extend([f] * count)

    @property
    def next_status(self) -> int | None:
        with self._lock:
            return self._queue[0].status if self._queue else None

    @next_status.setter
    def next_status(self, status: int | None) -> None:
        if status is None:
            self.clear()
        else:
            self.inject(Fault(status=status))

    def set_always(self, fault: Fault | str | int | None) -> None:
        self.always = None if fault is None else as_fault(fault)

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
        self.always = None

    @property
    def pending(self) -> int:
        return len(self._queue)

    def take(self, header_value: str | None) -> Fault | None:
        if header_value:
            return Fault.parse(header_value)
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.always


class Faults:
    """All fault controllers of an emulator set: `faults.openai`, `.anthropic`, `.gemini`, `.deepseek`,
    `.vllm[i]`; `faults["openai"]` works too."""

    VENDORS = ("openai", "anthropic", "gemini", "deepseek", "mistral")

    def __init__(self, vllm_replicas: int = 0) -> None:
        self.openai = FaultController()
        self.anthropic = FaultController()
        self.gemini = FaultController()
        self.deepseek = FaultController()
        self.mistral = FaultController()
        self.vllm = [FaultController() for _ in range(vllm_replicas)]

    def __getitem__(self, name: str) -> FaultController:
        if name.startswith("vllm"):
            return self.vllm[int(name[4:] or 0)]
        if name in self.VENDORS:
            return getattr(self, name)
        raise KeyError(name)

    def clear_all(self) -> None:
        for name in self.VENDORS:
            getattr(self, name).clear()
        for c in self.vllm:
            c.clear()
