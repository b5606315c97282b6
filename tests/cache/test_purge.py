"""Per-tenant purge without KEYS, on both stores."""

from __future__ import annotations

import pytest

from gateway.cache.key import entry_key, lock_key
from gateway.cache.purge import purge
from gateway.stores import KVStore


async def test_purge_removes_only_that_tenants_entries(kv: KVStore, tenant: str) -> None:
    neighbour = tenant + "-2"  # shares the prefix "gw:rc:{<tenant>" up to the closing brace
    for i in range(1201):  # more than two delete batches
        await kv.set(entry_key(tenant, f"{i:064x}"), b"e", ttl=60)
    await kv.set(entry_key(neighbour, "0" * 64), b"e", ttl=60)
    await kv.set(lock_key(tenant, "0" * 64), b"owner", ttl=60)
    assert await purge(kv, tenant) == 1201
    assert [k async for k in kv.scan(entry_key(tenant, ""))] == []
    assert await kv.get(entry_key(neighbour, "0" * 64)) == b"e"
    assert await kv.get(lock_key(tenant, "0" * 64)) == b"owner"  # in-flight locks are not entries
    assert await purge(kv, tenant) == 0


@pytest.mark.parametrize("name", ["", "*", "acme}:x", "a b", "x" * 129])
async def test_purge_refuses_names_that_cannot_be_tenants(kv: KVStore, name: str) -> None:
    with pytest.raises(ValueError):
        await purge(kv, name)
