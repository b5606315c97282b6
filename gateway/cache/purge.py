"""Per-tenant purge of the response cache, without `KEYS`.

Entries live under `gw:rc:{<tenant>}:`; a purge walks that prefix with the store's incremental
`scan` (Redis `SCAN MATCH`, one node in a cluster thanks to the hash tag) and deletes in batches.
No per-tenant index set is kept: it would cost a write per stored answer and keep members of
entries that already expired, for an operation an operator runs rarely.
"""

from __future__ import annotations

import re

from gateway.cache.key import tenant_prefix
from gateway.stores.base import KVStore

_TENANT = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")  # the policy's tenant-name grammar
_BATCH = 500


async def purge(store: KVStore, tenant: str) -> int:
    """Delete every response-cache entry of `tenant`; returns how many were removed.

    Raises `ValueError` for a name that cannot be a tenant, and `StoreUnavailable` when the store
    is down (the admin API reports it rather than claiming a purge happened)."""
    if not _TENANT.fullmatch(tenant):
        raise ValueError(f"{tenant!r} is not a tenant name")
    removed = 0
    batch: list[str] = []
    async for key in store.scan(tenant_prefix(tenant)):
        batch.append(key)
        if len(batch) >= _BATCH:
            removed += await store.delete(*batch)
            batch = []
    if batch:
        removed += await store.delete(*batch)
    return removed
