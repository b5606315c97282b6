"""The guard's lexical tables in compact form: the same answers as the libraries, a fraction of the memory.

Each library keeps far more than the guard asks of it, in Python objects of ~60 bytes apiece:

- pypinyin imports its table of 400k phrase readings (≈45 MB) whenever it is imported; the guard only
  asks for the readings of single characters, which come from the single-character table alone
  (`PYPINYIN_NO_PHRASES`; the results are identical for every character of that table, checked in
  tests/semantic/test_lean_tables.py).
- LemmInflect's lexicon (70k words × a dict of tuples per part of speech, ≈30 MB) is read here once
  and kept as word → its noun and verb lemmas (the only ones the guard uses): the words in one sorted
  buffer (`compact.SortedStrings`), each pointing at one of the distinct lemma tuples (`Lemmas`).
- The WordNet table (110k lemmas × a frozenset of synset names, ≈65 MB) is kept as lemma → a row
  of synset numbers in one array, the lemmas in one sorted buffer; a word's senses are made into a
  frozenset when asked for (the callers cache their answers).
- jieba's prefix dict (498k words and word prefixes → frequency, ≈55 MB) and its part-of-speech table
  (349k words → tag) are read from its dictionary file in one pass into one `compact.WordTable`
  (words, frequencies, tags: ≈10 MB) and a `compact.PrefixFilter` for the prefixes, which only the
  walk of `get_DAG` asks about: the same DAG, frequencies and tags (tests/semantic/test_lean_tables.py).

Look-ups in these tables are Python code (a bisection, a probe of a hash table: microseconds), behind
the callers' caches; jieba's tagging of a question took 233 → 248 µs with them (1,120 Chinese eval
questions, best of 3).

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

from gateway.semantic.compact import PrefixFilter, SortedStrings, WordTable
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
_lemma_table: Lemmas | None = None
_lemma_missing = False


class Lemmas:
    """Word → its noun and verb lemmas: the words in one sorted buffer (`compact.SortedStrings`),
    each word's row pointing at one of the distinct lemma tuples."""

    __slots__ = ("_rows", "_tuples", "_words")

    def __init__(self, found: dict[str, tuple[str, ...]]) -> None:
        self._words = SortedStrings(found)
        strings: dict[str, str] = {}
        ids: dict[tuple[str, ...], int] = {}
        self._tuples: list[tuple[str, ...]] = []
        self._rows = array("i")
        for word in self._words:
            both = found[word]
            if both not in ids:
                # new objects only (see `Senses`): the parse's go back to the allocator whole
                ids[both] = len(self._tuples)
                self._tuples.append(tuple(strings.setdefault(x, x.encode().decode()) for x in both))
            self._rows.append(ids[both])

    def get(self, word: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        row = self._words.index(word)
        return default if row < 0 else self._tuples[self._rows[row]]

    def __len__(self) -> int:
        return len(self._words)


def _lemmas_table() -> Lemmas | None:
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
                table = Lemmas(found)
                del lexicon, overrides, found
                _lemma_table = table
    return _lemma_table


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
    """Lemma → its synsets (numbers standing for the table's synset names): the lemmas in one sorted
    buffer (`compact.SortedStrings`), the synsets of row i at `_synsets[_starts[i]:_starts[i + 1]]`."""

    __slots__ = ("_lemmas", "_starts", "_synsets")

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
        self._lemmas = SortedStrings(parsed)
        self._starts = array("i", [0])
        self._synsets = array("i")
        for lemma in self._lemmas:  # rows in the buffer's order
            self._synsets.extend(parsed[lemma])
            self._starts.append(len(self._synsets))

    def get(self, lemma: str, default: frozenset[int] = frozenset()) -> frozenset[int]:
        row = self._lemmas.index(lemma)
        if row < 0:
            return default
        return frozenset(self._synsets[self._starts[row]:self._starts[row + 1]])

    def __contains__(self, lemma: object) -> bool:
        return lemma in self._lemmas

    def __len__(self) -> int:
        return len(self._lemmas)


def wordnet_senses() -> Senses:
    raw = resources.files("gateway.semantic").joinpath("data/wordnet_synsets.tsv.gz").read_bytes()
    return Senses(iter(gzip.decompress(raw).decode("utf-8").splitlines()))


# ---- jieba ---------------------------------------------------------------------------------------

_jieba_lock = threading.Lock()
_jieba: list[Any] = []  # [jieba.posseg] once loaded, [None] without jieba


def jieba_posseg() -> Any:
    """`jieba.posseg`, initialised, its tables the compact ones of `_read_dictionary` (None without
    jieba). `posseg.cut` answers exactly as with jieba's own load (checked on every eval question in
    tests/semantic/test_lean_tables.py). The tables are read-only: `add_word` and user dictionaries
    are not for this tokenizer (nothing here calls them)."""
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
    freq, total, prefixes, tags = _read_dictionary(dt.get_dict_file())
    dt.FREQ, dt.total = freq, total
    dt.get_DAG = _dag_of(freq, prefixes)
    dt.initialized = True  # what `initialize` would read (its prefix dict) is held above
    pseg.dt.word_tag_tab = tags
    return pseg


def _read_dictionary(lines: Any) -> tuple[_Frequencies, int, PrefixFilter, _Tags]:
    """jieba's dictionary file in one pass: what `Tokenizer.gen_pfdict` builds and
    `POSTokenizer.load_word_tag` reads, in compact form (`compact.WordTable`: ~10 MB for what two
    dicts held in ~45). `gen_pfdict`'s prefix dict maps every word to its frequency and every prefix
    of a word to 0; here a word reads its frequency (0 or absent alike, as to every caller: `calc`
    takes `get(w) or 1`, the cut tests `not get(w)`) and every prefix goes to a `PrefixFilter`, what
    the walk of `get_DAG` asks. The tags are the last line's, as `load_word_tag` keeps them."""
    freq: dict[str, int] = {}
    tag_of: dict[str, int] = {}
    names: dict[str, int] = {}
    prefixes = PrefixFilter()
    add = prefixes.add
    total = 0
    with lines:
        for raw in lines:
            text = raw.strip().decode("utf-8")
            if not text:
                continue
            word, freq_text, tag = text.split(" ")
            n = int(freq_text)
            total += n
            freq[word] = n  # the last line's, as in gen_pfdict
            tag_of[word] = names.setdefault(tag, len(names))
            for k in range(1, len(word) + 1):
                add(word[:k])
    table = WordTable((w, freq[w], t) for w, t in tag_of.items())
    del freq, tag_of
    tags = list(names)
    return _Frequencies(table), total, prefixes, _Tags(table, tags)


class _Frequencies:
    """`Tokenizer.FREQ` as jieba's cut reads it (`get`, `[]`, `in`) over a `WordTable`: a word's
    frequency, None for a string that is no word or a word of frequency 0."""

    __slots__ = ("table",)

    def __init__(self, table: WordTable) -> None:
        self.table = table

    def get(self, word: str, default: Any = None) -> Any:
        r = self.table.row(word)
        f = self.table.freq(r) if r >= 0 else 0
        return f if f else default

    def __getitem__(self, word: str) -> int:
        f = self.get(word)
        if f is None:
            raise KeyError(word)
        return int(f)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.get(word) is not None

    def __iter__(self) -> Iterator[str]:
        return (w for w in self.table.words() if self.get(w))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Tags:
    """`POSTokenizer.word_tag_tab` (`get`, `[]`, `in`, `len`) over the same `WordTable`."""

    __slots__ = ("names", "table")

    def __init__(self, table: WordTable, names: list[str]) -> None:
        self.table, self.names = table, names

    def get(self, word: str, default: Any = None) -> Any:
        r = self.table.row(word)
        return self.names[self.table.tag(r)] if r >= 0 else default

    def __getitem__(self, word: str) -> str:
        r = self.table.row(word)
        if r < 0:
            raise KeyError(word)
        return self.names[self.table.tag(r)]

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.table.row(word) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.table.words())

    def __len__(self) -> int:
        return len(self.table)

    def values(self) -> Iterator[str]:
        return (self.names[self.table.tag(r)] for r in range(len(self.table)))


def _dag_of(freq: _Frequencies, prefixes: PrefixFilter) -> Any:
    """`Tokenizer.get_DAG` (the same DAG) over the compact tables of `_read_dictionary`."""
    bits, mask = prefixes.parts()
    get = freq.get

    def get_dag(sentence: str) -> dict[int, list[int]]:
        dag: dict[int, list[int]] = {}
        n = len(sentence)
        for k in range(n):
            found = []
            i = k
            frag = sentence[k]
            while i < n:
                if get(frag):
                    found.append(i)
                else:
                    h = hash(frag) & mask
                    if not bits[h >> 3] >> (h & 7) & 1:
                        break  # no word starts with it, so no longer string is a word either
                i += 1
                frag = sentence[k:i + 1]
            dag[k] = found or [k]
        return dag

    return get_dag
