"""A live gateway (uvicorn, real app, usage + rewrite + explainer + provider-cache stages) on the vendor
emulators, for the acceptance tests of this package; its usage records are read back through the admin
API, as an operator would."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx2

from gateway.app import create_app
from gateway.assembly import build_components
from gateway.provider_cache.explain import PrefixExplainStage
from gateway.provider_cache.stage import ProviderCacheStage
from gateway.rewrite.stage import RewriteStage
from gateway.stores import open_store
from gateway.usage.stage import UsageStage
from gateway_dev.emulators import EmulatorSet
from gateway_dev.localrun import LocalGateway, UvicornThread

ADMIN = "adm-" + "z" * 20


def start(emu: EmulatorSet, folder: Path, tenants: dict[str, dict[str, Any]], **settings: Any) -> LocalGateway:
    gw = LocalGateway(emu, tenants, folder, admin_key=ADMIN, vllm_endpoints=[], **settings)
    store = open_store(gw.settings)
    usage = UsageStage(gw.settings, store)
    stages = [usage, RewriteStage(), PrefixExplainStage(gw.settings, store, prices=usage.prices),
              ProviderCacheStage(gw.settings, store, prices=usage.prices, clock=emu.clock.now)]
    gw.components = build_components(gw.settings, store=store, stages=stages)
    gw.components.purgers["provider"] = stages[-1].purge  # type: ignore[attr-defined]
    gw.app = create_app(gw.settings, gw.components)
    gw.server = UvicornThread(gw.app).start(timeout=120)
    return gw


def admin(gw: LocalGateway, path: str, **params: Any) -> Any:
    r = httpx2.get(gw.url + path, params=params, headers={"authorization": f"Bearer {ADMIN}"}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def records_of(gw: LocalGateway, tenant: str, ids: list[str], timeout: float = 20.0) -> list[dict[str, Any]]:
    """The usage records of `ids`, in that order (waits for the background flush)."""
    deadline = time.monotonic() + timeout
    found: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        gw.wait_idle()
        found = {r["request_id"]: r for r in admin(gw, "/admin/usage/records", tenant=tenant, limit=1000)}
        if all(i in found for i in ids):
            return [found[i] for i in ids]
        time.sleep(0.2)
    missing = [i for i in ids if i not in found]
    raise AssertionError(f"no usage record for {missing}")


def post(gw: LocalGateway, path: str, body: dict[str, Any], headers: dict[str, str]) -> httpx2.Response:
    r = httpx2.post(gw.url + path, json=body, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    return r
