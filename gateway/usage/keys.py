"""Store keys and aggregate fields of the usage data (one place for the writer and the readers).

Every per-tenant key carries the tenant as a Redis Cluster hash tag (`{acme}`), so one tenant's
keys share a slot. Layout (T = tenant, D = UTC day `2026-11-30`, H = UTC hour `2026-11-30T13`):

    usage:tenants                      set of tenants seen
    usage:records                      capped log of every record (newest first)
    usage:{T}:records                  capped log of T's records
    usage:{T}:agg   :agg:d:D   :agg:h:H               totals: all time, per day, per hour
    usage:{T}:models                   set of "provider/model"
    usage:{T}:model:<provider/model>:agg   …:d:D      per model
    usage:{T}:templates                set of "id@version" ("-:<provider/model>" for requests without a template)
    usage:{T}:tpl:<id@version>:agg     …:d:D          per template
    usage:{T}:tpl:<id@version>:meta    hash: provider, model last seen (for break-even prices)

Aggregates are hashes of counters (HINCRBY / HINCRBYFLOAT), so every gateway replica adds into
the same numbers; the fields are `FIELDS`. Prefix breaks (the explainer's record field `prefix`)
count in the same hashes, per cause: `brk_<cause>`, `brk_<cause>_tokens`, `brk_<cause>_usd`, and
`brk_reordered…` for tool changes that were only a new order (what sorting tools would save).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.usage.record import UsageRecord

DAY_TTL = 400 * 86400.0
HOUR_TTL = 15 * 86400.0
NO_TEMPLATE = "-"  # requests without a template: "-:<provider>/<model>", one row per model
BREAK_CAUSES = ("model_changed", "tools_changed", "system_changed", "history_edited", "volatile_value", "expired")
_BREAK_KINDS = (*BREAK_CAUSES, "reordered")
TENANTS = "usage:tenants"
ALL_RECORDS = "usage:records"

INT_FIELDS: tuple[str, ...] = (
    "requests", "errors", "misses", "bypass", "hits_response", "hits_semantic", "hits_single_flight",
    "upstream_requests", "provider_reads", "provider_writes", "stream_requests",
    "input_tokens", "cached_input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
    "cache_write_long_tokens", "output_tokens", "reasoning_tokens", "total_tokens",
    "hit_input_tokens", "hit_cached_input_tokens", "hit_output_tokens", "ttft_count", "storage_events",
)
FLOAT_FIELDS: tuple[str, ...] = (
    "cost_usd", "cost_without_cache_usd", "saved_usd", "saved_response_usd", "saved_semantic_usd",
    "saved_single_flight_usd", "saved_provider_usd", "storage_cost_usd", "latency_s_sum", "ttft_s_sum",
)
BREAK_INT_FIELDS = tuple(f for c in _BREAK_KINDS for f in (f"brk_{c}", f"brk_{c}_tokens"))
BREAK_FLOAT_FIELDS = tuple(f"brk_{c}_usd" for c in _BREAK_KINDS)
INT_FIELDS = INT_FIELDS + BREAK_INT_FIELDS
FLOAT_FIELDS = FLOAT_FIELDS + BREAK_FLOAT_FIELDS
FIELDS = INT_FIELDS + FLOAT_FIELDS


def _tag(tenant: str) -> str:
    # The tenant is a hash tag: braces inside it would end the tag early.
    return "{" + (tenant or "-").replace("{", "(").replace("}", ")") + "}"


def records_key(tenant: str | None) -> str:
    return ALL_RECORDS if tenant is None else f"usage:{_tag(tenant)}:records"


def agg_key(tenant: str, day: str | None = None, hour: str | None = None) -> str:
    base = f"usage:{_tag(tenant)}:agg"
    if hour is not None:
        return f"{base}:h:{hour}"
    return f"{base}:d:{day}" if day is not None else base


def models_key(tenant: str) -> str:
    return f"usage:{_tag(tenant)}:models"


def model_key(tenant: str, model: str, day: str | None = None) -> str:
    return f"usage:{_tag(tenant)}:model:{model}:agg" + (f":d:{day}" if day else "")


def templates_key(tenant: str) -> str:
    return f"usage:{_tag(tenant)}:templates"


def template_key(tenant: str, template: str, day: str | None = None) -> str:
    return f"usage:{_tag(tenant)}:tpl:{template}:agg" + (f":d:{day}" if day else "")


def template_meta_key(tenant: str, template: str) -> str:
    return f"usage:{_tag(tenant)}:tpl:{template}:meta"


def template_name(rec: UsageRecord) -> str:
    if not rec.prompt_template_id:
        # one row per provider/model: a row mixing models has no price to judge it by
        return f"{NO_TEMPLATE}:{rec.provider}/{rec.model}" if rec.model else NO_TEMPLATE
    return f"{rec.prompt_template_id}@{rec.prompt_template_version or ''}".rstrip("@")


def untemplated(template: str) -> bool:
    return template == NO_TEMPLATE or template.startswith(NO_TEMPLATE + ":")


def template_label(template: str) -> str:
    """How reports show a template row: `(no template) provider/model` for the untemplated ones."""
    if template == NO_TEMPLATE:
        return "(no template)"
    if untemplated(template):
        return f"(no template) {template[len(NO_TEMPLATE) + 1:]}"
    return template


def day_of(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def hour_of(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H")


def increments(rec: UsageRecord) -> dict[str, int | float]:
    """The aggregate counters one record adds (zero fields left out: fewer commands)."""
    out: dict[str, int | float] = {}
    if rec.kind == "storage":
        out["storage_events"] = 1
    else:
        out["requests"] = 1
        if rec.status >= 400 or rec.error:
            out["errors"] = 1
        hit = rec.is_hit
        if hit:
            out["hits_" + rec.saved_layer.replace("-", "_")] = 1  # type: ignore[union-attr]
            out["hit_input_tokens"] = rec.input_tokens
            out["hit_cached_input_tokens"] = rec.cached_input_tokens
            out["hit_output_tokens"] = rec.output_tokens
        else:
            if rec.gateway_cache == "bypass":
                out["bypass"] = 1
            else:
                out["misses"] = 1
            out["upstream_requests"] = 1
            if rec.cached_input_tokens:
                out["provider_reads"] = 1
            if rec.cache_creation_input_tokens:
                out["provider_writes"] = 1
        if rec.stream:
            out["stream_requests"] = 1
        for name in ("input_tokens", "cached_input_tokens", "cache_creation_input_tokens",
                     "cache_read_input_tokens", "cache_write_long_tokens", "output_tokens",
                     "reasoning_tokens", "total_tokens"):
            value = getattr(rec, name)
            if value:
                out[name] = value
        if rec.latency_s is not None:
            out["latency_s_sum"] = float(rec.latency_s)
        if rec.time_to_first_token_s is not None:
            out["ttft_s_sum"] = float(rec.time_to_first_token_s)
            out["ttft_count"] = 1
    for name in ("cost_usd", "cost_without_cache_usd", "saved_usd", "storage_cost_usd"):
        value = getattr(rec, name)
        if value:
            out[name] = float(value)
    brk = (rec.prefix or {}).get("break") if isinstance(rec.prefix, dict) else None
    if isinstance(brk, dict) and brk.get("cause") in BREAK_CAUSES:
        tokens, usd = int(brk.get("tokens_lost") or 0), float(brk.get("cost_lost_usd") or 0.0)
        for kind in (brk["cause"], *(("reordered",) if brk.get("reordered") else ())):
            out[f"brk_{kind}"] = 1
            if tokens:
                out[f"brk_{kind}_tokens"] = tokens
            if usd:
                out[f"brk_{kind}_usd"] = usd
    if rec.saved_layer and rec.saved_usd:
        out["saved_" + rec.saved_layer.replace("-", "_") + "_usd"] = float(rec.saved_usd)
    return out


def parse_hash(raw: dict[str, str]) -> dict[str, int | float]:
    """A stored aggregate hash → numbers (every known field present, 0 when absent)."""
    out: dict[str, int | float] = dict.fromkeys(INT_FIELDS, 0)
    out.update(dict.fromkeys(FLOAT_FIELDS, 0.0))
    for name, text in raw.items():
        if name in out:
            try:
                out[name] = int(text) if name in INT_FIELDS else float(text)
            except ValueError:
                out[name] = float(text)
    return out


def add_into(total: dict[str, int | float], part: dict[str, int | float]) -> None:
    for name, value in part.items():
        total[name] = total.get(name, 0) + value
