"""Prefix breaks summed by cause and by template, and what fixing them would have saved.

Every usage record whose `prefix.break` is set adds, in its tenant's and template's aggregates,
`brk_<cause>` (count), `brk_<cause>_tokens` (tokens lost) and `brk_<cause>_usd` (money lost); a
tools change that only reordered the same tools also counts as `reordered`. The savings per
template come from those recorded losses alone:

- **rewrite** (`prompt_rewrite.enabled`): volatile values moved out of the prefix and tools sorted —
  the `volatile_value` losses plus the reordered-tools losses;
- **sort tools**: the reordered-tools losses;
- **pin the model**: the `model_changed` losses;
- **move the volatile field** (by hand, to the end of the prompt): the `volatile_value` losses.

`GET /admin/usage/breaks?tenant=T&since=7d` answers `breaks_report`; `llm-cache-gateway report` and
the dashboard show the same numbers.
"""

from __future__ import annotations

from typing import Any

from gateway.stores.base import KVStore
from gateway.usage import query
from gateway.usage.keys import BREAK_CAUSES, template_label

Agg = dict[str, int | float]


def by_cause(agg: Agg) -> dict[str, dict[str, int | float]]:
    return {c: {"breaks": int(agg.get(f"brk_{c}", 0)), "tokens_lost": int(agg.get(f"brk_{c}_tokens", 0)),
                "cost_lost_usd": float(agg.get(f"brk_{c}_usd", 0.0))}
            for c in BREAK_CAUSES if agg.get(f"brk_{c}", 0)}


def what_if(agg: Agg) -> dict[str, float]:
    volatile = float(agg.get("brk_volatile_value_usd", 0.0))
    reordered = float(agg.get("brk_reordered_usd", 0.0))
    return {"rewrite": volatile + reordered, "sort_tools": reordered,
            "pin_model": float(agg.get("brk_model_changed_usd", 0.0)), "move_volatile_field": volatile}


def _totals(agg: Agg) -> dict[str, int | float]:
    return {"breaks": sum(int(agg.get(f"brk_{c}", 0)) for c in BREAK_CAUSES),
            "tokens_lost": sum(int(agg.get(f"brk_{c}_tokens", 0)) for c in BREAK_CAUSES),
            "cost_lost_usd": sum(float(agg.get(f"brk_{c}_usd", 0.0)) for c in BREAK_CAUSES)}


def summary(agg: Agg) -> dict[str, Any]:
    return {**_totals(agg), "requests": int(agg.get("requests", 0)), "by_cause": by_cause(agg),
            "what_if_saved_usd": what_if(agg)}


async def breaks_report(store: KVStore, tenant: str | None, since: str | None = "7d") -> dict[str, Any]:
    """Breaks per tenant (by cause) and per template (by cause, with the what-if savings)."""
    seconds = query.parse_since(since)
    names = [tenant] if tenant else await query.tenants(store)
    tenants: list[dict[str, Any]] = []
    for name in names:
        agg = await query.tenant_agg(store, name, seconds)
        templates = []
        for template, tagg in (await query.breakdown(store, name, "template", since)).items():
            row = summary(tagg)
            if row["breaks"]:
                templates.append({"template": template, "label": template_label(template), **row})
        templates.sort(key=lambda r: -r["cost_lost_usd"])
        tenants.append({"tenant": name, **summary(agg), "templates": templates})
    return {"tenant": tenant, "since": since if seconds is not None else None, "tenants": tenants}
