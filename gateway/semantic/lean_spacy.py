"""spaCy's English pipeline loaded for what the structure checks read of it, with the same parses.

Two parts of the packaged pipeline are held for nothing here (measured on `en_core_web_sm`):

- the vocabulary's string table (`vocab/strings.json`, 85k strings the training met: ≈15 MB with
  cymem's bookkeeping of each). A parse does not read it: the models see hashes of each word's
  attributes, computed from the word itself, and every string a parse sets (a word, its norm,
  shape, lemma, tag, dependency label, morphology) is added to the table as it is set; the labels
  of the tagger, the parser and the attribute ruler are all added as those load. So it is not read
  (`exclude=["strings"]`); the table fills with the strings of the questions actually parsed.
- the rule lemmatizer's index of base forms per part of speech: plain lists of 91k strings that
  `rule_lemmatize` only asks `form in index` of (a scan of a list of up to 57k words). Held as
  `compact.SortedStrings`: the same answers, ≈5 MB less, a bisection instead of the scan.

Every token attribute of every eval question's parse is the same as with the ordinary load
(tests/semantic/test_lean_spacy.py).
"""

from __future__ import annotations

from typing import Any

from gateway.semantic.compact import SortedStrings

# what `structure` loads the packaged pipeline without: the pipes the checks never read (entities,
# sentences) and the vocabulary's string table
EXCLUDED = ["ner", "senter", "strings"]


def compact_lemma_index(nlp: Any) -> None:
    """The lemmatizer's index lists as `SortedStrings` (in place; membership is all it is asked)."""
    if "lemmatizer" not in nlp.pipe_names:
        return
    lookups = nlp.get_pipe("lemmatizer").lookups
    if not lookups.has_table("lemma_index"):
        return
    table = lookups.get_table("lemma_index")
    for key in list(table.keys()):
        forms = table[key]
        if isinstance(forms, list) and all(isinstance(f, str) for f in forms):
            table[key] = SortedStrings(forms)
