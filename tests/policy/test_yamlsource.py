from __future__ import annotations

import textwrap

from gateway.policy.yamlsource import Pos, format_path, parse_yaml


def parse(text: str):
    return parse_yaml(textwrap.dedent(text).lstrip("\n"), "f.yaml")


def test_positions_of_keys_nested_keys_and_list_items() -> None:
    p = parse("""
        tenant: acme
        api_keys:
          - env:A
          - env:B
        response_cache:

          ttl: 1h
        semantic_cache: {threshold: 0.9,
          exclusive_terms: [[a, b], [c]]}
    """)
    assert p.issues == []
    assert p.positions[("tenant",)] == Pos("f.yaml", 1)
    assert p.positions[("api_keys",)] == Pos("f.yaml", 2)
    assert p.positions[("api_keys", 1)] == Pos("f.yaml", 4)
    assert p.positions[("response_cache", "ttl")] == Pos("f.yaml", 7)
    assert p.positions[("semantic_cache", "exclusive_terms", 1, 0)] == Pos("f.yaml", 9)
    assert p.positions[()] == Pos("f.yaml", 1)


def test_yaml_1_2_scalars_off_stays_a_string_and_dates_stay_strings() -> None:
    p = parse("""
        a: off
        b: yes
        c: true
        d: False
        e: 2026-11-01
        f: 3
        g: 0.5
        h: null
        i: 1h
    """)
    assert p.value == {"a": "off", "b": "yes", "c": True, "d": False, "e": "2026-11-01",
                       "f": 3, "g": 0.5, "h": None, "i": "1h"}


def test_duplicate_key_is_an_issue_naming_both_lines() -> None:
    p = parse("""
        tenant: a
        response_cache:
          ttl: 1h
          ttl: 2h
    """)
    assert [str(i) for i in p.issues] == ["f.yaml:4: response_cache.ttl: duplicate key (first written at line 3)"]
    assert p.value["response_cache"]["ttl"] == "2h"


def test_merge_key_overrides_are_not_duplicates() -> None:
    p = parse("""
        base: &b {enabled: true, ttl: 1h}
        response_cache:
          <<: *b
          ttl: 5m
    """)
    assert p.issues == []
    assert p.value["response_cache"] == {"enabled": True, "ttl": "5m"}
    assert p.positions[("response_cache", "ttl")].line == 4


def test_syntax_error_reports_its_line() -> None:
    p = parse("""
        tenant: a
        api_keys: [env:A
        response_cache: {}
    """)
    assert p.value is None
    assert len(p.issues) == 1
    assert p.issues[0].line in (3, 4)
    assert p.issues[0].message.startswith("YAML error:")


def test_unknown_tag_and_two_documents_are_errors_not_crashes() -> None:
    assert parse("a: !!python/object:os.system x\n").issues[0].message.startswith("YAML error")
    two = parse("a: 1\n---\nb: 2\n")
    assert two.value is None and two.issues[0].line == 2


def test_recursive_alias_is_refused() -> None:
    p = parse("a: &x [1, *x]\n")
    assert any("recursive" in i.message for i in p.issues)


def test_alias_bomb_is_cut_off() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}]"
              for i in range(1, 9)]
    p = parse_yaml("\n".join(lines) + "\n", "bomb.yaml")
    assert p.value is None and "more than" in p.issues[0].message


def test_empty_document_has_no_value_and_no_issue() -> None:
    p = parse("# only a comment\n")
    assert p.value is None and p.issues == []


def test_format_path() -> None:
    assert format_path(()) == ""
    assert format_path(("api_keys", 2)) == "api_keys[2]"
    assert format_path(("semantic_cache", "exclusive_terms", 0, 1)) == "semantic_cache.exclusive_terms[0][1]"
