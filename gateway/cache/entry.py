"""A stored response-cache entry: the protocol-neutral `Answer`, with a version byte.

Layout: one version byte, then JSON `{"t": tenant, "k": digest, "at": unix time, "a": Answer.to_dict()}`:
as a zstd frame (version 1) when the JSON is at least `COMPRESS_FROM` bytes, as it is (version 2)
below that, where compressing would save a few hundred bytes of Redis memory at the cost of a
compression on every write and a decompression on every hit. Both versions are read. The tenant
and key digest are checked again on read, so even a bug that computed a wrong store key could not
hand one tenant's answer to another. An entry holds the answer only: no request headers, no API
key, no request body.
With stale-if-error, `"ttl"` (seconds fresh) is in the JSON too: an entry may outlive its `ttl` in the
store (the stale window), and is then served only when the vendor fails.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
import zstandard

from gateway.answer import Answer

VERSION = b"\x01"  # zstd frame
VERSION_PLAIN = b"\x02"  # JSON as it is
COMPRESS_FROM = 1024  # bytes of JSON
_LEVEL = 3  # the frame costs microseconds; text compresses 2-4x

_compressor = zstandard.ZstdCompressor(level=_LEVEL)
_decompressor = zstandard.ZstdDecompressor()
_MAX_DECOMPRESSED = 64 * 1024 * 1024


class BadEntry(ValueError):
    """An entry that cannot be read (old version, corrupt, someone else's): treated as a miss."""


def encode(answer: Answer, tenant: str, digest: str, now: float | None = None, ttl: float | None = None) -> bytes:
    doc: dict[str, Any] = {"t": tenant, "k": digest, "at": time.time() if now is None else now, "a": answer.to_dict()}
    if ttl is not None:
        doc["ttl"] = ttl
    raw = orjson.dumps(doc)
    if len(raw) < COMPRESS_FROM:
        return VERSION_PLAIN + raw
    return VERSION + _compressor.compress(raw)


def decode_doc(blob: bytes) -> dict[str, Any]:
    version = blob[:1]
    if version not in (VERSION, VERSION_PLAIN):
        raise BadEntry(f"unknown entry version {version!r}")
    try:
        if version == VERSION_PLAIN:
            doc = orjson.loads(memoryview(blob)[1:])
        else:
            doc = orjson.loads(_decompressor.decompress(blob[1:], max_output_size=_MAX_DECOMPRESSED))
    except (zstandard.ZstdError, orjson.JSONDecodeError) as exc:
        raise BadEntry(f"corrupt entry: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("a"), dict):
        raise BadEntry("entry without an answer")
    return doc


def decode(blob: bytes, tenant: str, digest: str) -> Answer:
    return decode_entry(blob, tenant, digest)[0]


def decode_entry(blob: bytes, tenant: str, digest: str) -> tuple[Answer, float, float | None]:
    """The answer, when it was stored (unix time) and how long it is fresh (None: as long as it is kept)."""
    doc = decode_doc(blob)
    if doc.get("t") != tenant or doc.get("k") != digest:
        raise BadEntry("entry belongs to another key")
    try:
        answer = Answer.from_dict(doc["a"])
    except (KeyError, TypeError) as exc:
        raise BadEntry(f"malformed answer: {exc}") from exc
    at, ttl = doc.get("at"), doc.get("ttl")
    return (answer, float(at) if isinstance(at, int | float) else time.time(),
            float(ttl) if isinstance(ttl, int | float) else None)
