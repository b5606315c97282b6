"""Protocol adapter stage: resolve the model to a provider and build the upstream request.

The client's body is forwarded as received when the upstream speaks the client's protocol
(unknown fields flow through untouched); otherwise it is translated into the upstream's native
protocol, so later stages (rewrite, provider-cache injection) always edit a native body.
"""

from __future__ import annotations

import re

from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.protocols import get_adapter
from gateway.protocols.translate import translate_request, upstream_protocol
from gateway.providers import Provider, ProviderTable

# Request headers never forwarded upstream: hop-by-hop, the caller's credentials (the upstream key
# is set separately), the gateway's own, and those the HTTP client sets itself.
_DROP_REQUEST = frozenset({
    "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade", "trailer",
    "proxy-authorization", "proxy-connection", "authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie",
    "accept-encoding", "content-type", "expect", "forwarded", "x-forwarded-for", "x-forwarded-host",
    "x-forwarded-proto", "x-real-ip", "cache-control",
})
_PATH_SAFE_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # what a Gemini model id is made of
_NATIVE_PATHS = {"openai_chat": "/chat/completions", "openai_responses": "/responses"}
_ANTHROPIC_VERSION = "2023-06-01"


def adapt(ctx: RequestContext, providers: ProviderTable) -> None:
    adapter = ctx.adapter
    model = adapter.model_of(ctx.body, ctx.path_model)
    if not isinstance(model, str) or not model:
        raise GatewayError(400, "The request has no `model`.")
    ctx.model = model
    if adapter.vendor != "gemini" and not isinstance(ctx.body.get("stream", False), bool | None):
        # the vendors refuse it too; relayed, the upstream could stream an answer the gateway reads as whole
        raise GatewayError(400, "`stream` must be true or false.")
    ctx.stream = adapter.is_stream(ctx.body, ctx.path_stream)
    provider = providers.for_model(model, adapter.vendor)
    if provider is None:
        raise unknown_model(model)
    if provider.vendor == "gemini" and not path_safe_model(model):
        # Gemini takes the model in the URL path: `/`, `..`, `?`, `#` or `%` there would reach
        # other endpoints of the vendor with the gateway's key.
        raise GatewayError(400, f"`{model[:100]}` is not a valid Gemini model name.")
    ctx.provider = provider.name
    ctx.upstream_base_url = provider.base_url

    upstream = upstream_protocol(adapter.name, provider.name, provider.vendor)
    if upstream == adapter.name:
        ctx.upstream_adapter = adapter
        body = dict(ctx.body)  # shallow: stages that edit nested parts copy them first
        if "model" in body:
            body["model"] = _upstream_model(provider.name, model)
        if ctx.stream:
            body, sse_filter = adapter.upstream_stream_body(body)
            if sse_filter is not None:
                ctx.scratch["sse_filter"] = sse_filter
        ctx.upstream_body = body
        ctx.upstream_path = _native_path(ctx)
    else:
        path, body = translate_request(adapter.name, upstream, ctx.body, _upstream_model(provider.name, model),
                                       ctx.stream)
        ctx.upstream_adapter = get_adapter(upstream)
        if ctx.stream and upstream == "openai_chat":
            body, _ = ctx.upstream_adapter.upstream_stream_body(body)  # usage for metering; re-rendered anyway
        ctx.upstream_body, ctx.upstream_path = body, path

    ctx.upstream_headers = upstream_headers(ctx, provider, providers)


def path_safe_model(model: str) -> bool:
    """True when `model` can stand in an upstream URL path as it is (Gemini's `/models/{model}:...`)."""
    return bool(_PATH_SAFE_MODEL.fullmatch(model)) and ".." not in model


def unknown_model(model: str) -> GatewayError:
    return GatewayError(404, f"The model `{model}` does not exist or is not served by this gateway.",
                        "model_not_found")


def upstream_headers(ctx: RequestContext, provider: Provider, providers: ProviderTable) -> dict[str, str]:
    """The caller's headers minus credentials and hop-by-hop ones, plus the upstream key: the
    caller's own under BYOK (`upstream_keys: passthrough`), else the gateway's."""
    key = ctx.api_key if ctx.policy is not None and ctx.policy.upstream_keys == "passthrough" else None
    key = key or providers.upstream_key(provider)
    headers = {k: v for k, v in ctx.headers.items() if k not in _DROP_REQUEST and not k.startswith("x-gateway-")}
    headers["content-type"] = "application/json"
    if key:
        headers.update(provider.auth_headers(key))
    if provider.vendor == "anthropic":
        headers.setdefault("anthropic-version", _ANTHROPIC_VERSION)
    return headers


def _upstream_model(provider: str, model: str) -> str:
    return model[len("vllm/"):] if provider == "vllm" and model.startswith("vllm/") else model


def _native_path(ctx: RequestContext) -> str:
    name = ctx.adapter.name
    if name in _NATIVE_PATHS:
        return _NATIVE_PATHS[name]
    if name == "anthropic_messages":
        return "/v1/messages"
    version = ctx.scratch.get("api_version", "v1beta")
    action = "streamGenerateContent?alt=sse" if ctx.stream else "generateContent"
    return f"/{version}/models/{ctx.model}:{action}"
