"""What an operator meets on the first day, through the official SDKs and plain HTTP: error shapes of
unknown endpoints per protocol, admin validation errors, `x-gateway-cache` on refused requests,
bounded `x-gateway-*` headers and model names on every endpoint, `GET /admin/tenants`, model aliases,
and log lines free of other libraries' attributes."""

from __future__ import annotations

import io
import logging
import sys
import time
from collections.abc import Iterator

import anthropic
import httpx2
import openai
import orjson
import pytest

from gateway.logs import JsonFormatter
from gateway.usage.query import records
from gateway_dev.emulators.harness import EmulatorSet
from gateway_dev.localrun import LocalGateway

ADMIN = "adm-" + "f" * 20
KEY = "sk-first-0001"
TENANTS = {
    "first": {"key": KEY, "model_aliases": {"fast": "gpt-4o-mini", "smart": "claude-sonnet-4-5",
                                             "embed": "text-embedding-3-small"}},
    "second": {"key": "sk-second-0001", "response_cache": {"ttl": "5m", "scope": "user"}},
}


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet() as emulators:
        yield emulators


@pytest.fixture(scope="module")
def gw(emu: EmulatorSet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalGateway]:
    with LocalGateway(emu, TENANTS, tmp_path_factory.mktemp("first"), admin_key=ADMIN) as gateway:
        yield gateway


@pytest.fixture
def http(gw: LocalGateway) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=gw.url) as client:
        yield client


# ---- item 9: error shapes and headers ------------------------------------------------------


def test_unknown_endpoints_answer_in_the_callers_vendor_shape(http: httpx2.Client) -> None:
    openai_shape = http.post("/v1/nothing", headers={"authorization": f"Bearer {KEY}"}, json={})
    assert openai_shape.status_code == 404 and openai_shape.json()["error"]["type"] == "not_found_error"
    claude = http.post("/v1/complete", headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"}, json={})
    assert claude.status_code == 404 and claude.json()["type"] == "error"
    assert claude.json()["error"]["type"] == "not_found_error"
    gemini = http.get("/v1/tunedModels", headers={"x-goog-api-key": KEY})
    assert gemini.status_code == 404 and gemini.json()["error"]["status"] == "NOT_FOUND"


def test_admin_validation_errors_use_the_usual_error_object(http: httpx2.Client) -> None:
    bad = http.post("/admin/cache/purge", headers={"authorization": f"Bearer {ADMIN}"}, json={"layer": 3})
    assert bad.status_code == 400
    body = bad.json()
    assert "detail" not in body and body["error"]["type"] == "invalid_request_error"
    assert "tenant" in body["error"]["message"]


def test_refused_requests_say_bypass_not_miss(gw: LocalGateway) -> None:
    client = openai.OpenAI(base_url=f"{gw.url}/v1", api_key="sk-nobody", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as err:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    client.close()
    assert err.value.response.headers["x-gateway-cache"] == "bypass"
    client = gw.openai(KEY)
    with pytest.raises(openai.BadRequestError) as bad:  # refused by the gateway itself, before any layer
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}],
                                       extra_body={"stream": "yes"})
    client.close()
    assert bad.value.response.headers["x-gateway-cache"] == "bypass"


def test_log_lines_carry_no_colour_codes_nor_foreign_objects() -> None:
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "Started \x1b[1mserver\x1b[0m", None, None)
    record.color_message = "Started \x1b[32mserver\x1b[0m"
    record.litellm_redacted = object()
    line = JsonFormatter().format(record)
    assert "\x1b" not in line and "litellm" not in line and "color_message" not in line
    assert orjson.loads(line)["msg"] == "Started server"


def test_admin_answers_are_emitted_without_fastapis_deprecated_response(gw: LocalGateway, http: httpx2.Client,
                                                                         recwarn: pytest.WarningsRecorder) -> None:
    http.post("/admin/cache/purge", headers={"authorization": f"Bearer {ADMIN}"}, json={"tenant": "first"})
    gw.wait_idle()
    assert not [w for w in recwarn if "ORJSONResponse" in str(w.message)]


# ---- item 12: the same input checks on every endpoint ------------------------------------------


