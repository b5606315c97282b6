from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gateway.policy.issues import PolicyError, PolicyIssue
from gateway.policy.loader import check_policies, load_policies

from ._helpers import Writer, digest_ref

ACME = 'tenant: acme\napi_keys: ["env:ACME_KEY"]\n'  # two lines: what a test appends starts at line 3
ENV = {"ACME_KEY": "acme-secret", "GLOBEX_KEY": "globex-secret"}


def acme(extra: str) -> str:
    return ACME + textwrap.dedent(extra).lstrip("\n")


def errors(folder: Path, env: dict[str, str] | None = None) -> list[str]:
    """Every error as `name:line: field: message`, with the folder prefix cut for readability."""
    outcome = check_policies(folder, ENV if env is None else env)
    assert outcome.policy_set is None, "expected errors"
    return [str(i).replace(f"{folder}/", "") for i in outcome.errors]


# ---- each error class, with file, line and field ----

def test_unknown_field_names_file_line_field_and_suggests(policy_dir: Writer) -> None:
    folder = policy_dir(acme="""
        tenant: acme
        api_keys: ["env:ACME_KEY"]
        response_cache:
          enabled: true
          tll: 5m
        semantic_cashe: {}
    """)
    assert errors(folder) == [
        "acme.yaml:5: response_cache.tll: unknown field (did you mean 'ttl'?)",
        "acme.yaml:6: semantic_cashe: unknown field (did you mean 'semantic_cache'?)",
    ]


def test_unknown_field_without_a_close_match_lists_the_allowed_ones(policy_dir: Writer) -> None:
    folder = policy_dir(acme=acme("provider_cache: {azure: {}}\n"))
    assert errors(folder) == [
        "acme.yaml:3: provider_cache.azure: unknown field (allowed: anthropic, gemini, openai, bedrock, learn, "
        "vendor_diagnostics)"]


def test_bad_types(policy_dir: Writer) -> None:
    folder = policy_dir(acme="""
        tenant: acme
        api_keys: "env:ACME_KEY"
        response_cache:
          enabled: maybe
        max_body_bytes: big
        semantic_cache:
          version: 3
    """)
    assert errors(folder) == [
        "acme.yaml:2: api_keys: Input should be a valid list",
        "acme.yaml:4: response_cache.enabled: Input should be a valid boolean, unable to interpret input",
        "acme.yaml:5: max_body_bytes: Input should be a valid integer, unable to parse string as an integer",
        "acme.yaml:7: semantic_cache.version: Input should be a valid string",
    ]


def test_out_of_range_and_enum_values(policy_dir: Writer) -> None:
    folder = policy_dir(acme=acme("""
        semantic_cache:
          threshold: 1.5
          max_history_turns: 0
        response_cache: {scope: team}
        provider_cache:
          anthropic: {ttl: 2h}
    """))
    assert errors(folder) == [
        "acme.yaml:4: semantic_cache.threshold: Input should be less than or equal to 1",
        "acme.yaml:5: semantic_cache.max_history_turns: Input should be greater than or equal to 1",
        "acme.yaml:6: response_cache.scope: Input should be 'tenant' or 'user'",
        "acme.yaml:8: provider_cache.anthropic.ttl: Input should be 'auto', '5m' or '1h'",
    ]


def test_bad_durations(policy_dir: Writer) -> None:
    folder = policy_dir(acme=acme("""
        response_cache: {ttl: 1 hour}
        semantic_cache: {ttl: 0s}
        provider_cache:
          gemini:
            ttl: true
    """))
    assert errors(folder) == [
        "acme.yaml:3: response_cache.ttl: '1 hour' is not a duration such as 30s, 5m, 1h or 7d",
        "acme.yaml:4: semantic_cache.ttl: a duration must be positive",
        "acme.yaml:7: provider_cache.gemini.ttl: a boolean is not a duration; write 30s, 5m, 1h or 7d",
    ]


