"""What is wrong with a policy folder, said as `file:line: field: message`.

An issue never carries a key's value: messages about `api_keys` name the entry (`api_keys[1]`)
and the line, not what was written there, because a plain key pasted by mistake is a secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class PolicyIssue:
    file: str
    line: int  # 1-based; 0 when the problem has no line (a missing folder, an unreadable file)
    field: str  # dotted path such as `response_cache.ttl` or `api_keys[1]`; "" for file-level problems
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class PolicyError(Exception):
    """The policy folder is not valid; `issues` lists every error found in every file."""

    def __init__(self, issues: Iterable[PolicyIssue], warnings: Iterable[PolicyIssue] = ()) -> None:
        self.issues = tuple(issues)
        self.warnings = tuple(warnings)
        super().__init__(str(self))

    def __str__(self) -> str:
        n = len(self.issues)
        head = f"{n} error{'s' if n != 1 else ''} in the tenant policies:"
        return "\n".join([head, *(f"  {issue}" for issue in self.issues)])