@pytest.mark.parametrize("endpoint", ["embeddings", "count_tokens", "chat"])
def test_huge_gateway_headers_are_refused_on_every_endpoint(http: httpx2.Client, endpoint: str) -> None:
    huge = {"x-gateway-user": "u" * 100_000}
    if endpoint == "embeddings":
        r = http.post("/v1/embeddings", headers={"authorization": f"Bearer {KEY}", **huge},
                      json={"model": "text-embedding-3-small", "input": "hi"})
    elif endpoint == "count_tokens":
        r = http.post("/v1/messages/count_tokens", headers={"x-api-key": KEY, **huge},
                      json={"model": "claude-haiku-4-5", "messages": [{"role": "user", "content": "hi"}]})
    else:
        r = http.post("/v1/chat/completions", headers={"authorization": f"Bearer {KEY}", **huge},
                      json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 400 and "x-gateway-user" in r.text


@pytest.mark.parametrize("path", ["/v1/embeddings", "/v1/messages/count_tokens", "/v1/chat/completions"])
def test_path_like_model_names_are_refused_on_every_endpoint(http: httpx2.Client, path: str) -> None:
    headers = {"authorization": f"Bearer {KEY}"} if "count" not in path else {"x-api-key": KEY}
    body = {"model": "../../etc/passwd", "input": "hi", "messages": [{"role": "user", "content": "hi"}]}
    r = http.post(path, headers=headers, json=body)
    assert r.status_code == 400 and "not a valid model name" in r.text


def test_a_gateway_header_bound_still_lets_normal_values_through(gw: LocalGateway) -> None:
    client = gw.openai(KEY)
    emb = client.embeddings.create(model="text-embedding-3-small", input="hi", extra_headers={"x-gateway-user": "u1"})
    client.close()
    assert emb.data


# ---- admin: tenants and their effective policy -------------------------------------------------


def test_admin_lists_tenants_with_their_effective_policy(http: httpx2.Client) -> None:
    auth = {"authorization": f"Bearer {ADMIN}"}
    view = http.get("/admin/tenants", headers=auth).json()
    by_name = {t["tenant"]: t for t in view["tenants"]}
    assert set(by_name) == {"first", "second"} and view["version"]
    second = by_name["second"]
    assert second["policy"]["response_cache"]["ttl"] == 300 and second["policy"]["response_cache"]["scope"] == "user"
    assert second["policy"]["semantic_cache"]["enabled"] is False  # the built-in default, made explicit
    assert second["api_keys"] == 1 and "sha256" not in orjson.dumps(view).decode()
    one = http.get("/admin/tenants", params={"tenant": "first"}, headers=auth).json()
    assert [t["tenant"] for t in one["tenants"]] == ["first"]
    assert one["tenants"][0]["policy"]["model_aliases"]["fast"] == "gpt-4o-mini"
    assert http.get("/admin/tenants", params={"tenant": "nobody"}, headers=auth).status_code == 404
    assert http.get("/admin/tenants").status_code == 401


# ---- model aliases ---------------------------------------------------------------------------


def test_an_alias_routes_to_its_model_and_the_record_keeps_both_names(gw: LocalGateway, emu: EmulatorSet) -> None:
    client = gw.openai(KEY)
    raw = client.chat.completions.with_raw_response.create(
        model="fast", messages=[{"role": "user", "content": "alias check one"}])
    reply = raw.parse()
    assert reply.choices[0].message.content and reply.model.startswith("gpt-4o-mini")
    assert emu.requests("openai.chat")[-1].body["model"] == "gpt-4o-mini"
    smart = client.chat.completions.create(model="smart", messages=[{"role": "user", "content": "alias check two"}])
    assert smart.model.startswith("claude-sonnet-4-5")  # an alias may cross vendors through the OpenAI protocol
    emb = client.embeddings.create(model="embed", input="alias check three")
    assert emb.data and emu.requests("openai.embeddings")[-1].body["model"] == "text-embedding-3-small"
    client.close()
    rid = raw.headers["x-gateway-request-id"]
    found: list[dict] = []
    deadline = time.monotonic() + 5
    while not found and time.monotonic() < deadline:
        time.sleep(0.2)  # the recorder flushes in the background
        found = [r for r in gw.call(records(gw.components.store, "first", 50)) if r["request_id"] == rid]
    rec = found[0]
    assert rec["model"] == "gpt-4o-mini" and rec["details"]["model_alias"] == "fast"


def test_an_unknown_name_that_is_no_alias_is_still_a_404(gw: LocalGateway) -> None:
    client = gw.anthropic(KEY)
    with pytest.raises(anthropic.APIStatusError):
        client.messages.create(model="fast-but-not-an-alias", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    client.close()
    oai = gw.openai(KEY)
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(model="quick", messages=[{"role": "user", "content": "x"}])
    oai.close()


def test_alias_names_are_validated_in_the_policy(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from gateway.policy.cli import validate_command

    (tmp_path / "a.yaml").write_text("tenant: a\napi_keys: ['env:A_KEY']\nmodel_aliases: {fast: gpt-4o-mini}\n")
    assert validate_command(str(tmp_path)) == 0
    (tmp_path / "a.yaml").write_text("tenant: a\napi_keys: ['env:A_KEY']\nmodel_aliases: {fast: '../x'}\n")
    err = io.StringIO()
    sys_stderr, sys.stderr = sys.stderr, err
    try:
        assert validate_command(str(tmp_path)) == 1
    finally:
        sys.stderr = sys_stderr
    assert "model_aliases" in err.getvalue() and "not a model name" in err.getvalue()


# ---- item 9: an embedding model that is not installed --------------------------------------------


def test_a_missing_embedding_model_fails_fast_and_readyz_says_the_layer_is_off(
        emu: EmulatorSet, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    tenants = {"sem": {"key": "sk-sem-0001", "semantic_cache": {"enabled": True}}}
    with LocalGateway(emu, tenants, tmp_path, embedding_model="no-such-org/no-such-model") as gw:
        elapsed = time.monotonic() - started
        ready = httpx2.get(f"{gw.url}/readyz")
        client = gw.openai("sk-sem-0001")
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        client.close()
    # the local copy is looked for first: the hub's retries are never waited on (the message says so)
    assert "is not installed" in ready.text, (elapsed, ready.text)
    assert ready.status_code == 200 and ready.text.startswith("ready")
    assert "semantic_cache: failed" in ready.text and "no-such-org/no-such-model" in ready.text
    assert "bound method" not in ready.text
    assert reply.choices[0].message.content  # the layer is off, requests still go through
