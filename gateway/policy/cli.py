"""`llm-cache-gateway policy validate DIR_OR_FILE`: exit 0 with a summary, or 1 with every issue.

Issues go to stderr, one a line as `file:line: field: message` (the form editors and CI annotate);
warnings (an `env:` key whose variable is unset here) are printed too but do not fail the check,
because CI usually validates without the production secrets.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TextIO

from gateway.policy.loader import check_policies


def validate_command(path: str, env: Mapping[str, str] | None = None,
                     out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    outcome = check_policies(path, env)
    for warning in outcome.warnings:
        print(f"{warning} (warning)", file=err)
    if outcome.policy_set is None:
        for issue in outcome.errors:
            print(issue, file=err)
        n = len(outcome.errors)
        print(f"FAILED: {n} error{'s' if n != 1 else ''}", file=err)
        return 1
    tenants = outcome.policy_set.tenants
    print(f"OK: {len(tenants)} tenant{'s' if len(tenants) != 1 else ''} ({', '.join(tenants)})", file=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m gateway.policy.cli validate PATH` (the console script wires `validate_command` itself)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "validate":
        print("usage: python -m gateway.policy.cli validate DIR_OR_FILE", file=sys.stderr)
        return 2
    return validate_command(args[1])


if __name__ == "__main__":
    raise SystemExit(main())
