"""AWS Signature Version 4 for Bedrock, with botocore's own signer.

`sign()` takes the request as the HTTP client will send it (method, URL with the path already percent-encoded
the way boto3 encodes it, e.g. `/model/anthropic.claude-...-v1%3A0/converse`, headers, body) and returns the
headers to send: the given ones plus `X-Amz-Date`, `Authorization` and, for temporary credentials,
`X-Amz-Security-Token`. The HTTP client must then send the path byte for byte (no re-quoting), since the
signature covers it.

`AwsCredentialSource` resolves the standard chain (environment, shared files, web identity / IRSA, container
and instance metadata) in a worker thread, and refreshes temporary credentials in one when botocore says they
need it, so signing never blocks the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, ReadOnlyCredentials, RefreshableCredentials

BEDROCK_SIGNING_NAME = "bedrock"


def sign(method: str, url: str, headers: Mapping[str, str], body: bytes, *, credentials: ReadOnlyCredentials,
         region: str, service: str = BEDROCK_SIGNING_NAME) -> dict[str, str]:
    """The headers that make this request a valid SigV4 request for `service` in `region`."""
    creds = Credentials(credentials.access_key, credentials.secret_key, credentials.token)
    request = AWSRequest(method=method.upper(), url=url, data=body, headers=dict(headers))
    SigV4Auth(creds, service, region).add_auth(request)
    return {k: v for k, v in request.headers.items()}


class AwsCredentialSource:
    """Credentials from the standard AWS chain (or given ones), frozen for signing."""

    def __init__(self, credentials: Credentials | None = None, *, profile: str | None = None) -> None:
        self._credentials = credentials
        self._profile = profile
        self._frozen: ReadOnlyCredentials | None = None
        self._lock: asyncio.Lock | None = None

    @classmethod
    def static(cls, access_key: str, secret_key: str, token: str | None = None) -> AwsCredentialSource:
        return cls(Credentials(access_key, secret_key, token))

    def _resolve_blocking(self) -> ReadOnlyCredentials:
        if self._credentials is None:
            session = botocore.session.Session(profile=self._profile)
            found = session.get_credentials()
            if found is None:
                raise RuntimeError("no AWS credentials found in the standard chain")
            self._credentials = found
        return self._credentials.get_frozen_credentials()

    def _stale(self) -> bool:
        if self._frozen is None:
            return True
        creds = self._credentials
        return isinstance(creds, RefreshableCredentials) and creds.refresh_needed()

    async def get(self) -> ReadOnlyCredentials:
        """Current credentials; the chain lookup and any refresh happen in a worker thread."""
        if not self._stale():
            assert self._frozen is not None
            return self._frozen
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._stale():
                self._frozen = await asyncio.to_thread(self._resolve_blocking)
        assert self._frozen is not None
        return self._frozen

    async def sign(self, method: str, url: str, headers: Mapping[str, str], body: bytes, *, region: str,
                   service: str = BEDROCK_SIGNING_NAME) -> dict[str, str]:
        return sign(method, url, headers, body, credentials=await self.get(), region=region, service=service)
