"""Where a CachedContent lives and how to reach it: the Gemini API or one Vertex AI region.

The lifecycle (`gemini.py`: identity, shared handles, lock, create, extend, recover, purge) is the same for
both; what differs is here:

| | Gemini API | Vertex AI |
| --- | --- | --- |
| collection | `/v1beta/cachedContents` | `/v1beta1/projects/{p}/locations/{l}/cachedContents` |
| `model` | `models/{m}` | `projects/{p}/locations/{l}/publishers/google/models/{m}` |
| a cache | `/v1beta/cachedContents/{id}` | `/v1beta1/projects/{number}/locations/{l}/cachedContents/{id}` |
| auth | `x-goog-api-key` | `Authorization: Bearer` (an access token of the gateway's service account) |
| identity | the key's fingerprint | project and location: a cache lives in one location and is used only from it |

A handle records which API made it (`api`, `base`, and for Vertex the project and location), so the purge
deletes every cache at its own regional endpoint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

GEMINI_VERSION = "v1beta"
VERTEX_VERSION = "v1beta1"
VERTEX_DEFAULT_BASE = "https://{location}-aiplatform.googleapis.com"


def key_fingerprint(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()[:16]


def vertex_base_url(base: str | None, location: str) -> str:
    """The endpoint root for `location`: the configured root (`{location}` filled in when it has one), else
    the regional endpoint `https://{location}-aiplatform.googleapis.com`."""
    template = base or VERTEX_DEFAULT_BASE
    return template.replace("{location}", location).rstrip("/")


class CacheApi(Protocol):
    @property
    def base_url(self) -> str: ...

    @property
    def scope(self) -> str:
        """What a cache's identity depends on besides the model and the cached parts."""
        ...

    def collection_path(self) -> str: ...

    def resource_path(self, name: str) -> str: ...

    def model_name(self, model: str) -> str: ...

    async def headers(self) -> dict[str, str]: ...

    def describe(self) -> dict[str, Any]:
        """The handle fields that let a later call (extend, purge) reach the cache again."""
        ...


@dataclass(frozen=True, slots=True)
class GeminiApi:
    base_url: str
    api_key: str

    @property
    def scope(self) -> str:
        return key_fingerprint(self.api_key)

    def collection_path(self) -> str:
        return f"/{GEMINI_VERSION}/cachedContents"

    def resource_path(self, name: str) -> str:
        return f"/{GEMINI_VERSION}/{name}"

    def model_name(self, model: str) -> str:
        return f"models/{model}"

    async def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.api_key}

    def describe(self) -> dict[str, Any]:
        return {"api": "gemini", "base": self.base_url, "keyfp": self.scope}


@dataclass(frozen=True, slots=True)
class VertexApi:
    base_url: str  # the regional endpoint root of `location`
    project: str
    location: str
    token: Callable[[], Awaitable[str]]  # the gateway's access token (cached and refreshed by its provider)

    @property
    def scope(self) -> str:
        return f"vertex:{self.project}/{self.location}"

    def collection_path(self) -> str:
        return f"/{VERTEX_VERSION}/projects/{self.project}/locations/{self.location}/cachedContents"

    def resource_path(self, name: str) -> str:
        return f"/{VERTEX_VERSION}/{name}"

    def model_name(self, model: str) -> str:
        return f"projects/{self.project}/locations/{self.location}/publishers/google/models/{model}"

    async def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {await self.token()}"}

    def describe(self) -> dict[str, Any]:
        return {"api": "vertex", "base": self.base_url, "project": self.project, "location": self.location}


def api_of_record(rec: dict[str, Any], gemini_key: str | None,
                  vertex_token: Callable[[], Awaitable[str]] | None) -> CacheApi | None:
    """The API that reaches the cache of handle `rec` with the gateway's own credential, or None when the
    gateway holds none for it (a Gemini cache made with a caller's key under BYOK)."""
    if rec.get("api") == "vertex":
        if vertex_token is None:
            return None
        return VertexApi(str(rec["base"]), str(rec.get("project") or ""), str(rec.get("location") or ""),
                         vertex_token)
    if gemini_key and rec.get("keyfp") == key_fingerprint(gemini_key):
        return GeminiApi(str(rec["base"]), gemini_key)
    return None
