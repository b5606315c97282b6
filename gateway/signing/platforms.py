"""Signers of the cloud platforms: each adds the gateway's own credential to an upstream request as it is
about to be sent (method, URL, headers and body final), never the caller's.

- Azure OpenAI: the resource key in `api-key`.
- Vertex AI: `Authorization: Bearer <access token>` minted from the gateway's service account (or Application
  Default Credentials) by `VertexTokenProvider`, which refreshes it ahead of expiry off the request path.
- Bedrock: SigV4 for service `bedrock` with credentials from the standard AWS chain (botocore's signer), or a
  Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`) as `Authorization: Bearer`.

SigV4 covers the path byte for byte; the HTTP client (aiohttp, through yarl) normalizes percent-escapes that
need none (`%3A` → `:`), so the signature is computed over the URL exactly as it will go out.
"""

from __future__ import annotations

from typing import Protocol

from yarl import URL

from gateway.signing.sigv4 import AwsCredentialSource
from gateway.signing.vertex_token import VertexTokenProvider

# Headers a signature must not cover: the HTTP client sets or rewrites them after signing.
_UNSIGNED = frozenset({"content-length", "host", "connection", "accept-encoding", "user-agent", "expect",
                       "transfer-encoding"})


class Outgoing(Protocol):
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    key: str | None


def _drop_auth(headers: dict[str, str]) -> None:
    for name in [h for h in headers if h.lower() in ("authorization", "api-key", "x-api-key", "x-goog-api-key",
                                                     "x-amz-security-token", "x-amz-date")]:
        del headers[name]


class AzureKeySigner:
    """`api-key: <resource key>` (the gateway's, or the caller's under BYOK: `request.key`)."""

    async def sign(self, request: Outgoing) -> None:
        _drop_auth(request.headers)
        if request.key:
            request.headers["api-key"] = request.key


class VertexSigner:
    def __init__(self, tokens: VertexTokenProvider) -> None:
        self.tokens = tokens

    async def sign(self, request: Outgoing) -> None:
        _drop_auth(request.headers)
        request.headers["authorization"] = f"Bearer {await self.tokens.token()}"


class BedrockSigner:
    """SigV4 (`credentials`) or a Bedrock API key (`bearer_token`, which wins when both are set, as boto3 does
    with AWS_BEARER_TOKEN_BEDROCK)."""

    def __init__(self, region: str, credentials: AwsCredentialSource | None = None,
                 bearer_token: str | None = None) -> None:
        if credentials is None and not bearer_token:
            raise ValueError("Bedrock needs AWS credentials or a Bedrock API key")
        self.region = region
        self.credentials = credentials
        self.bearer_token = bearer_token

    async def sign(self, request: Outgoing) -> None:
        _drop_auth(request.headers)
        if self.bearer_token:
            request.headers["authorization"] = f"Bearer {self.bearer_token}"
            return
        assert self.credentials is not None
        url = str(URL(request.url))  # what aiohttp will put on the wire
        request.url = url
        signed_part = {k: v for k, v in request.headers.items() if k.lower() not in _UNSIGNED}
        signed = await self.credentials.sign(request.method, url, signed_part, request.body or b"",
                                             region=self.region)
        request.headers.update({k: v for k, v in signed.items() if k.lower() not in _UNSIGNED})
