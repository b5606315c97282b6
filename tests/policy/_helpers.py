"""Small helpers shared by the policy tests."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

Writer = Callable[..., Path]


def digest_ref(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()