def test_plain_key_is_refused_with_its_entry_and_never_echoed(policy_dir: Writer) -> None:
    folder = policy_dir(acme="""
        tenant: acme
        api_keys:
          - env:ACME_KEY
          - sk-proj-PLAINSECRET123456
    """)
    (message,) = errors(folder)
    assert message.startswith("acme.yaml:4: api_keys[1]: must be 'sha256:<64 hex digits>' or 'env:VARNAME'")
    assert "PLAINSECRET" not in str(PolicyError(check_policies(folder, ENV).errors))


def test_bad_regex_in_exclude_patterns(policy_dir: Writer) -> None:
    folder = policy_dir(acme=acme("""
        semantic_cache:
          exclude_patterns:
            - 'today'
            - '(latest'
    """))
    (message,) = errors(folder)
    assert message.startswith("acme.yaml:6: semantic_cache.exclude_patterns[1]: not a valid regular expression")


def test_missing_required_fields_point_at_the_file(policy_dir: Writer) -> None:
    folder = policy_dir(acme="# a comment\nresponse_cache: {ttl: 1h}\n")
    assert errors(folder) == [
        "acme.yaml:2: tenant: required field is missing",
        "acme.yaml:2: api_keys: required field is missing",
    ]


def test_duplicate_tenant_names_across_files(policy_dir: Writer) -> None:
    folder = policy_dir(a=ACME, b="""
        # copied from a.yaml
        tenant: acme
        api_keys: ["env:GLOBEX_KEY"]
    """)
    assert errors(folder) == ["b.yaml:2: tenant: tenant 'acme' is already defined in a.yaml:1"]


def test_the_same_key_claimed_by_two_tenants_even_through_different_references(policy_dir: Writer) -> None:
    # globex lists the digest of the very key that acme reads from $ACME_KEY.
    folder = policy_dir(acme=ACME, globex=f"""
        tenant: globex
        api_keys:
          - env:GLOBEX_KEY
          - {digest_ref("acme-secret")}
    """)
    assert errors(folder) == [
        "globex.yaml:4: api_keys[1]: this key is already a key of tenant 'acme' (acme.yaml:2)"]


def test_the_same_key_twice_in_one_tenant_is_fine(policy_dir: Writer) -> None:
    folder = policy_dir(acme=f'tenant: acme\napi_keys: ["env:ACME_KEY", "{digest_ref("acme-secret")}"]\n')
    assert load_policies(folder, ENV).lookup("acme-secret").tenant == "acme"


def test_the_digest_of_an_empty_key_is_refused(policy_dir: Writer) -> None:
    folder = policy_dir(acme=f'tenant: acme\napi_keys: ["{digest_ref("")}"]\n')
    assert errors(folder) == ["acme.yaml:2: api_keys[0]: this is the digest of an empty key"]


def test_unset_env_variable_is_a_warning_and_that_key_does_not_work(policy_dir: Writer) -> None:
    folder = policy_dir(acme=f"""
        tenant: acme
        api_keys:
          - env:ACME_KEY
          - {digest_ref("other-acme-key")}
    """)
    outcome = check_policies(folder, {"ACME_KEY": "  "})  # blank counts as unset
    assert outcome.errors == []
    assert [str(w).replace(f"{folder}/", "") for w in outcome.warnings] == [
        "acme.yaml:3: api_keys[0]: environment variable ACME_KEY is unset or empty; this key is ignored"]
    policies = outcome.policy_set
    assert policies is not None
    assert policies.lookup("other-acme-key").tenant == "acme"
    assert policies.lookup("") is None and policies.lookup("  ") is None


def test_a_tenant_with_no_usable_key_is_warned_about(policy_dir: Writer) -> None:
    outcome = check_policies(policy_dir(acme=ACME), {})
    assert outcome.policy_set is not None and outcome.policy_set.tenants == ("acme",)
    assert any("has no usable key" in w.message for w in outcome.warnings)


