"""The guard's lexical tables in compact form: the same answers as the libraries, a fraction of the memory.

Each library keeps far more than the guard asks of it, in Python objects of ~60 bytes apiece:

- pypinyin imports its table of 400k phrase readings (≈45 MB) whenever it is imported; the guard only
  asks for the readings of single characters, which come from the single-character table alone
  (`PYPINYIN_NO_PHRASES`; the results are identical for every character of that table, checked in
  tests/semantic/test_lean_tables.py).
- LemmInflect's lexicon (70k words × a dict of tuples per part of speech, ≈30 MB) is read here once
  and kept as word → its noun and verb lemmas (the only ones the guard uses), one tuple per word.
- The WordNet table (110k lemmas × a frozenset of synset names, ≈65 MB) is kept as lemma → a row
  of synset numbers in one array; a word's senses are made into a frozenset when asked for (the
  callers cache their answers).
- jieba's part-of-speech table (349k words → tag, ≈40 MB) is filled with the word objects of jieba's
  own dictionary (`FREQ`, which holds the same words) and one object per tag, instead of a second copy
  of every word and a tag string per line: the same dict, ≈30 MB less.

Everything loads in the layer's background load (`gateway.semantic.guard.warm_up`), off the event loop.
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import sys
import threading
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib import resources
from typing import Any

from gateway.semantic.lean_import import without

_env_lock = threading.Lock()


@contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Environment variables a library reads at import time, set for the import only."""
    with _env_lock:
        saved = {k: os.environ.get(k) for k in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@lru_cache(maxsize=1)
def _pinyin() -> Any:
    """pypinyin's `pinyin` function without its phrase table (None when pypinyin is missing)."""
    try:
        # NO_DICT_COPY: nobody here customises the dictionary, so its private copy is not needed either
        with _environ(PYPINYIN_NO_PHRASES="1", PYPINYIN_NO_DICT_COPY="1"):
            from pypinyin import Style, pinyin
    except ImportError:
        return None
    return lambda ch: pinyin(ch, heteronym=True, style=Style.NORMAL)[0]


@lru_cache(maxsize=16384)
def readings(ch: str) -> frozenset[str] | None:
    """The toneless readings of one Chinese character (the character itself when it has none, as
    pypinyin answers); None without pypinyin."""
    of = _pinyin()
    return None if of is None else frozenset(of(ch))


# ---- LemmInflect ---------------------------------------------------------------------------------

_lemma_lock = threading.Lock()
_lemma_table: dict[str, tuple[str, ...]] | None = None
_lemma_missing = False


def _lemmas_table() -> dict[str, tuple[str, ...]] | None:
    global _lemma_table, _lemma_missing
    if _lemma_table is None and not _lemma_missing:
        with _lemma_lock:
            if _lemma_table is None and not _lemma_missing:
                try:
                    with without("spacy"):  # its spaCy hook is never used here (see lean_import)
                        from lemminflect import config
                        from lemminflect.codecs.LemmaLUCodec import LemmaLUCodec
                        from lemminflect.codecs.OverridesCodec import OverridesCodec
                except ImportError:
                    _lemma_missing = True
                    return None
                lexicon = LemmaLUCodec.load(config.lemma_lu_fn)
                overrides = OverridesCodec.load(config.lemma_overrides_fn)
                found: dict[str, tuple[str, ...]] = {}
                for word in lexicon.keys() | overrides.keys():
                    # what getAllLemmas looks up: the lexicon's entry, the overrides replacing whole
                    # parts of speech
                    entry = {**lexicon.get(word, {}), **overrides.get(word, {})}
                    both = tuple(dict.fromkeys(lemma for pos in ("NOUN", "VERB") for lemma in entry.get(pos, ())))
                    if both:
                        found[word] = both
                table = _fresh(found)
                del lexicon, overrides, found
                _lemma_table = table
    return _lemma_table


def _fresh(found: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """A copy made of new objects only, after the parse: the parse's millions of small objects
    then go back to the allocator in whole arenas (memory the process returns), instead of being
    pinned by the few of them that a table would keep."""
    strings: dict[str, str] = {}
    rows: dict[str, tuple[str, ...]] = {}

    def new(s: str) -> str:
        return strings.setdefault(s, s.encode().decode())

    for both in found.values():
        rows.setdefault("\x00".join(both), tuple(new(lemma) for lemma in both))
    return {new(word): rows["\x00".join(both)] for word, both in found.items()}


def _caps_style(word: str) -> Any:
    # LemmInflect's own rule (LexicalUtils.getCapsStyle / applyCapsStyle): the lemmas take the
    # word's capitalisation
    if word.isupper():
        return str.upper
    if word and word[0].isupper():
        return str.capitalize
    return str.lower


def noun_verb_lemmas(word: str) -> frozenset[str] | None:
    """`getAllLemmas(word)`'s NOUN and VERB lemmas, as LemmInflect returns them; None without it."""
    table = _lemmas_table()
    if table is None:
        return None
    found = table.get(word.lower(), ())
    style = _caps_style(word)
    return frozenset(style(lemma) for lemma in found)


# ---- WordNet -------------------------------------------------------------------------------------


class Senses:
    """Lemma → its synsets (numbers standing for the table's synset names), one array for them all."""

    __slots__ = ("_rows", "_starts", "_synsets")

    def __init__(self, lines: Iterator[str]) -> None:
        codes: dict[str, int] = {}
        parsed: dict[str, list[int]] = {}
        for line in lines:
            lemma, pos, offsets = line.split("\t")
            row = parsed.setdefault(lemma, [])
            for o in offsets.split(","):
                code = codes.setdefault(pos + o, len(codes))
                if code not in row:
                    row.append(code)
        # new objects only from here (see `_fresh`): the parse's go back to the allocator whole
        self._rows: dict[str, int] = {}
        self._starts = array("i", [0])
        self._synsets = array("i")
        for lemma, found in parsed.items():
            self._rows[lemma.encode().decode()] = len(self._starts) - 1
            self._synsets.extend(found)
            self._starts.append(len(self._synsets))

    def get(self, lemma: str, default: frozenset[int] = frozenset()) -> frozenset[int]:
        row = self._rows.get(lemma)
        if row is None:
            return default
        return frozenset(self._synsets[self._starts[row]:self._starts[row + 1]])

    def __contains__(self, lemma: object) -> bool:
        return lemma in self._rows

    def __len__(self) -> int:
        return len(self._rows)


def wordnet_senses() -> Senses:
    raw = resources.files("gateway.semantic").joinpath("data/wordnet_synsets.tsv.gz").read_bytes()
    return Senses(iter(gzip.decompress(raw).decode("utf-8").splitlines()))


# ---- jieba ---------------------------------------------------------------------------------------

_jieba_lock = threading.Lock()
_jieba: list[Any] = []  # [jieba.posseg] once loaded, [None] without jieba


def jieba_posseg() -> Any:
    """`jieba.posseg`, initialised, with its word → tag table sharing the dictionary's word objects
    (None without jieba). `posseg.cut` answers exactly as with jieba's own load: the table holds the
    same words and tags (checked on every eval question in tests/semantic/test_lean_tables.py)."""
    if not _jieba:
        with _jieba_lock:
            if not _jieba:
                _jieba.append(_load_jieba())
    return _jieba[0]


def _load_jieba() -> Any:
    try:
        import jieba
    except ImportError:
        return None
    jieba.setLogLevel(logging.WARNING)
    if "jieba.posseg" in sys.modules:  # loaded elsewhere the ordinary way: nothing to share any more
        import jieba.posseg as pseg

        pseg.dt.tokenizer.check_initialized()
        return pseg
    dt = jieba.dt
    # The posseg module reads its table at import from the tokenizer's dictionary file: an empty one
    # for the import (nobody else calls into jieba before this lock is released), the real one below.
    dt.get_dict_file = lambda: io.BytesIO(b"")
    try:
        import jieba.posseg as pseg
    finally:
        del dt.get_dict_file
    dt.check_initialized()  # FREQ: every word and word prefix (jieba's marshal cache after the first run)
    pseg.dt.word_tag_tab = _word_tags(dt.FREQ, dt.get_dict_file())
    return pseg


def _word_tags(freq: dict[str, int], lines: Any) -> dict[str, str]:
    """`POSTokenizer.load_word_tag`'s table (its parse, its order), its keys the dictionary's own
    objects. The lookup dict of those objects is large enough to live outside the small-object heap,
    so it goes back to the system whole when it is dropped."""
    same = {word: word for word in freq}
    tags: dict[str, str] = {}
    table: dict[str, str] = {}
    with lines:
        for line in lines:
            text = line.strip().decode("utf-8")
            if not text:
                continue
            word, _, tag = text.split(" ")
            table[same.get(word, word)] = tags.setdefault(tag, tag)
    return table
