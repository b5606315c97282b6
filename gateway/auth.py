"""Authenticate: find the tenant from the key the SDK already sends.

OpenAI and anthropic SDK 2.x send `Authorization: Bearer`, older anthropic SDKs `x-api-key`,
google-genai `x-goog-api-key` (or `?key=`), openai's `AzureOpenAI` client `api-key`; google-genai with
`vertexai=True` and boto3 with a Bedrock API key send `Authorization: Bearer`. The key is matched against
the tenant policies; it is kept on the context only for BYOK pass-through and is never logged or stored.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from gateway.context import RequestContext
from gateway.errors import GatewayError
from gateway.policy.registry import PolicyRegistry


def presented_key(headers: Mapping[str, str], query: Mapping[str, str]) -> str | None:
    auth = headers.get("authorization")
    if auth:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    for name in ("x-api-key", "x-goog-api-key", "api-key"):
        if headers.get(name):
            return headers[name].strip()
    key = query.get("key")
    return key.strip() if key else None


def authenticate(ctx: RequestContext, registry: PolicyRegistry) -> None:
    # `?key=` is the Gemini API's documented form; no OpenAI or Anthropic SDK puts a key in the URL,
    # where access logs and proxies keep it, so on their paths a query key is not read at all.
    query = ctx.query if ctx.adapter.key_in_query else {}
    key = presented_key(ctx.headers, query)
    if not key:
        raise GatewayError(401, "No API key provided. Send the gateway key as the SDK's api_key.")
    policy = registry.current.lookup(key)
    if policy is None:
        raise GatewayError(401, "Invalid API key: no tenant of this gateway has it.")
    ctx.api_key = key
    ctx.policy = policy
    ctx.tenant = policy.tenant


def check_admin(headers: Mapping[str, str], admin_key: str | None) -> None:
    """`Authorization: Bearer $GATEWAY_ADMIN_KEY`; with no admin key configured every call is refused."""
    if not admin_key:
        raise GatewayError(403, "The admin API is disabled: GATEWAY_ADMIN_KEY is not set.")
    key = presented_key(headers, {})
    if not key or not hmac.compare_digest(key.encode(), admin_key.encode()):
        raise GatewayError(401, "Invalid admin key.")
