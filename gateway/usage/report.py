"""`llm-cache-gateway report [--tenant T] [--since 7d]`: usage tables per tenant and per template.

Where the data is: with `GATEWAY_REDIS_URL` (or `redis_url` in `--config`) the command reads Redis
itself; with the embedded store the data lives inside the running gateway, so the command asks it
(`GET /admin/usage/report` on `host:port`, with `GATEWAY_ADMIN_KEY`). Both paths compute the same
`report_data`.

Per tenant: requests, hit rate by layer (response, semantic, single-flight of all requests;
provider of the requests that reached the vendor), tokens by kind, cost, cost without caching,
saved. Per template the same, plus the break-even verdict (breakeven.py) with the observed N.
"""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import orjson

from gateway.accounting.pricing import PriceBook
from gateway.accounting.verdict import NOT_APPLICABLE, verdict
from gateway.stores.base import KVStore
from gateway.usage import query
from gateway.usage.breaks import summary
from gateway.usage.keys import template_label, untemplated


def _row(agg: dict[str, int | float]) -> dict[str, Any]:
    s = query.shape(agg)
    return {
        "requests": s["requests"],
        "hit_rate": s["hit_rate"],
        "tokens": {
            "input": s["input_tokens"],
            "cached_input": s["cached_input_tokens"],
            "cache_write": s["cache_creation_input_tokens"],
            "output": s["output_tokens"],
            "served_from_gateway_cache": int(agg["hit_input_tokens"] + agg["hit_output_tokens"]),
        },
        "cost_usd": s["cost_usd"],
        "cost_without_cache_usd": s["cost_without_cache_usd"],
        "saved_usd": s["saved_usd"],
        "saved_by_layer": s["saved_by_layer"],
        "errors": s["errors"],
    }


async def report_data(store: KVStore, tenant: str | None, since: str | None = "7d",
                      prices: PriceBook | None = None) -> dict[str, Any]:
    seconds = query.parse_since(since)
    names = [tenant] if tenant else await query.tenants(store)
    out: list[dict[str, Any]] = []
    for name in names:
        tenant_agg = await query.tenant_agg(store, name, seconds)
        if not tenant_agg["requests"] and not tenant_agg["storage_events"]:
            continue  # nothing in this window
        row = {"tenant": name, **_row(tenant_agg), "templates": []}
        for template, agg in (await query.breakdown(store, name, "template", since)).items():
            meta = await query.template_meta(store, name, template)
            provider, model = meta.get("provider", ""), meta.get("model", "")
            model_prices = prices.lookup(provider, model) if prices is not None and model else None
            # Requests without a template mix prefixes (and often models): no verdict for them.
            judged = verdict(agg, model_prices, provider) if not untemplated(template) else NOT_APPLICABLE
            trow = {"template": template, "provider": provider, "model": model, **_row(agg),
                    "breakeven": judged.as_dict(), "breaks": summary(agg)}
            row["templates"].append(trow)
        out.append(row)
    return {"since": since if seconds is not None else None, "tenant": tenant, "generated_at": time.time(),
            "tenants": out}


# ---- the command ------------------------------------------------------------------------------


def report_command(settings: Any, tenant: str | None, since: str, url: str | None = None) -> int:
    try:
        query.parse_since(since)
    except ValueError as exc:
        print(f"error: --since: {exc}")
        return 2
    try:
        if settings.redis_url and not url:
            data = _local(settings, tenant, since)
        else:
            data = _remote(settings, tenant, since, url)
    except ReportError as exc:
        print(f"error: {exc}")
        return 1
    render(data)
    return 0


class ReportError(Exception):
    pass


def _local(settings: Any, tenant: str | None, since: str) -> dict[str, Any]:
    from gateway.stores import open_store
    from gateway.stores.base import StoreUnavailable

    async def run() -> dict[str, Any]:
        store = open_store(settings)
        try:
            return await report_data(store, tenant, since, PriceBook(settings))
        finally:
            await store.close()

    try:
        return asyncio.run(run())
    except StoreUnavailable as exc:
        raise ReportError(f"Redis at {settings.redis_url} is unavailable: {exc}") from exc


