"""Deterministic, offline token counting for every emulator.

One counter for all vendors: tiktoken's `o200k_base` (the GPT-4o/GPT-5 encoding), loaded from the BPE file
litellm bundles (`litellm/litellm_core_utils/tokenizers/`), so nothing is downloaded and `litellm` itself is
never imported (its import costs ~4 s). Claude, Gemini, DeepSeek and Qwen tokenizers are not public or not
bundled offline; their counts differ from o200k by a few percent, which no emulator rule depends on.

Texts are encoded per segment (a message, a content block, a tool definition) and the token ids of each
segment are cached, so a long shared prefix is tokenized once, and the vLLM path stays fast.
Non-text inputs (images, audio, files) become a fixed number of synthetic token ids derived from a hash
of their content, so two different images never share a cached prefix and the same image always does.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Iterable
from pathlib import Path

Tokens = tuple[int, ...]

_SYNTHETIC_BASE = 1_000_000  # above every real o200k id (n_vocab 200019)


def _litellm_tokenizer_dir() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("litellm is not installed: the emulators load o200k_base from its bundled files")
    return Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"


class Tokenizer:
    def __init__(self, encoding: str = "o200k_base", max_cached_segments: int = 50_000) -> None:
        import tiktoken

        # tiktoken reads its cache dir from the environment only; point it at litellm's files for the
        # duration of the load and put the previous value back (litellm does the same, process-wide).
        prev = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(_litellm_tokenizer_dir())
        try:
            self._enc = tiktoken.get_encoding(encoding)
        finally:
            if prev is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = prev
        self.name = encoding
        self._cache: dict[str, Tokens] = {}
        self._max = max_cached_segments

    def encode(self, text: str) -> Tokens:
        ids = self._cache.get(text)
        if ids is None:
            ids = tuple(self._enc.encode_ordinary(text))
            if len(self._cache) >= self._max:
                # Drop the older half (dicts keep insertion order): cheaper than an LRU on every hit.
                for key in list(self._cache)[: self._max // 2]:
                    self._cache.pop(key, None)
            self._cache[text] = ids
        return ids

    def encode_uncached(self, text: str) -> Tokens:
        """For one-off texts (generated answers) that would only churn the segment cache."""
        return tuple(self._enc.encode_ordinary(text))

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def decode(self, ids: Iterable[int]) -> str:
        return self._enc.decode([i for i in ids if i < _SYNTHETIC_BASE])

    def pieces(self, ids: Iterable[int]) -> list[str]:
        """The text of each token, for streaming one token per chunk. A token that ends inside a multi-byte
        character is merged with the next one, so no piece carries a broken character."""
        out: list[str] = []
        pending = b""
        for i in ids:
            if i >= _SYNTHETIC_BASE:
                continue
            pending += self._enc.decode_single_token_bytes(i)
            try:
                out.append(pending.decode("utf-8"))
                pending = b""
            except UnicodeDecodeError:
                continue
        if pending:
            out.append(pending.decode("utf-8", "replace"))
        return out


def synthetic_tokens(content_key: str, n: int) -> Tokens:
    """`n` token ids standing for a non-text input (image, audio, file), a pure function of its content."""
    seed = hashlib.blake2b(content_key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    base = int.from_bytes(seed, "big")
    return tuple(_SYNTHETIC_BASE + ((base + i * 2654435761) % 1_000_003) for i in range(n))


_lock = threading.Lock()
_tokenizer: Tokenizer | None = None


def get_tokenizer() -> Tokenizer:
    global _tokenizer
    if _tokenizer is None:
        with _lock:
            if _tokenizer is None:
                _tokenizer = Tokenizer()
    return _tokenizer


def encode(text: str) -> Tokens:
    return get_tokenizer().encode(text)


def count(text: str) -> int:
    return len(get_tokenizer().encode(text))
