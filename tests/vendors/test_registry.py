"""The vendor registry: one spec per vendor, resolution by its declared patterns, and the signer seam."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from aiohttp import web
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from gateway.adapt import adapt
from gateway.config import Settings
from gateway.context import RequestContext
from gateway.protocols import get_adapter
from gateway.providers import ProviderTable
from gateway.signing import sigv4
from gateway.signing.base import OutgoingRequest, StaticKey
from gateway.upstream.call import open_upstream
from gateway.upstream.client import UpstreamClients
from gateway.vendors import registry
from gateway.vendors.spec import VendorSpec


def test_every_builtin_vendor_is_declared_once_with_its_environment() -> None:
    names = [s.name for s in registry.BUILTIN]
    assert len(names) == len(set(names)) and set(names) >= {"openai", "anthropic", "gemini", "deepseek", "vllm"}
    for spec in registry.BUILTIN:
        assert spec.speaks and all(p in spec.native_paths for p in spec.speaks), spec.name
        if spec.prepare is not None:  # a cloud platform: configured by its own settings, its root per region
            assert spec.route_prefix and spec.base_url_env, spec.name
        elif not spec.pooled:
            assert spec.key_env and spec.base_url_env and spec.default_base_url.startswith("https://"), spec.name


def test_settings_take_each_vendor_from_its_declared_environment_names() -> None:
    env = {spec.key_env: f"key-{spec.name}" for spec in registry.BUILTIN if spec.key_env}
    env.update({spec.base_url_env: f"http://{spec.name}.test/" for spec in registry.BUILTIN if spec.base_url_env})
    settings = Settings.load(env=env)
    for spec in registry.BUILTIN:
        if spec.key_env:
            assert settings.vendor_key(spec.name) == f"key-{spec.name}"
            assert settings.base_url(spec.name) == f"http://{spec.name}.test"
    assert Settings.load(env={}).base_url("anthropic") == registry.VENDORS["anthropic"].default_base_url
    with pytest.raises(ValueError):
        Settings(opneai_api_key="typo")  # still a closed set of fields


@pytest.mark.parametrize(("model", "protocol", "vendor"), [
    ("claude-opus-4", "openai_chat", "anthropic"), ("gpt-4o", "anthropic_messages", "anthropic"),
    ("o3", "openai_chat", "openai"), ("anything", "gemini", "gemini"), ("deepseek-chat", "openai_chat", "deepseek"),
])
def test_offline_tools_resolve_through_the_registry(model: str, protocol: str, vendor: str) -> None:
    spec = registry.by_model(model, protocol)
    assert spec is not None and spec.name == vendor


def test_error_dialect_of_a_gateway_path_comes_from_the_owning_spec() -> None:
    assert registry.error_shape_of_path("/v1/messages/count_tokens") == "anthropic"
    assert registry.error_shape_of_path("/v1beta/models/x:generateContent") == "gemini"
    assert registry.error_shape_of_path("/v1/chat/completions") == "openai"


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.bodies: list[bytes] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(dict(request.headers))
        self.bodies.append(await request.read())
        return web.json_response({"ok": True})


async def _serve(recorder: _Recorder) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/{tail:.*}", recorder.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


class _SigV4:
    """A payload-signing scheme through the same seam: what a Bedrock spec's signer does."""

    def __init__(self) -> None:
        self.source = sigv4.AwsCredentialSource.static("AKIDEXAMPLE", "secret")

    async def sign(self, request: OutgoingRequest) -> None:
        signed = await self.source.sign(request.method, request.url, request.headers, request.body or b"",
                                        region="us-east-1")
        request.headers.clear()
        request.headers.update(signed)


async def test_the_signer_sees_the_final_request_and_signs_its_body() -> None:
    recorder = _Recorder()
    runner, url = await _serve(recorder)
    try:
        settings = Settings.load(env={}, openai_api_key="sk-static", openai_base_url=url)
        openai_spec = registry.VENDORS["openai"]
        signed_spec = replace(openai_spec, name="signed", models=("signed-*",), model_regex=None,
                              default_base_url=url, signer=lambda s: _SigV4())
        table = ProviderTable(settings, vendors=(openai_spec, signed_spec))
        clients = UpstreamClients(settings)
        try:
            for model in ("gpt-4o", "signed-1"):
                ctx = RequestContext("r1", get_adapter("openai_chat"), {}, {},
                                     {"model": model, "messages": [{"role": "user", "content": "hi"}]})
                adapt(ctx, table)
                assert "authorization" not in ctx.upstream_headers  # added only when sent
                ctx.upstream_body = {**ctx.upstream_body, "edited": "by a later stage"}
                up = await open_upstream(ctx, clients, None)
                up.release()
        finally:
            await clients.close()
    finally:
        await runner.cleanup()
    static, signed = recorder.seen
    assert static["Authorization"] == "Bearer sk-static"
    assert signed["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    # the signature covers the body as sent, edits of later stages included
    body = recorder.bodies[1]
    assert b"by a later stage" in body
    check = AWSRequest(method="POST", url=f"{url}/chat/completions", data=body,
                       headers={"content-type": "application/json", "X-Amz-Date": signed["X-Amz-Date"]})
    SigV4Auth(Credentials("AKIDEXAMPLE", "secret"), "bedrock", "us-east-1").add_auth(check)
    assert check.headers["Authorization"] == signed["Authorization"]


def test_static_key_writes_one_header() -> None:
    request = OutgoingRequest("POST", "http://x", {}, b"{}", "k")
    asyncio.run(StaticKey("x-api-key", "").sign(request))
    assert request.headers == {"x-api-key": "k"}
    request = OutgoingRequest("POST", "http://x", {}, b"{}", None)
    asyncio.run(StaticKey().sign(request))
    assert request.headers == {}


def test_a_spec_is_one_declaration() -> None:
    spec = VendorSpec(name="acme", title="Acme", family="openai", speaks=("openai_chat",),
                      native_paths={"openai_chat": "/chat/completions"}, models=("acme-*",))
    assert spec.serves("acme-1") and not spec.serves("gpt-4o")
    assert spec.upstream_protocol("openai_responses") == "openai_chat"
