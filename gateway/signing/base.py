"""The seam every upstream credential goes through: a `Signer` sees the request as it is about to be
sent and adds what the upstream needs (a static key header now; SigV4 with `sigv4.py`, an OAuth bearer
token with `vertex_token.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["OutgoingRequest", "Signer", "StaticKey"]


@dataclass(slots=True)
class OutgoingRequest:
    """An upstream request as it is about to be sent; a signer edits `headers` in place."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    key: str | None  # the credential chosen for this request (the caller's under BYOK), or None


class Signer(Protocol):
    """Adds the upstream credential to a request. It sees the whole request (method, URL, headers,
    body), so a scheme that signs the payload (SigV4 with botocore) fits as well as a static key or a
    bearer token minted from a service account (OAuth with google-auth). Called once per attempt, after
    every stage has edited the body, right before the bytes leave."""

    async def sign(self, request: OutgoingRequest) -> None: ...


@dataclass(frozen=True, slots=True)
class StaticKey:
    """The key in one header: `authorization: Bearer KEY` (OpenAI-compatible), `x-api-key: KEY`
    (Anthropic), `x-goog-api-key: KEY` (Gemini)."""

    header: str = "authorization"
    scheme: str = "Bearer"

    async def sign(self, request: OutgoingRequest) -> None:
        if request.key:
            request.headers[self.header] = f"{self.scheme} {request.key}" if self.scheme else request.key


