"""Tuning of the semantic layer: the settings file's `semantic.params` (flat), with defaults.

Guard fields (`near_copy_ratio`, `single_change_ratio`, `marker_ratio`, `marker_ratio_zh`,
`same_content_margin`, `cross_language`, `entity_check`) go to `GuardParams`; the rest are here.
Unknown names are an error at start-up, so a typo cannot silently change the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from gateway.semantic.guard import GuardParams


@dataclass(frozen=True, slots=True)
class SemanticOptions:
    guard: GuardParams = field(default_factory=GuardParams)
    anchor_cosine: float | None = None  # override the embedder's cosine for similarity 0.90
    top_k: int = 5  # candidates checked by the guard, best first
    purge_interval: float = 300.0  # seconds between sweeps of expired points
    batch_window_ms: float = 2.0  # the embedder collects requests this long into one batch
    max_batch: int = 32
    lru_size: int = 4096  # recent embeddings kept
    embed_timeout: float = 0.5  # a slower embedding is a miss (the request goes upstream)
    max_question_chars: int = 2000  # longer questions skip the layer

    @classmethod
    def from_params(cls, params: dict[str, Any] | None) -> SemanticOptions:
        params = dict(params or {})
        guard_names = {f.name for f in fields(GuardParams)}
        guard = GuardParams.from_settings({k: params.pop(k) for k in list(params) if k in guard_names})
        known = {f.name for f in fields(cls)} - {"guard"}
        unknown = set(params) - known
        if unknown:
            raise ValueError(f"unknown semantic.params: {sorted(unknown)} "
                             f"(known: {sorted(known | guard_names)})")
        return cls(guard=guard, **params)
