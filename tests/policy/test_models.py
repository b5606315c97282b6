from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.policy.models import TenantPolicy, parse_duration

KEY = "sha256:" + "ab" * 32


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30.0), ("5m", 300.0), ("1h", 3600.0), ("7d", 604800.0), ("250ms", 0.25),
    ("1.5h", 5400.0), (" 2 m ", 120.0), (90, 90.0), (0.5, 0.5),
])
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["1 hour", "5", "h", "-5m", "1w", "", True, None, [1]])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


@pytest.mark.parametrize("bad", [0, "0s", -3])
def test_durations_must_be_positive(bad: object) -> None:
    with pytest.raises(ValueError, match="positive"):
        parse_duration(bad)


def test_minimal_policy_gets_every_default() -> None:
    p = TenantPolicy.model_validate({"tenant": "acme", "api_keys": ["env:ACME_KEY"]})
    assert p.response_cache.enabled and p.response_cache.ttl == 3600.0 and p.response_cache.scope == "tenant"
    assert not p.semantic_cache.enabled and p.semantic_cache.threshold == 0.90
    assert p.upstream_keys == "gateway"
    assert p.provider_cache.anthropic.ttl == "auto"
    assert p.provider_cache.openai.prompt_cache_key == "auto"


def test_sha256_refs_are_accepted_in_either_case_and_stored_lowercase() -> None:
    p = TenantPolicy.model_validate({"tenant": "a", "api_keys": [KEY.upper().replace("SHA256", "sha256")]})
    assert p.api_keys == [KEY]


@pytest.mark.parametrize("bad", ["sk-live-0123456789", "sha256:abc", "env:", "env:1X", "ENV:X", "sha256:" + "g" * 64])
def test_plain_or_malformed_keys_are_refused_per_entry(bad: str) -> None:
    with pytest.raises(ValidationError) as e:
        TenantPolicy.model_validate({"tenant": "a", "api_keys": ["env:OK", bad]})
    (err,) = e.value.errors(include_input=False)
    assert err["loc"] == ("api_keys", 1)
    assert "never a plain key" in err["msg"]


def test_the_refusal_of_a_plain_key_does_not_echo_it() -> None:
    with pytest.raises(ValidationError) as e:
        TenantPolicy.model_validate({"tenant": "a", "api_keys": ["sk-live-SECRET0123456789"]})
    assert "SECRET0123456789" not in str(e.value.errors(include_input=False))


def test_a_bad_regex_is_a_validation_error_not_a_crash() -> None:
    with pytest.raises(ValidationError) as e:
        TenantPolicy.model_validate({"tenant": "a", "api_keys": [KEY],
                                     "semantic_cache": {"exclude_patterns": ["ok", "(unclosed"]}})
    (err,) = e.value.errors()
    assert err["loc"] == ("semantic_cache", "exclude_patterns", 1)
    assert "not a valid regular expression" in err["msg"]


def test_routes_are_the_known_endpoints() -> None:
    ok = TenantPolicy.model_validate({"tenant": "a", "api_keys": [KEY], "response_cache": {"routes": ["chat"]}})
    assert ok.response_cache.routes == ["chat"]
    with pytest.raises(ValidationError):
        TenantPolicy.model_validate({"tenant": "a", "api_keys": [KEY], "response_cache": {"routes": ["chats"]}})


def test_policies_are_frozen() -> None:
    p = TenantPolicy.model_validate({"tenant": "a", "api_keys": [KEY]})
    with pytest.raises(ValidationError):
        p.tenant = "b"  # type: ignore[misc]
