"""Schemathesis over the gateway's own OpenAPI document (`/openapi.json`): every operation, a bounded
number of generated requests each, authenticated as a tenant. No answer may be a 5xx of the
gateway's own making (an upstream's 5xx relayed by it is told apart by asking the emulator the same
request directly), no answer a traceback, and every error a JSON error body.

Schemathesis' own pytest plugin does not run under pytest 9 here, so its strategies are driven
with hypothesis directly: `APIOperation.as_strategy()` per operation, `Case.call()` per example.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from .conftest import KEYS, Probe

# In the `test` extra (schemathesis==4.32.5); skipped, with this reason, where it is not installed.
schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed (pip install -e '.[test]')")

EXAMPLES = 12  # per operation: bounded so the suite stays a few seconds per operation
PLAIN = ("/metrics", "/healthz", "/readyz")


def _operations(probe: Probe) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{probe.gw.url}/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]


def test_openapi_document_lists_the_contract(probe: Probe) -> None:
    labels = {op.label for op in _operations(probe)}
    for expected in ("POST /v1/chat/completions", "POST /v1/responses", "POST /v1/messages",
                     "POST /{version}/models/{target}", "POST /admin/policies/reload"):
        assert expected in labels, labels


def _fuzz(op: Any, probe: Probe, seen: dict[str, int]) -> None:
    """`EXAMPLES` generated requests for one operation, each checked."""
    headers = {"authorization": f"Bearer {KEYS['alpha']}", "anthropic-version": "2023-06-01"}

    @given(case=op.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def check(case: Any) -> None:
        resp = case.call(base_url=probe.gw.url, headers=headers, timeout=30)
        seen[op.label] = seen.get(op.label, 0) + 1
        path = "/" + resp.request.url.split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]
        raw = resp.request.body or b""
        raw = raw if isinstance(raw, bytes) else raw.encode()
        if resp.status_code >= 500:  # only an upstream's own failure, relayed, is acceptable
            assert case.method.upper() == "POST" and not probe.gateway_5xx(resp.status_code, path, raw), \
                (op.label, case.method, path, resp.status_code, resp.text[:300])
        assert "Traceback" not in resp.text
        if resp.status_code >= 400 and path not in PLAIN:
            data = resp.json()
            if path.startswith("/model/"):  # Bedrock's rest-json shape: the message, the type in a header
                assert isinstance(data, dict) and isinstance(data.get("message"), str), (op.label, data)
            else:
                assert isinstance(data, dict) and ("error" in data or data.get("type") == "error"), (op.label, data)

    check()


def test_generated_requests_never_get_a_gateway_5xx(probe: Probe) -> None:
    seen: dict[str, int] = {}
    for op in _operations(probe):
        _fuzz(op, probe, seen)
    assert len(seen) >= 15, seen  # every operation was exercised


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/admin", "/.env", "/v1/../admin/usage"])
def test_undocumented_paths_are_vendor_shaped_404(probe: Probe, path: str) -> None:
    resp = probe.http.get(path, headers={"authorization": f"Bearer {KEYS['alpha']}"})
    assert resp.status_code in (401, 404), (path, resp.status_code)
    assert "error" in resp.json()
