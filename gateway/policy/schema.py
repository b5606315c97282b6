"""JSON Schema (draft 2020-12) of the policy format, generated from the pydantic models, for editors.

Two schemas: one for a tenant file (`docs/policy.schema.json`) and one for `_defaults.yaml`
(`docs/policy-defaults.schema.json`: no `tenant`, no `api_keys`, nothing required).

    python -m gateway.policy.schema > docs/policy.schema.json
    python -m gateway.policy.schema --defaults > docs/policy-defaults.schema.json
    python -m gateway.policy.schema --write docs        # both files

The schema checks shape only; `policy validate` also checks what a schema cannot (duplicate tenants
and keys across files, `env:` variables). Both agree on every single-file rule (tests hold them to it).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

from gateway.policy.loader import TENANT_ONLY
from gateway.policy.models import TenantPolicy

DRAFT = "https://json-schema.org/draft/2020-12/schema"
TENANT_FILE = "policy.schema.json"
DEFAULTS_FILE = "policy-defaults.schema.json"


def tenant_schema() -> dict[str, Any]:
    schema = TenantPolicy.model_json_schema(mode="validation")
    schema["title"] = "llm-cache-gateway tenant policy"
    schema["description"] = (
        "One tenant's policy file (policies/<name>.yaml). Values not set here come from _defaults.yaml, "
        "then from the built-in defaults. Durations: 30s, 5m, 1h, 7d."
    )
    return {"$schema": DRAFT, **schema}


def defaults_schema() -> dict[str, Any]:
    schema = copy.deepcopy(tenant_schema())
    for name in TENANT_ONLY:
        schema["properties"].pop(name, None)
    schema.pop("required", None)
    schema["title"] = "llm-cache-gateway policy defaults"
    schema["description"] = (
        "policies/_defaults.yaml: values every tenant inherits (deep-merged: a tenant's nested mappings "
        "merge with these, its lists and scalars replace them). tenant and api_keys are not allowed here."
    )
    return schema


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--write"] and len(args) == 2:
        folder = Path(args[1])
        (folder / TENANT_FILE).write_text(render(tenant_schema()), encoding="utf-8")
        (folder / DEFAULTS_FILE).write_text(render(defaults_schema()), encoding="utf-8")
        return 0
    if args == ["--defaults"]:
        sys.stdout.write(render(defaults_schema()))
        return 0
    if not args:
        sys.stdout.write(render(tenant_schema()))
        return 0
    print("usage: python -m gateway.policy.schema [--defaults | --write DIR]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
