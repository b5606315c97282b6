"""The offline check that lets a sentence-transformers model that is not installed fail before torch is
imported: it says "no local copy" only where sentence-transformers could find none either."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import constants

from gateway.semantic.embedder import SentenceTransformerBackend, _no_local_copy


def test_a_folder_or_a_hub_cache_entry_counts_as_a_local_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub, home = tmp_path / "hub", tmp_path / "st-home"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.delenv("SENTENCE_TRANSFORMERS_HOME", raising=False)
    assert _no_local_copy("acme/encoder") and _no_local_copy("mini-encoder")
    assert not _no_local_copy(str(tmp_path))  # a path sentence-transformers loads from
    (hub / "models--acme--encoder").mkdir(parents=True)
    assert not _no_local_copy("acme/encoder")
    (hub / "models--sentence-transformers--mini-encoder").mkdir()
    assert not _no_local_copy("mini-encoder")  # the default organisation sentence-transformers adds
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(home))
    assert _no_local_copy("other/encoder")
    (home / "models--other--encoder").mkdir(parents=True)
    assert not _no_local_copy("other/encoder")


def test_offline_a_missing_model_fails_with_the_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="'no-such-org/no-such-model' is not installed"):
        SentenceTransformerBackend("no-such-org/no-such-model").load()
