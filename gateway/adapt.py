"""Protocol adapter stage: resolve the model to a provider and build the upstream request.

The client's body is forwarded as received when the upstream speaks the client's protocol
(unknown fields flow through untouched); otherwise it is translated into the upstream's native
protocol, so later stages (rewrite, provider-cache injection) always edit a native body.
"""

from __future__ import annotations

import re

from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.policy.aliases import resolve_alias
from gateway.protocols import get_adapter
from gateway.protocols.translate import translate_request
from gateway.providers import Provider, ProviderTable
from gateway.vendor_keys import KEY_ENV, missing_key

# Request headers never forwarded upstream: hop-by-hop, the caller's credentials (the upstream key
# is set separately), the gateway's own, and those the HTTP client sets itself.
_DROP_REQUEST = frozenset({
    "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade", "trailer",
    "proxy-authorization", "proxy-connection", "authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie",
    "accept-encoding", "content-type", "expect", "forwarded", "x-forwarded-for", "x-forwarded-host",
    "x-forwarded-proto", "x-real-ip", "cache-control",
})
_PATH_SAFE_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # what a Gemini model id is made of
# Any model name a vendor or LiteLLM spells (`vllm/name`, `bedrock/us.anthropic.claude...-v1:0`,
# `ft:gpt-4o:org::id`): anything else (`../../etc/passwd`, spaces, 10 KB) is refused on every endpoint.
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}")


def adapt(ctx: RequestContext, providers: ProviderTable) -> None:
    adapter = ctx.adapter
    model = adapter.model_of(ctx.body, ctx.path_model)
    platform = ctx.path_params.get("platform")
    if platform is not None:  # a platform's native surface: its deployment/model names, with its prefix
        model = ctx.path_model or model
        if isinstance(model, str) and model and not model.startswith(platform):
            model = platform + model
    if not isinstance(model, str) or not model:
        raise GatewayError(400, "The request has no `model`.")
    model = resolve_alias(ctx, check_model_name(model))
    ctx.model = model
    if adapter.stream_in_body and not isinstance(ctx.body.get("stream", False), bool | None):
        # the vendors refuse it too; relayed, the upstream could stream an answer the gateway reads as whole
        raise GatewayError(400, "`stream` must be true or false.")
    ctx.stream = adapter.is_stream(ctx.body, ctx.path_stream)
    provider = providers.for_model(model, adapter.name)
    if provider is None:
        raise unknown_model(model)
    spec = provider.spec
    if spec.model_in_path and not path_safe_model(spec.upstream_model(model)):
        # The model goes into the URL path: `/`, `..`, `?`, `#` or `%` there would reach other
        # endpoints of the vendor with the gateway's key.
        raise GatewayError(400, f"`{model[:100]}` is not a valid {spec.title} model name.")
    ctx.provider = provider.name
    ctx.vendor = spec
    ctx.upstream_base_url = provider.base_url

    upstream = spec.upstream_protocol(adapter.name)
    if upstream == adapter.name:
        ctx.upstream_adapter = adapter
        body = dict(ctx.body)  # shallow: stages that edit nested parts copy them first
        if "model" in body:
            body["model"] = spec.upstream_model(model)
        if ctx.stream:
            body, ctx.sse_filter = adapter.upstream_stream_body(body)
        ctx.upstream_body = body
        ctx.upstream_path = spec.native_path(upstream, ctx)
    else:
        path, body = translate_request(adapter.name, upstream, ctx.body, spec.upstream_model(model), ctx.stream)
        ctx.upstream_adapter = get_adapter(upstream)
        if ctx.stream:
            body, _ = ctx.upstream_adapter.upstream_stream_body(body)  # usage for metering; re-rendered anyway
        ctx.upstream_body, ctx.upstream_path = body, path

    ctx.upstream_headers = upstream_headers(ctx, provider, providers)
    if spec.prepare is not None:
        spec.prepare(ctx, providers.settings)


def path_safe_model(model: str) -> bool:
    """True when `model` can stand in an upstream URL path as it is (Gemini's `/models/{model}:...`)."""
    return bool(_PATH_SAFE_MODEL.fullmatch(model)) and ".." not in model


def check_model_name(model: str) -> str:
    if not _MODEL_NAME.fullmatch(model) or ".." in model:
        raise GatewayError(400, f"`{model[:100]}` is not a valid model name.", "invalid_model")
    return model


def unknown_model(model: str) -> GatewayError:
    return GatewayError(404, f"The model `{model}` does not exist or is not served by this gateway.",
                        "model_not_found")


def upstream_headers(ctx: RequestContext, provider: Provider, providers: ProviderTable) -> dict[str, str]:
    """The caller's headers minus credentials and hop-by-hop ones, plus the vendor's defaults. The
    credential is chosen here — the caller's own under BYOK (`upstream_keys: passthrough`), else the
    gateway's — and added by the provider's signer when the request is sent (`upstream/call.py`)."""
    key = ctx.api_key if ctx.policy is not None and ctx.policy.upstream_keys == "passthrough" else None
    ctx.upstream_key = key or providers.upstream_key(provider)
    ctx.signer = provider.signer
    if ctx.upstream_key is None and provider.name in KEY_ENV:
        raise missing_key(provider.name)
    headers = {k: v for k, v in ctx.headers.items() if k not in _DROP_REQUEST and not k.startswith("x-gateway-")}
    headers["content-type"] = "application/json"
    for name, value in provider.spec.default_headers.items():
        headers.setdefault(name, value)
    return headers