@pytest.mark.parametrize(("text", "kind"), [("- tenant: acme\n", "a list"), ("acme\n", "a str"), ("3\n", "a int")])
def test_a_file_that_is_not_a_mapping(policy_dir: Writer, text: str, kind: str) -> None:
    folder = policy_dir(acme=text)
    assert errors(folder) == [f"acme.yaml:1: the file must be a mapping of policy fields, not {kind}"]


def test_yaml_syntax_error_has_its_line(policy_dir: Writer) -> None:
    folder = policy_dir(acme="""
        tenant: acme
        api_keys: ["env:ACME_KEY"]
        response_cache:
          ttl: 1h
         scope: user
    """)
    (message,) = errors(folder)
    assert message.startswith("acme.yaml:5: YAML error:")


def test_empty_tenant_file(policy_dir: Writer) -> None:
    assert errors(policy_dir(acme="# nothing yet\n")) == [
        "acme.yaml:1: empty file: a tenant policy needs tenant and api_keys"]


def test_every_error_of_every_file_is_collected_in_order(policy_dir: Writer) -> None:
    folder = policy_dir(
        _defaults="response_cache: {ttl: forever}\n",
        a="tenant: a\napi_keys: [plain]\n",
        b="tenant: b\napi_keys: ['env:X']\nsemantic_cache: {threshold: 2}\n",
        c="tenant: [c\n",
    )
    messages = errors(folder)
    assert [m.split(": ")[0] for m in messages] == ["_defaults.yaml:1", "a.yaml:2", "b.yaml:3", "c.yaml:2"]
    with pytest.raises(PolicyError) as e:
        load_policies(folder, ENV)
    assert len(e.value.issues) == 4
    text = str(e.value)
    assert text.splitlines()[0] == "4 errors in the tenant policies:"
    assert f"  {folder}/b.yaml:3: semantic_cache.threshold: Input should be less than or equal to 1" in text


def test_missing_path_and_empty_folder(policy_dir: Writer, tmp_path: Path) -> None:
    assert [str(i) for i in check_policies(tmp_path / "nope", {}).errors] == [
        f"{tmp_path / 'nope'}: no such file or directory"]
    folder = policy_dir(_defaults="response_cache: {ttl: 1h}\n")
    assert errors(folder) == [f"{folder}: no tenant policy files (*.yaml, *.yml) in this folder"]


# ---- inheritance from _defaults.yaml ----

DEFAULTS = """
    upstream_keys: passthrough
    response_cache:
      ttl: 2h
      scope: user
      models: ["gpt-*", "claude-*"]
    semantic_cache:
      enabled: true
      exclude_patterns: ['today', '今天']
"""


def test_defaults_are_deep_merged_under_each_tenant(policy_dir: Writer) -> None:
    folder = policy_dir(_defaults=DEFAULTS, acme="""
        tenant: acme
        api_keys: ["env:ACME_KEY"]
        upstream_keys: gateway          # a scalar: the tenant wins
        response_cache:
          ttl: 10m                      # nested mapping: merged, so scope still comes from defaults
          models: ["gemini-*"]          # a list: the tenant's replaces the default one
    """, globex='tenant: globex\napi_keys: ["env:GLOBEX_KEY"]\n')
    policies = load_policies(folder, ENV)
    acme, globex = policies.get("acme"), policies.get("globex")
    assert acme.upstream_keys == "gateway" and globex.upstream_keys == "passthrough"
    assert acme.response_cache.ttl == 600.0 and acme.response_cache.scope == "user"
    assert acme.response_cache.models == ["gemini-*"]
    assert globex.response_cache.models == ["gpt-*", "claude-*"] and globex.response_cache.ttl == 7200.0
    assert acme.semantic_cache.enabled and acme.semantic_cache.exclude_patterns == ["today", "今天"]
    assert acme.semantic_cache.threshold == 0.90  # neither file sets it: the built-in default


