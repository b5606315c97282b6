"""Bounded Prometheus label values for model names.

A caller picks the model name it sends; every distinct value would become a new time series. The
`model` label is therefore the model's name only when it is known — the price book lists it, or an
upstream answered it successfully (vendors refuse names they do not serve) — and `other` otherwise.
A hard cap on distinct names per process stops even a flood of real names from growing the series.
"""

from __future__ import annotations

import threading

OTHER = "other"
MAX_MODELS = 500
_seen: set[str] = set()
_lock = threading.Lock()


def model_label(model: str, price_source: str, status: int) -> str:
    if not model:
        return "-"
    if model in _seen:
        return model
    if price_source in ("unknown", "self-hosted") and status >= 400:
        return OTHER
    with _lock:
        if len(_seen) >= MAX_MODELS:
            return OTHER
        _seen.add(model)
    return model
