"""Gemini: generateContent / streamGenerateContent (model and API version in the path), explicit
CachedContent objects; native Gemini clients always come here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.provider_cache.plugins import GEMINI_CACHE
from gateway.vendors.spec import LintHints, VendorSpec, static_key

if TYPE_CHECKING:
    from gateway.context import RequestContext


def _generate_path(ctx: RequestContext) -> str:
    action = "streamGenerateContent?alt=sse" if ctx.stream else "generateContent"
    return f"/{ctx.api_version or 'v1beta'}/models/{ctx.model}:{action}"


def _owns_path(path: str) -> bool:
    return path.startswith("/v1beta/") or "cachedContents" in path or ":" in path


SPEC = VendorSpec(
    name="gemini",
    title="Gemini",
    family="gemini",
    speaks=("gemini",),
    native_paths={"gemini": _generate_path},
    models=("gemini-*",),
    owns_clients=("gemini",),
    key_env="GEMINI_API_KEY",
    base_url_env="GATEWAY_GEMINI_BASE_URL",
    default_base_url="https://generativelanguage.googleapis.com",
    signer=static_key("x-goog-api-key", ""),
    error_shape="gemini",
    # `/`, `..`, `?`, `#` or `%` in the path would reach other endpoints of the vendor with the gateway's key
    model_in_path=True,
    cache_objects=True,
    provider_cache=GEMINI_CACHE,
    lint=LintHints(prefix_fields={"gemini": ("systemInstruction", "tools", "toolConfig")},
                   default_model="gemini-2.5-flash"),
    owns_path=_owns_path,
)
