from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import jsonschema
import pytest

from gateway.policy.loader import check_policies
from gateway.policy.schema import DEFAULTS_FILE, TENANT_FILE, defaults_schema, main, render, tenant_schema
from gateway.policy.yamlsource import parse_yaml

from ._helpers import Writer, digest_ref

ROOT = Path(__file__).resolve().parents[2]
REGEN = "regenerate with: python -m gateway.policy.schema --write docs"


def validator(schema: dict) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def test_the_committed_schemas_are_current() -> None:
    assert (ROOT / "docs" / TENANT_FILE).read_text(encoding="utf-8") == render(tenant_schema()), REGEN
    assert (ROOT / "docs" / DEFAULTS_FILE).read_text(encoding="utf-8") == render(defaults_schema()), REGEN


def test_the_generator_prints_what_is_committed() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([]) == 0
    assert json.loads(out.getvalue())["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert out.getvalue() == render(tenant_schema())


def test_the_example_policies_validate_against_the_schemas() -> None:
    tenant, defaults = validator(tenant_schema()), validator(defaults_schema())
    files = sorted((ROOT / "policies").glob("*.yaml"))
    assert len(files) >= 3
    for file in files:
        parsed = parse_yaml(file.read_text(encoding="utf-8"), str(file))
        schema = defaults if file.name == "_defaults.yaml" else tenant
        assert [e.message for e in schema.iter_errors(parsed.value)] == [], file


@pytest.mark.parametrize("duration", ["30s", "5m", "1h", "7d", "250ms", "1.5h", 90, 0.5])
def test_durations_in_the_schema(duration: object) -> None:
    doc = {"tenant": "a", "api_keys": ["env:A"], "response_cache": {"ttl": duration}}
    assert validator(tenant_schema()).is_valid(doc)


BAD_DOCS = [
    ("unknown field", {"response_cache": {"tll": "1h"}}),
    ("plain key", {"api_keys": ["sk-plain"]}),
    ("bad duration", {"semantic_cache": {"ttl": "1 hour"}}),
    ("zero duration", {"semantic_cache": {"ttl": 0}}),
    ("out of range", {"semantic_cache": {"threshold": 1.5}}),
    ("bad enum", {"response_cache": {"scope": "team"}}),
    ("bad route", {"response_cache": {"routes": ["chats"]}}),
    ("bad type", {"max_body_bytes": "big"}),
    ("bad tenant name", {"tenant": "a b"}),
    ("no keys", {"api_keys": []}),
]


@pytest.mark.parametrize(("what", "change"), BAD_DOCS, ids=[b[0] for b in BAD_DOCS])
def test_schema_and_loader_refuse_the_same_things(what: str, change: dict, policy_dir: Writer) -> None:
    doc = {"tenant": "acme", "api_keys": [digest_ref("k")], **change}
    assert not validator(tenant_schema()).is_valid(doc), what
    folder = policy_dir(acme=json.dumps(doc))  # JSON is YAML
    assert check_policies(folder, {}).errors, what


def test_the_defaults_schema_has_no_tenant_fields_and_nothing_required() -> None:
    defaults = validator(defaults_schema())
    assert defaults.is_valid({}) and defaults.is_valid({"semantic_cache": {"enabled": True}})
    assert not defaults.is_valid({"tenant": "x"}) and not defaults.is_valid({"api_keys": ["env:A"]})
    assert not validator(tenant_schema()).is_valid({})  # a tenant file needs tenant and api_keys