def test_an_error_in_an_inherited_value_names_the_defaults_file_once(policy_dir: Writer) -> None:
    folder = policy_dir(_defaults="""
        response_cache:
          scope: team
    """, acme=ACME, globex='tenant: globex\napi_keys: ["env:GLOBEX_KEY"]\n')
    assert errors(folder) == ["_defaults.yaml:2: response_cache.scope: Input should be 'tenant' or 'user'"]


def test_a_tenant_overriding_a_bad_default_is_not_blamed(policy_dir: Writer) -> None:
    folder = policy_dir(_defaults="semantic_cache: {ttl: soon}\n",
                        acme=acme("semantic_cache: {ttl: 1h}\n"))
    assert errors(folder) == [
        "_defaults.yaml:1: semantic_cache.ttl: 'soon' is not a duration such as 30s, 5m, 1h or 7d"]


def test_a_tenant_value_of_the_wrong_shape_over_a_default_mapping(policy_dir: Writer) -> None:
    folder = policy_dir(_defaults=DEFAULTS, acme=acme("semantic_cache: true\n"))
    assert errors(folder) == [
        "acme.yaml:3: semantic_cache: Input should be a valid dictionary or instance of SemanticCachePolicy"]


def test_tenant_and_api_keys_are_refused_in_defaults(policy_dir: Writer) -> None:
    folder = policy_dir(_defaults='tenant: shared\napi_keys: ["env:ACME_KEY"]\n', acme=ACME)
    assert errors(folder) == [
        "_defaults.yaml:1: tenant: not allowed in _defaults.yaml: every tenant file sets its own",
        "_defaults.yaml:2: api_keys: not allowed in _defaults.yaml: every tenant file sets its own",
    ]


def test_two_defaults_files_are_refused(policy_dir: Writer) -> None:
    folder = policy_dir(_defaults="{}\n", acme=ACME, **{"_defaults.yml": "{}\n"})
    assert errors(folder) == ["_defaults.yml: both _defaults.yaml and _defaults.yml exist; keep one"]


# ---- which files ----

def test_yml_files_count_and_hidden_files_and_other_suffixes_do_not(policy_dir: Writer) -> None:
    folder = policy_dir(**{
        "acme.yml": ACME,
        ".acme.yaml.swp": "garbage: [",
        ".hidden.yaml": "garbage: [",
        "README.md": "# notes",
    })
    (folder / "..data").mkdir()  # how Kubernetes mounts a ConfigMap
    (folder / "..data" / "acme.yaml").write_text("garbage: [")
    assert load_policies(folder, ENV).tenants == ("acme",)


def test_a_single_file_inherits_the_defaults_beside_it(policy_dir: Writer) -> None:
    folder = policy_dir(_defaults="response_cache: {ttl: 2h}\n", acme=ACME, broken="nonsense: [")
    policies = load_policies(folder / "acme.yaml", ENV)
    assert policies.tenants == ("acme",) and policies.get("acme").response_cache.ttl == 7200.0
    assert load_policies(folder / "_defaults.yaml", ENV).tenants == ()


def test_issue_str_forms() -> None:
    assert str(PolicyIssue("a.yaml", 3, "response_cache.ttl", "bad")) == "a.yaml:3: response_cache.ttl: bad"
    assert str(PolicyIssue("a.yaml", 0, "", "cannot read")) == "a.yaml: cannot read"
    assert str(PolicyIssue("a.yaml", 2, "", "YAML error: x")) == "a.yaml:2: YAML error: x"


def test_a_file_that_is_not_utf8(policy_dir: Writer) -> None:
    folder = policy_dir(acme=ACME)
    (folder / "acme.yaml").write_bytes(b"tenant: acme\xff\n")
    assert errors(folder) == ["acme.yaml: not UTF-8 text (byte 12)"]
