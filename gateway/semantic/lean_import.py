"""Importing a library without the optional integrations it pulls in on its own.

LemmInflect's package imports spaCy, only to register spaCy token extensions the guard never uses; spaCy
imports thinc, and thinc imports torch whenever torch is installed (the `[st]` extra), only to offer
PyTorch-wrapped layers that the packaged English pipeline does not have. Together that is ~380 MB of
memory the semantic layer would hold for nothing. `without(...)` hides the named modules from the
import system for the calling thread only, for the duration of the block, so a library's optional
`try: import x` falls back as it would where x is not installed; other threads are never affected,
and a module that is already imported is not hidden (its integration then registers as it would).
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager


class _Hide(importlib.abc.MetaPathFinder):
    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.thread = threading.get_ident()

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if threading.get_ident() == self.thread and fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"{fullname} is hidden here", name=fullname)
        return None


@contextmanager
def without(*names: str) -> Iterator[None]:
    hidden = frozenset(n for n in names if n not in sys.modules)
    if not hidden:
        yield
        return
    finder = _Hide(hidden)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def _cli_unavailable(*args: object, **kwargs: object) -> None:
    raise RuntimeError("spaCy's command line is not loaded in the gateway; run `python -m spacy info`")


@contextmanager
def spacy_without_cli() -> Iterator[None]:
    """`import spacy` without its command line: spaCy's package imports `spacy.cli.info` only to offer
    `spacy.info()`, and `spacy.cli` imports every command, with weasel, typer, rich, requests, jinja2
    and httpx (~340 modules, ~15 MB measured). Loading and running a pipeline never uses them (no other
    spaCy module imports `spacy.cli`). For the import only, `spacy.cli` and `spacy.cli.info` are
    placeholders; they are removed afterwards, so a later `import spacy.cli` loads the real one."""
    if "spacy" in sys.modules or "spacy.cli" in sys.modules:
        yield
        return
    cli = types.ModuleType("spacy.cli")
    cli.__path__ = []
    info = types.ModuleType("spacy.cli.info")
    info.info = _cli_unavailable  # type: ignore[attr-defined]
    sys.modules["spacy.cli"], sys.modules["spacy.cli.info"] = cli, info
    try:
        yield
    finally:
        for name, placeholder in (("spacy.cli.info", info), ("spacy.cli", cli)):
            if sys.modules.get(name) is placeholder:
                del sys.modules[name]
        spacy = sys.modules.get("spacy")
        if spacy is not None and getattr(spacy, "cli", None) is cli:
            delattr(spacy, "cli")


def release_freed_memory() -> None:
    """Hand the memory that loading freed back to the system (glibc keeps freed heap pages
    otherwise: the parse of a lexicon leaves tens of MB resident that nothing uses). A no-op where
    the C library has no `malloc_trim`."""
    import ctypes
    import gc

    gc.collect()
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass
