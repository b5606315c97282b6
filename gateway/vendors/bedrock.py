"""Amazon Bedrock: models `bedrock/<modelId>` through the OpenAI and Anthropic protocols (translated to the
Converse API) and the native surface of boto3's `bedrock-runtime` (`/model/{modelId}/converse`,
`/converse-stream`, the tenant key as a Bedrock API key).

Upstream: `https://bedrock-runtime.{region}.amazonaws.com` (GATEWAY_BEDROCK_REGION) unless
GATEWAY_BEDROCK_BASE_URL says otherwise; SigV4 for service `bedrock` with the standard AWS credential chain
(environment, shared files, IRSA web identity, container and instance roles), or AWS_BEARER_TOKEN_BEDROCK as a
Bearer key. Usage: `inputTokens` + `cacheReadInputTokens` + `cacheWriteInputTokens`, normalized; `cachePoint`
blocks placed by the break-even rule (`provider_cache/bedrock.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.errors import GatewayError
from gateway.protocols.translate.anthropic_messages_to_converse import converse_path
from gateway.provider_cache.bedrock import BEDROCK_CACHE
from gateway.signing.platforms import BedrockSigner
from gateway.vendors.spec import LintHints, VendorSpec

if TYPE_CHECKING:
    from gateway.context import RequestContext

PREFIX = "bedrock/"


def _native_path(ctx: RequestContext) -> str:
    return converse_path(ctx.model[len(PREFIX):] if ctx.model.startswith(PREFIX) else ctx.model, ctx.stream)


def _prepare(ctx: RequestContext, settings: Any) -> None:
    region = settings.bedrock_region
    if not region:
        raise GatewayError(404, f"The model `{ctx.model[:100]}` needs a Bedrock upstream, and none is configured "
                           "(GATEWAY_BEDROCK_REGION).", "ResourceNotFoundException")
    ctx.upstream_base_url = ctx.upstream_base_url.replace("{region}", region)


SPEC = VendorSpec(
    name="bedrock",
    title="Amazon Bedrock",
    family="anthropic",
    speaks=("bedrock_converse",),
    native_paths={"bedrock_converse": _native_path},
    route_prefix=PREFIX,
    key_env="AWS_BEARER_TOKEN_BEDROCK",
    base_url_env="GATEWAY_BEDROCK_BASE_URL",
    default_base_url="https://bedrock-runtime.{region}.amazonaws.com",
    signer=lambda settings: BedrockSigner(settings.bedrock_region or "us-east-1"),
    error_shape="bedrock",
    provider_cache=BEDROCK_CACHE,
    lint=LintHints(default_model="bedrock/anthropic.claude-sonnet-4-20250514-v1:0"),
    owns_path=lambda path: path.startswith("/model/"),
    prepare=_prepare,
)
