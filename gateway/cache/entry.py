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
# Entries read recently, by their exact bytes: a hit on a popular entry skips the JSON parse and the
# Answer construction. Same bytes, same tenant, key and answer, so the checks below still run on
# what the memo holds. Bounded by count and by bytes (never grows with traffic); oldest out first.
MEMO_ENTRIES = 1024
# stored bytes: decoded objects weigh a few times that, and a replica's RSS budget is ~150 MiB
MEMO_BYTES = 4 * 1024 * 1024
_Decoded = tuple[Answer, str, str, float | None, float | None]  # answer, tenant, key digest, stored at, ttl
_memo: dict[bytes, _Decoded] = {}
_memo_bytes = 0


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
    """The answer, when it was stored (unix time) and how long it is fresh (None: as long as it is kept).
    The answer may be shared with other reads of the same bytes: callers never change it."""
    known = _memo.get(blob)
    if known is not None:
        answer, owner, key, at, ttl = known
    else:
        answer, owner, key, at, ttl = known = _decode(blob)
        _remember(blob, known)
    if owner != tenant or key != digest:
        raise BadEntry("entry belongs to another key")
    # An entry without a stored time counts as just stored (as it always has).
    return answer, time.time() if at is None else at, ttl


def _remember(blob: bytes, value: _Decoded) -> None:
    global _memo_bytes
    if len(blob) > MEMO_BYTES // 16:
        return  # a huge entry would push out many small ones
    while _memo and (len(_memo) >= MEMO_ENTRIES or _memo_bytes + len(blob) > MEMO_BYTES):
        oldest = next(iter(_memo))
        del _memo[oldest]
        _memo_bytes -= len(oldest)
    _memo[blob] = value
    _memo_bytes += len(blob)


def _decode(blob: bytes) -> _Decoded:
    doc = decode_doc(blob)
    owner, key = doc.get("t"), doc.get("k")
    if not isinstance(owner, str) or not isinstance(key, str):
        raise BadEntry("entry without its tenant and key")
    try:
        answer = Answer.from_dict(doc["a"])
    except (KeyError, TypeError) as exc:
        raise BadEntry(f"malformed answer: {exc}") from exc
    at, ttl = doc.get("at"), doc.get("ttl")
    return (answer, owner, key, float(at) if isinstance(at, int | float) else None,
            float(ttl) if isinstance(ttl, int | float) else None)
