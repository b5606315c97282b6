"""The vector store behind the semantic cache: one small interface, two Qdrant adapters.

- `gateway.semantic.edge.EdgeStore`: qdrant-edge-py, Qdrant's engine in-process (the default, under
  `GATEWAY_DATA_DIR`);
- `gateway.semantic.client.ClientStore`: qdrant-client's async client against a Qdrant server
  (`GATEWAY_QDRANT_URL`), or its local mode (`:memory:`) in tests.

Tenant isolation is structural. The only search is `VectorStore.search(scope, ...)`; `Scope` cannot
be built without a tenant and a context hash, and the adapters receive nothing but the `MustFilter`
it makes (tenant, context hash, version, `expires_at > now`), which they turn into Qdrant's `must`
filter (the embedded engine: one equality on `scope`, a digest of tenant, context and version; see
`scope_key`). Results are checked against the whole scope once more in Python before anyone sees them.

One collection per embedder and dimension (`collection_name`); payload indexes on `tenant`
(keyword, tenant-optimised), `ctx`, `version`, `expires_at` and `scope`. A point holds the cached question
(the guard compares it with the new one) and the answer, compressed as the response cache stores
it (`gateway.cache.entry`), so a hit is one round trip and a purge removes both at once.
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gateway.answer import Answer
from gateway.cache import entry as entries

_TENANT = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

INDEXED_FIELDS = ("tenant", "ctx", "version", "expires_at", "scope")
# Opening a collection, purging and counting are not on the request path: they get more time.
ADMIN_TIMEOUT = 30.0


class VectorStoreUnavailable(Exception):
    """The vector store failed or did not answer in time: the caller treats it as a miss."""


@dataclass(frozen=True, slots=True)
class MustFilter:
    """The conditions every search carries; built only by `Scope.must()`."""

    tenant: str
    ctx: str
    version: str
    now: float

    @property
    def key(self) -> str:
        return scope_key(self.tenant, self.ctx, self.version)


def scope_key(tenant: str, ctx: str, version: str) -> str:
    """One indexed keyword for (tenant, context, version). The embedded engine checks each filter
    condition point by point (~1 ms apiece over a tenant's few thousand points, holding the GIL);
    one equality on this key selects the same points at the cost of one condition."""
    return hashlib.sha256(f"{tenant}\x00{ctx}\x00{version}".encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose entries a search may see: one tenant, one exact context, one version, unexpired."""

    tenant: str
    ctx: str  # the context hash (gateway.semantic.context)
    version: str  # the policy's knowledge version ("" when unset)
    now: float

    def __post_init__(self) -> None:
        if not isinstance(self.tenant, str) or not _TENANT.match(self.tenant):
            raise ValueError("a semantic-cache scope needs a tenant")
        if not isinstance(self.ctx, str) or not _HEX64.match(self.ctx):
            raise ValueError("a semantic-cache scope needs a context hash")
        if not isinstance(self.version, str):
            raise ValueError("version must be a string")

    def must(self) -> MustFilter:
        return MustFilter(self.tenant, self.ctx, self.version, float(self.now))

    def admits(self, payload: dict[str, Any]) -> bool:
        return (payload.get("tenant") == self.tenant and payload.get("ctx") == self.ctx
                and payload.get("version") == self.version and float(payload.get("expires_at", 0)) > self.now)


@dataclass(slots=True)
class Entry:
    tenant: str
    ctx: str
    version: str
    question: str
    answer: Answer
    created_at: float
    expires_at: float

    @property
    def id(self) -> str:
        """Deterministic: the same question in the same scope overwrites its older answer."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"gw-sem:{self.tenant}:{self.ctx}:{self.version}:{self.question}"))

    def payload(self) -> dict[str, Any]:
        blob = entries.encode(self.answer, self.tenant, self.ctx, now=self.created_at)
        return {
            "tenant": self.tenant, "ctx": self.ctx, "version": self.version,
            "scope": scope_key(self.tenant, self.ctx, self.version), "question": self.question,
            "answer": base64.b64encode(blob).decode("ascii"), "created_at": self.created_at,
            "expires_at": self.expires_at, "model": self.answer.model, "provider": self.answer.provider,
        }


@dataclass(slots=True)
class Candidate:
    id: str
    score: float  # cosine similarity
    question: str
    payload: dict[str, Any]

    def answer(self) -> Answer:
        """The stored answer; raises `entry.BadEntry` when unreadable or not this scope's."""
        blob = base64.b64decode(self.payload["answer"])
        return entries.decode(blob, self.payload["tenant"], self.payload["ctx"])


def collection_name(embedder_name: str, dim: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", embedder_name.lower()).strip("-")[:48] or "embedder"
    return f"gw_semantic_{slug}_{dim}"


class VectorStore(ABC):
    name = "vector"

    def __init__(self, collection: str, dim: int) -> None:
        self.collection = collection
        self.dim = dim

    async def search(self, scope: Scope, vector: np.ndarray, limit: int, min_score: float) -> list[Candidate]:
        """Nearest entries inside `scope` with cosine ≥ `min_score`, best first."""
        if not isinstance(scope, Scope):
            raise TypeError("search needs a Scope")
        hits = await self._query(scope.must(), _as_list(vector, self.dim), limit, min_score)
        return [c for c in hits if scope.admits(c.payload)][:limit]

    @abstractmethod
    async def _query(self, must: MustFilter, vector: list[float], limit: int, min_score: float) -> list[Candidate]:
        """Run one filtered nearest-neighbour query; `must` becomes Qdrant's must-filter."""

    @abstractmethod
    async def open(self) -> None:
        """Create the collection and its payload indexes when missing."""

    @abstractmethod
    async def upsert(self, entries_: Sequence[tuple[Entry, np.ndarray]]) -> None: ...

    @abstractmethod
    async def purge(self, tenant: str, version: str | None = None) -> int:
        """Remove a tenant's entries (of one version, or all); the number removed."""

    @abstractmethod
    async def delete(self, tenant: str, ids: Sequence[str]) -> int:
        """Remove these points when they belong to `tenant` (an entry shown wrong); the number removed."""

    @abstractmethod
    async def purge_expired(self, now: float) -> int: ...

    @abstractmethod
    async def count(self, tenant: str | None = None) -> int: ...

    async def close(self) -> None:
        return None


def _as_list(vector: np.ndarray | Sequence[float], dim: int) -> list[float]:
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    if values.shape[0] != dim:
        raise ValueError(f"vector of dimension {values.shape[0]}, the collection holds {dim}")
    return values.tolist()


def check_tenant(tenant: str) -> str:
    if not isinstance(tenant, str) or not _TENANT.match(tenant):
        raise ValueError("purge needs a tenant")
    return tenant
