"""Cheap, offline token counts of a prefix, for the minimum-length checks and the break-even.

Precision matters only near a model's minimum cacheable length, so one tokenizer serves every
vendor: tiktoken's `o200k_base`, read from the BPE file litellm bundles (no download, and litellm
itself is not imported: its import costs seconds). Counts are cached by text.

The encoder holds ~45 MiB and takes ~0.4 s to build, and most requests never count tokens (a prompt
too short for any vendor's cache, a model without breakpoints), so nothing loads it at start: the
first request that needs counts calls `ensure()`, which builds it once in a worker thread; that
request and any others arriving meanwhile await the same load, and the event loop keeps serving.
Where the file is missing (or for a caller that counts without `ensure()`), a character estimate
stands in: ~4 characters per token for ASCII text, 1 per token for other scripts (CJK text runs near
one token per character), which errs on the high side for English.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import importlib.util
import logging
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("gateway.provider_cache")

_MAX_CACHED = 16_384


def _bundled_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return path if path.is_dir() else None


def estimate(text: str) -> int:
    ascii_chars = sum(1 for c in text if c < "\x80")
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


class TokenCounter:
    def __init__(self) -> None:
        self._enc: Any = None
        self._cache: dict[bytes, int] = {}
        self._lock = threading.Lock()
        self._loading: concurrent.futures.Future[bool] | None = None
        # Not `_lock`: a load under way holds that one for its whole ~0.4 s, and the loop must not wait.
        self._start = threading.Lock()

    @property
    def exact(self) -> bool:
        return self._enc is not None

    @property
    def state(self) -> str:
        """"loaded", "loading", "on first use" (not needed yet) or "estimates" (the file is unavailable)."""
        if self._enc is not None:
            return "loaded"
        fut = self._loading
        if fut is None:
            return "on first use"
        return "loading" if not fut.done() else "estimates"

    async def ensure(self) -> bool:
        """Load the encoder once, in a worker thread, and wait for it without holding the event loop:
        concurrent callers (on any loop) share the one load. False when only estimates are available."""
        if self._enc is not None:
            return True
        with self._start:
            fut = self._loading
            if fut is None:
                fut = self._loading = concurrent.futures.Future()
                # Running from now on: a waiter cancelled (its client gone) must not cancel the load others await.
                fut.set_running_or_notify_cancel()
                threading.Thread(target=self._load_into, args=(fut,), name="tokenizer-load", daemon=True).start()
        return await asyncio.wrap_future(fut)

    def _load_into(self, fut: concurrent.futures.Future[bool]) -> None:
        try:
            fut.set_result(self.load())
        except BaseException as exc:  # load() logs and returns False on its own failures; never leave it pending
            fut.set_exception(exc)

    def load(self) -> bool:
        """Load o200k_base (blocking, ~0.3 s): call from a thread. False when unavailable."""
        if self._enc is not None:
            return True
        with self._lock:
            if self._enc is not None:
                return True
            folder = _bundled_dir()
            if folder is None:
                return False
            try:
                import tiktoken
                from tiktoken_ext.openai_public import o200k_base

                # tiktoken finds its files through this variable only; litellm sets it the same way
                # (process-wide) when it is imported, so pointing it there changes nothing else.
                os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))
                # A private copy of the encoding, not tiktoken's registry's: its Python table of the
                # 200k ranks (~28 MB, read only to pickle the encoding) is dropped once the native
                # encoder holds its own copy, without touching an encoding anyone else shares.
                enc = tiktoken.Encoding(**o200k_base())
                if isinstance(getattr(enc, "_mergeable_ranks", None), dict):
                    enc._mergeable_ranks = {}
                self._enc = enc
            except Exception as exc:  # a missing file must not stop the gateway: estimates remain
                log.warning("tokenizer unavailable; using character estimates", extra={"error": repr(exc)})
                return False
        return True

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self._enc is None:
            return estimate(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        n = self._cache.get(key)
        if n is None:
            n = len(self._enc.encode_ordinary(text))
            if len(self._cache) >= _MAX_CACHED:
                del self._cache[next(iter(self._cache))]
            self._cache[key] = n
        return n


_default = TokenCounter()


def default_counter() -> TokenCounter:
    return _default