def _remote(settings: Any, tenant: str | None, since: str, base: str | None = None) -> dict[str, Any]:
    key = settings.admin_key.get_secret_value() if settings.admin_key else None
    if not key:
        raise ReportError("the report asks the running gateway's admin API, which needs GATEWAY_ADMIN_KEY "
                          "(or set GATEWAY_REDIS_URL to read Redis directly)")
    if not base:
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
        base = f"http://{host}:{settings.port}"
    params = {"since": since, **({"tenant": tenant} if tenant else {})}
    url = f"{base.rstrip('/')}/admin/usage/report?{urllib.parse.urlencode(params)}"
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # a CLI: blocking is fine
            return orjson.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ReportError(f"the gateway at {url} answered {exc.code}: {exc.read()[:300].decode(errors='replace')}"
                          ) from exc
    except OSError as exc:
        raise ReportError(f"no gateway answered at {url} ({exc}): start it, or point the report at it with "
                          "--url http://HOST:PORT (or GATEWAY_HOST and GATEWAY_PORT), or set GATEWAY_REDIS_URL to "
                          "read Redis directly") from exc


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _usd(value: float) -> str:
    return f"${value:,.4f}" if abs(value) < 100 else f"${value:,.2f}"


def _tok(value: int) -> str:
    return f"{value:,}"


def render(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # piped or captured: wide enough for every column, no wrapping
        console.width = max(console.width, 320)
    tenants = data.get("tenants", [])
    window = f"since {data['since']}" if data.get("since") else "all time"
    if not tenants:
        console.print(f"No usage recorded ({window}" + (f", tenant {data['tenant']}" if data.get("tenant") else "")
                      + ").")
        return
    summary = Table(title=f"Usage per tenant ({window})")
    for col in ("tenant", "requests", "response hit", "semantic hit", "single-flight", "provider hit",
                "input tok", "cached tok", "write tok", "output tok", "cost", "without cache", "saved"):
        summary.add_column(col, justify="left" if col == "tenant" else "right")
    for t in tenants:
        summary.add_row(t["tenant"], *_cells(t))
    console.print(summary)

    per_template = Table(title=f"Usage per prompt template ({window})")
    for col in ("tenant", "template", "model", "requests", "response hit", "semantic hit", "single-flight",
                "provider hit", "input tok", "cached tok", "write tok", "output tok", "cost", "without cache",
                "saved", "N", "W+(N−1)R+S vs N", "break-even"):
        per_template.add_column(col, justify="left" if col in ("tenant", "template", "model", "break-even")
                                else "right")
    for t in tenants:
        for row in t["templates"]:
            be = row["breakeven"]
            if be["applies"]:
                math = f"{be['with_cache']:.2f} vs {be['without_cache']:.2f}"
                word = "[green]caching pays[/green]" if be["pays"] else "[red]caching costs more[/red]"
                n = f"{be['N']:.2f}"
            elif untemplated(row["template"]):
                math, word, n = "–", "–", "–"
            else:
                math, word, n = "–", "no provider caching", "–"
            name = template_label(row["template"])
            per_template.add_row(t["tenant"], name, row["model"] or "–", *_cells(row), n, math, word)
    console.print(per_template)
    _render_breaks(console, tenants, window)


def _render_breaks(console: Any, tenants: list[dict[str, Any]], window: str) -> None:
    from rich.table import Table

    rows = [(t["tenant"], r) for t in tenants for r in t["templates"] if r.get("breaks", {}).get("breaks")]
    if not rows:
        return
    table = Table(title=f"Prefix breaks per template and what fixing them would save ({window})")
    for col in ("tenant", "template", "breaks", "by cause", "tokens lost", "lost", "rewrite on", "sort tools",
                "pin model", "move volatile field"):
        table.add_column(col, justify="left" if col in ("tenant", "template", "by cause") else "right")
    for tenant, row in rows:
        b = row["breaks"]
        causes = ", ".join(f"{c} {v['breaks']}" for c, v in b["by_cause"].items())
        w = b["what_if_saved_usd"]
        table.add_row(tenant, template_label(row["template"]), _tok(b["breaks"]), causes, _tok(b["tokens_lost"]),
                      _usd(b["cost_lost_usd"]), _usd(w["rewrite"]), _usd(w["sort_tools"]), _usd(w["pin_model"]),
                      _usd(w["move_volatile_field"]))
    console.print(table)


def _cells(row: dict[str, Any]) -> list[str]:
    rate, tok = row["hit_rate"], row["tokens"]
    return [
        _tok(row["requests"]), _pct(rate["response"]), _pct(rate["semantic"]), _pct(rate["single_flight"]),
        _pct(rate["provider"]), _tok(tok["input"]), _tok(tok["cached_input"]), _tok(tok["cache_write"]),
        _tok(tok["output"]), _usd(row["cost_usd"]), _usd(row["cost_without_cache_usd"]), _usd(row["saved_usd"]),
    ]
