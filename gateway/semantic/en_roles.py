"""Who does an English action and what it is done to, from spaCy's dependency parse.

The small English model mislabels some constructions, read here by general grammar: a passive whose
subject it labels `nsubj` (`how are refunds processed`, `was my payment received`), the expletive `it`
of `is it possible to V` / `does it take … to V` (it stands for the clause: nobody is named), a
controlled verb's doer taken from its head (`does my landlord need to give`, `am I allowed to work`)
or from the person it tells (`can you show me how to reset`: I reset),
and `by` with a bare noun, which names the means (`by phone`), not a doer.
"""

from __future__ import annotations

from typing import Any


def doer_and_object(verb: Any) -> tuple[Any | None, Any | None]:
    """The tokens of who does `verb` and of what it is done to (either may be None), a passive read as
    its active (`changes were undone by collaborators`: collaborators undo changes)."""
    kids = list(verb.children)
    subj = next((c for c in kids if c.dep_ == "nsubj"), None)
    obj = next((c for c in kids if c.dep_ in ("dobj", "obj", "nsubjpass")), None)
    passive = subj is not None and obj is None and _passive(verb)
    if passive:
        subj, obj = None, subj  # the parser's `nsubj` of a passive is what is acted on; no doer said
    head = verb
    while not passive and subj is None and head.dep_ in ("xcomp", "conj", "acomp") and head.head is not head:
        below, head = head, head.head  # "does my landlord need to give …": the subject of `need` gives
        told = _told(head, below)
        if told is not None:
            subj = told  # "can you tell me how to reset …": the one told resets
            break
        subj = _controller(head)
        if below.dep_ == "xcomp" and _expletive(subj, head):
            subj = None  # "is it possible to bring …": `it` stands for the clause, nobody acts
            break
        if subj is not None and obj is None and _passive(verb):
            subj, obj = None, subj  # "does a refund take to be processed": the refund is processed
            break
    agent = next((c for c in kids if c.dep_ == "agent"), None)
    if agent is not None:
        by = next((c for c in agent.children if c.dep_ == "pobj"), None)
        if by is not None and not _means(by):
            subj = by
    return subj, obj


_OBJECT_PRONOUNS = frozenset({"me", "you", "him", "her", "us", "them"})


def _told(head: Any, below: Any) -> Any | None:
    """Object control: in `tell / show / ask / want me to V` (and `… me how to V`) the person told
    does V. Only a personal pronoun is read so (`use my card to pay`: the card does not pay)."""
    if below.dep_ != "xcomp":
        return None
    return next((c for c in head.children if c.dep_ in ("dobj", "dative") and c.i < below.i
                 and c.text.lower() in _OBJECT_PRONOUNS), None)


def _means(t: Any) -> bool:
    """`by phone`, `by email`, `by card`: a bare singular common noun after `by` names the means, not
    a doer (a doer has a determiner, a possessor, a name or a plural: `by the driver`, `by editors`)."""
    return t.tag_ == "NN" and not any(c.dep_ in ("det", "poss", "amod", "compound") for c in t.children)


def _passive(verb: Any) -> bool:
    """A verb read as passive: with a passive auxiliary (`how are refunds processed`; the tagger may
    call the participle a past tense, `are credit cards accepted`), or a past participle that is the
    complement of `be` (`was my payment received`, which the parser hangs on `was`)."""
    if any(c.dep_ == "auxpass" for c in verb.children):
        return True
    return verb.tag_ == "VBN" and verb.dep_ == "acomp" and verb.head.lemma_ == "be"


def _expletive(subj: Any | None, head: Any) -> bool:
    """`it` in `is it possible / OK / safe to V` (the subject of `be` with an adjective complement, the
    infinitive hung on `be`: in `is it able to V` it hangs on `able`, and `it` does V) and in `does it
    take / cost … to V`: it stands for the infinitive clause (extraposition), not for anyone who does V."""
    if subj is None or subj.text.lower() != "it":
        return False
    if head.lemma_ in ("take", "cost"):
        return True  # "how long does it take to process …", "how much does it cost to ship …"
    return head.lemma_ == "be" and any(c.dep_ == "acomp" and c.pos_ == "ADJ" for c in head.children)


def _controller(head: Any) -> Any | None:
    """Who does a verb controlled by `head`: its subject, also a passive one (`am I allowed to work`:
    I work) or one the parser hung on its auxiliary (`is my wife allowed to drive`, `is my wife able
    to drive`: the wife drives)."""
    kids = list(head.children)
    found = next((c for c in kids if c.dep_ in ("nsubj", "nsubjpass")), None)
    for aux in kids:
        if found is None and aux.dep_ in ("aux", "auxpass"):
            found = next((c for c in aux.children if c.dep_ in ("nsubj", "nsubjpass")), None)
    return found
