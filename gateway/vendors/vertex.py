"""Vertex AI (Gemini on Google Cloud): models `vertex_ai/<model>` through any client protocol, and the native
surface of google-genai with `vertexai=True`
(`/{v1,v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent|:streamGenerateContent`).

Upstream: always the gateway's project (GATEWAY_VERTEX_PROJECT); a native request keeps the location of its
path, any other uses GATEWAY_VERTEX_LOCATION; the regional endpoint `https://{location}-aiplatform.googleapis.com`
unless GATEWAY_VERTEX_BASE_URL says otherwise; an access token of the gateway's service account
(GOOGLE_APPLICATION_CREDENTIALS, else Application Default Credentials), minted and refreshed off the request path.
Usage is Gemini's; explicit context caches are regional (`provider_cache/vertex.py`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gateway.errors import GatewayError
from gateway.provider_cache.cache_api import VERTEX_DEFAULT_BASE, vertex_base_url
from gateway.provider_cache.vertex import SCRATCH, VERTEX_CACHE
from gateway.signing.platforms import VertexSigner
from gateway.vendors.spec import LintHints, VendorSpec

if TYPE_CHECKING:
    from gateway.context import RequestContext

PREFIX = "vertex_ai/"
_LOCATION = re.compile(r"[a-z][a-z0-9-]{1,40}")
_VERSIONS = ("v1", "v1beta1")


def _prepare(ctx: RequestContext, settings: Any) -> None:
    project = settings.vertex_project
    if not project:
        raise GatewayError(404, f"The model `{ctx.model[:100]}` needs a Vertex AI upstream, and none is configured "
                           "(GATEWAY_VERTEX_PROJECT).", "NOT_FOUND")
    location = ctx.path_params.get("location") or settings.vertex_location
    if not _LOCATION.fullmatch(location):
        raise GatewayError(400, f"`{location[:60]}` is not a Vertex AI location.")
    ctx.scratch[SCRATCH] = {"project": project, "location": location}
    ctx.upstream_base_url = vertex_base_url(ctx.upstream_base_url, location)
    version = ctx.api_version if ctx.api_version in _VERSIONS else "v1"
    action = "streamGenerateContent?alt=sse" if ctx.stream else "generateContent"
    ctx.upstream_path = (f"/{version}/projects/{project}/locations/{location}/publishers/google/models/"
                         f"{ctx.model[len(PREFIX):]}:{action}")


SPEC = VendorSpec(
    name="vertex_ai",
    title="Vertex AI",
    family="gemini",
    speaks=("gemini",),
    native_paths={"gemini": "/"},  # set by `_prepare`
    route_prefix=PREFIX,
    base_url_env="GATEWAY_VERTEX_BASE_URL",
    default_base_url=VERTEX_DEFAULT_BASE,
    signer=lambda settings: VertexSigner(credentials_file=settings.vertex_credentials),
    error_shape="gemini",
    model_in_path=True,
    provider_cache=VERTEX_CACHE,
    lint=LintHints(default_model="vertex_ai/gemini-2.5-flash"),
    owns_path=lambda path: "/projects/" in path and "/locations/" in path,
    prepare=_prepare,
)
