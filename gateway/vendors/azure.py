"""Azure OpenAI: models `azure/<deployment>` through any client protocol, and the native surface of the
`AzureOpenAI` client (`/openai/deployments/{deployment}/...?api-version=V`, `/openai/v1/...`).

Upstream: the deployment path with the configured api-version (GATEWAY_AZURE_OPENAI_API_VERSION) on the
resource endpoint (GATEWAY_AZURE_OPENAI_ENDPOINT), the resource key (AZURE_OPENAI_API_KEY) in `api-key`. Usage
and prompt caching are OpenAI's (`prompt_tokens_details.cached_tokens`); prices come from litellm's map under the
model the answer names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gateway.errors import GatewayError
from gateway.vendors.spec import LintHints, VendorSpec, static_key

if TYPE_CHECKING:
    from gateway.context import RequestContext

PREFIX = "azure/"


def _prepare(ctx: RequestContext, settings: Any) -> None:
    if not ctx.upstream_base_url:
        raise GatewayError(404, f"The model `{ctx.model[:100]}` needs an Azure OpenAI upstream, and none is "
                           "configured (GATEWAY_AZURE_OPENAI_ENDPOINT).", "model_not_found")
    deployment = quote(ctx.model[len(PREFIX):], safe="")
    version = quote(str(settings.azure_openai_api_version), safe="")
    protocol = ctx.upstream_adapter.name if ctx.upstream_adapter is not None else "openai_chat"
    if protocol == "openai_responses":
        ctx.upstream_path = f"/openai/responses?api-version={version}"  # the deployment is the body's model
    else:
        ctx.upstream_path = f"/openai/deployments/{deployment}/chat/completions?api-version={version}"


SPEC = VendorSpec(
    name="azure",
    title="Azure OpenAI",
    family="openai",
    speaks=("openai_chat", "openai_responses"),
    native_paths={"openai_chat": "/chat/completions", "openai_responses": "/responses"},  # set by `_prepare`
    route_prefix=PREFIX,
    key_env="AZURE_OPENAI_API_KEY",
    base_url_env="GATEWAY_AZURE_OPENAI_ENDPOINT",
    default_base_url="",
    signer=static_key("api-key", ""),
    error_shape="openai",
    lint=LintHints(default_model="azure/gpt-4o"),
    owns_path=lambda path: path.startswith("/openai/"),
    prepare=_prepare,
)
