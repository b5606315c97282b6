"""Two compact stand-ins for the large string tables the semantic layer reads, with the same answers.

A Python dict or set of strings costs ~100 bytes an entry (the string object and the table's slot);
the layer's tables hold over a million of them. Two kinds of table can be held for far less:

- `SortedStrings`: a fixed set of strings looked up now and then (behind the callers' caches): one
  UTF-8 buffer in sorted order and an array of offsets, searched by bisection (~5 µs a look-up).
  UTF-8 sorts bytes in code-point order, so the order of the buffer is the order of the strings.
- `PrefixFilter`: the prefixes a segmenter walks through on its way to longer dictionary words
  (jieba, the USE tokenizer). The walk only asks "may a word start with this?" to know when to
  stop; answering "yes" for a string that starts no word only costs one more (failed) look-up of a
  longer string, so a bit per hash answers it exactly where it matters: a real prefix is never
  missed, and which words are found does not change.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

_FILTER_BITS = 24  # 2 MiB of bits: ~3 % false "yes" for the 500k prefixes of jieba's dictionary


class SortedStrings:
    """Distinct strings, sorted: membership and each string's row (its rank) by bisection."""

    __slots__ = ("_blob", "_starts")

    def __init__(self, strings: Iterable[str]) -> None:
        ordered = sorted({s.encode("utf-8", "surrogatepass") for s in strings})
        self._blob = b"".join(ordered)
        starts = [0]
        for s in ordered:
            starts.append(starts[-1] + len(s))
        self._starts = _smallest_array(starts)

    def __len__(self) -> int:
        return len(self._starts) - 1

    def index(self, word: str) -> int:
        """`word`'s row, -1 when it is not one of the strings."""
        key = word.encode("utf-8", "surrogatepass")
        blob, starts = self._blob, self._starts
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if blob[starts[mid]:starts[mid + 1]] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(starts) - 1 and blob[starts[lo]:starts[lo + 1]] == key:
            return lo
        return -1

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.index(word) >= 0

    def __iter__(self) -> Iterator[str]:
        blob, starts = self._blob, self._starts
        for i in range(len(starts) - 1):
            yield blob[starts[i]:starts[i + 1]].decode("utf-8", "surrogatepass")


class PrefixFilter:
    """A set of strings that may answer "in" for a string it does not hold, never "not in" for one
    it holds (one hash bit per string). Hashes are the process's own (`hash(str)`), so a filter is
    built in the process that reads it."""

    __slots__ = ("_bits", "_mask")

    def __init__(self, bits: int = _FILTER_BITS) -> None:
        self._bits = bytearray(1 << (bits - 3))
        self._mask = (1 << bits) - 1

    def add(self, s: str) -> None:
        h = hash(s) & self._mask
        self._bits[h >> 3] |= 1 << (h & 7)

    def __contains__(self, s: str) -> bool:
        h = hash(s) & self._mask
        return bool(self._bits[h >> 3] >> (h & 7) & 1)

    def parts(self) -> tuple[bytearray, int]:
        """The bit array and the mask, for a hot loop that tests inline."""
        return self._bits, self._mask


class WordTable:
    """A dictionary's words, each with a frequency and a small tag number, found by hash: what two
    dicts of str would hold at ~100 bytes a word, in ~32 (one UTF-8 buffer of the words, arrays of
    offsets, frequencies, tags and an open-addressing table of rows). A look-up is Python code
    (~1 µs against a dict's ~0.05): for tables read behind a cache (jieba's tagging, once a question)."""

    __slots__ = ("_blob", "_check", "_freq", "_mask", "_slots", "_starts", "_tag")

    def __init__(self, rows: Iterable[tuple[str, int, int]]) -> None:
        """`rows`: (word, frequency, tag number < 256), each word once."""
        parts: list[bytes] = []
        starts, freqs, hashes = [0], [], []
        self._tag = bytearray()
        for word, freq, tag in rows:
            b = word.encode("utf-8", "surrogatepass")
            parts.append(b)
            starts.append(starts[-1] + len(b))
            freqs.append(freq)
            self._tag.append(tag)
            hashes.append(hash(word))
        self._blob = b"".join(parts)
        del parts
        self._starts = _smallest_array(starts)
        self._freq = _smallest_array(freqs)
        del starts, freqs
        size = 1 << max(4, (2 * len(hashes)).bit_length())  # load < 1/2: short probes for misses
        self._mask = size - 1
        self._slots = array("I", bytes(4 * size))  # row + 1; 0 = empty
        self._check = array("I", ((h >> 32) & 0xFFFFFFFF for h in hashes))
        for row, h in enumerate(hashes):
            i = h & self._mask
            while self._slots[i]:
                i = (i + 1) & self._mask
            self._slots[i] = row + 1

    def row(self, word: str) -> int:
        """`word`'s row, -1 when it is not in the table."""
        h = hash(word)
        mask, slots, check = self._mask, self._slots, self._check
        c = (h >> 32) & 0xFFFFFFFF
        i = h & mask
        while True:
            r = slots[i]
            if not r:
                return -1
            r -= 1
            if check[r] == c and self._blob[self._starts[r]:self._starts[r + 1]] == word.encode(
                    "utf-8", "surrogatepass"):
                return r
            i = (i + 1) & mask

    def freq(self, row: int) -> int:
        return self._freq[row]

    def tag(self, row: int) -> int:
        return self._tag[row]

    def __len__(self) -> int:
        return len(self._freq)

    def words(self) -> Iterator[str]:
        blob, starts = self._blob, self._starts
        for r in range(len(self._freq)):
            yield blob[starts[r]:starts[r + 1]].decode("utf-8", "surrogatepass")


def _smallest_array(values: list[int]) -> array[int]:
    """The values (≥ 0) in an array of 4-byte items where they fit, else of 8-byte ones."""
    return array("I" if not values or max(values) < 1 << 32 else "Q", values)
