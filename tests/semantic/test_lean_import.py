"""Importing spaCy for the parse without its command line, in a fresh process (this one may have
imported anything): the parse works, the command line's packages stay out, and a later
`import spacy.cli` still loads the real command line."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from gateway.semantic import structure
frame = structure.frame("How do I reset my password?", "en")
assert frame is not None and frame.operation == "reset" and "password" in frame.objects, frame
left_out = [m for m in ("spacy.cli", "weasel", "typer", "rich", "requests") if m in sys.modules]
assert not left_out, left_out
import spacy
assert not hasattr(spacy, "cli")
import spacy.cli
assert hasattr(spacy.cli, "download") and spacy.cli.info.__module__ != "gateway.semantic.lean_import"
"""


def test_spacy_loads_without_its_command_line() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
