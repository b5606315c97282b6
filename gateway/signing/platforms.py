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

import asyncio
import logging
from typing import TYPE_CHECKING, Protocol

from yarl import URL

from gateway.errors import GatewayError

if TYPE_CHECKING:
    # botocore and google-auth (with requests) are ~20 MiB and ~0.2 s to import: a gateway that serves no
    # cloud platform should not pay for them, so they load when a platform signer is first used.
    from gateway.signing.sigv4 import AwsCredentialSource
    from gateway.signing.vertex_token import VertexTokenProvider

log = logging.getLogger("gateway.signing")

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
    """Access tokens from `tokens`, or, built on first use (off the event loop), from the service-account file
    `credentials_file` or else Application Default Credentials (GKE workload identity, a metadata server)."""

    def __init__(self, tokens: VertexTokenProvider | None = None, credentials_file: str | None = None) -> None:
        self.tokens = tokens
        self.credentials_file = credentials_file
        self._lock: asyncio.Lock | None = None

    def _build(self) -> VertexTokenProvider:
        from gateway.signing.vertex_token import CLOUD_PLATFORM_SCOPE, VertexTokenProvider

        if self.credentials_file:
            return VertexTokenProvider.from_service_account_file(self.credentials_file)
        import google.auth

        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
        return VertexTokenProvider(credentials)

    async def provider(self) -> VertexTokenProvider:
        if self.tokens is None:
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if self.tokens is None:
                    self.tokens = await asyncio.to_thread(self._build)
        return self.tokens

    async def token(self) -> str:
        try:
            return await (await self.provider()).token()
        except Exception as exc:  # no credentials, or the token endpoint refused: the caller gets a clear 502
            raise GatewayError(502, f"The gateway could not get a Vertex AI access token: {exc}") from exc

    async def start(self) -> None:
        """Mint the first token and keep it fresh in the background (a failure is retried on use)."""
        try:
            await (await self.provider()).start()
        except Exception as exc:
            log.warning("Vertex AI token not available at start", extra={"error": repr(exc)})

    async def close(self) -> None:
        if self.tokens is not None:
            await self.tokens.close()

    async def sign(self, request: Outgoing) -> None:
        _drop_auth(request.headers)
        request.headers["authorization"] = f"Bearer {await self.token()}"


class BedrockSigner:
    """A Bedrock API key (`bearer_token`, or the request's key: AWS_BEARER_TOKEN_BEDROCK, or the caller's under
    BYOK), which wins as it does in boto3; else SigV4 with `credentials` (the standard AWS chain by default)."""

    def __init__(self, region: str, credentials: AwsCredentialSource | None = None,
                 bearer_token: str | None = None) -> None:
        self.region = region
        self._credentials = credentials
        self.bearer_token = bearer_token

    @property
    def credentials(self) -> AwsCredentialSource:
        """The standard AWS chain unless given: resolved on first use, so an API-key setup never imports botocore."""
        if self._credentials is None:
            from gateway.signing.sigv4 import AwsCredentialSource

            self._credentials = AwsCredentialSource()
        return self._credentials

    @credentials.setter
    def credentials(self, value: AwsCredentialSource) -> None:
        self._credentials = value

    async def sign(self, request: Outgoing) -> None:
        _drop_auth(request.headers)
        bearer = self.bearer_token or request.key
        if bearer:
            request.headers["authorization"] = f"Bearer {bearer}"
            return
        try:
            await self.credentials.get()
        except Exception as exc:
            raise GatewayError(502, f"The gateway has no AWS credentials for Bedrock: {exc}") from exc
        url = str(URL(request.url))  # what aiohttp will put on the wire
        request.url = url
        signed_part = {k: v for k, v in request.headers.items() if k.lower() not in _UNSIGNED}
        signed = await self.credentials.sign(request.method, url, signed_part, request.body or b"",
                                             region=self.region)
        request.headers.update({k: v for k, v in signed.items() if k.lower() not in _UNSIGNED})
