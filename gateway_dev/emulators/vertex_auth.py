"""Google OAuth 2.0 for the Vertex AI emulator: the service-account token endpoint and access-token checks.

`POST /token` takes the JWT-bearer grant a service account makes (form fields `grant_type=urn:ietf:params:oauth:
grant-type:jwt-bearer`, `assertion=<RS256 JWT>`). The assertion's signature is verified with the account's
registered public key (chosen by the JWT's `kid`), its `aud` must be `https://oauth2.googleapis.com/token`
(google-auth puts that audience in whatever the key file's `token_uri` says) and `iat`/`exp` must be a short-lived
window. The answer is `{"access_token", "expires_in", "token_type": "Bearer"}`; failures are OAuth errors
(`{"error": "invalid_grant", "error_description": ...}`, 400).

Token lifetimes follow real time, not the emulators' clock: the client's credential library judges expiry by its
own clock, so a frozen server clock would make the two disagree. `expires_in` is configurable (short values let a
test see a refresh) and `expire_all()` revokes every token at once.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.auth import exceptions as google_exceptions
from google.auth import jwt
from starlette.requests import Request
from starlette.responses import Response

GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
_MAX_ASSERTION_S = 3600  # "The expiration time of the assertion ... maximum of 1 hour after the issued time"


@dataclass(slots=True)
class ServiceAccount:
    client_email: str
    project_id: str
    public_keys: dict[str, str]  # private_key_id -> PEM public key (or certificate)


@dataclass(slots=True)
class AccessToken:
    token: str
    client_email: str
    project_id: str
    scopes: tuple[str, ...]
    expires_at: float


@dataclass
class VertexAuth:
    """Registered service accounts and the access tokens minted for them."""

    expires_in: int = 3599  # what Google's token endpoint answers
    accounts: dict[str, ServiceAccount] = field(default_factory=dict)
    tokens: dict[str, AccessToken] = field(default_factory=dict)
    minted: list[str] = field(default_factory=list)  # client_email of every token minted, in order
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, client_email: str, project_id: str, key_id: str, public_key_pem: str) -> None:
        with self._lock:
            acct = self.accounts.setdefault(client_email, ServiceAccount(client_email, project_id, {}))
            acct.public_keys[key_id] = public_key_pem

    def register_info(self, info: dict[str, Any], public_key_pem: str) -> None:
        """Register a service-account key file's account (`client_email`, `project_id`, `private_key_id`)."""
        self.register(info["client_email"], info["project_id"], info["private_key_id"], public_key_pem)

    def expire_all(self) -> None:
        with self._lock:
            self.tokens.clear()

    def clear(self) -> None:
        with self._lock:
            self.tokens.clear()
            self.minted.clear()

    def check(self, token: str) -> AccessToken | None:
        """The live token, or None (unknown, revoked or expired)."""
        with self._lock:
            rec = self.tokens.get(token)
            if rec is None:
                return None
            if rec.expires_at <= time.time():
                del self.tokens[token]
                return None
            return rec

    def _sweep(self, now: float) -> None:
        for t in [t for t, r in self.tokens.items() if r.expires_at <= now]:
            del self.tokens[t]

    def grant(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """Answer a token request: (status, JSON body)."""
        if form.get("grant_type") != JWT_BEARER:
            return 400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type: "
                         f"{form.get('grant_type', '')}"}
        assertion = form.get("assertion") or ""
        try:
            header = jwt.decode_header(assertion)
            unverified = jwt.decode(assertion, verify=False)
        except (ValueError, google_exceptions.GoogleAuthError):
            return 400, {"error": "invalid_request", "error_description": "Invalid JWT: malformed assertion."}
        acct = self.accounts.get(str(unverified.get("iss", "")))
        if acct is None:
            return 400, {"error": "invalid_grant", "error_description": "Invalid grant: account not found"}
        key = acct.public_keys.get(str(header.get("kid", "")))
        if key is None:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        try:
            claims = jwt.decode(assertion, certs={header["kid"]: key}, audience=GOOGLE_TOKEN_AUDIENCE)
        except (ValueError, google_exceptions.GoogleAuthError) as e:
            text = str(e)
            if "audience" in text.lower():
                return 400, {"error": "invalid_grant", "error_description": "Invalid JWT: audience mismatch."}
            if "expired" in text.lower() or "early" in text.lower():
                return 400, {"error": "invalid_grant", "error_description": "Invalid JWT: Token must be a short-lived "
                             "token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the "
                             "JWT claim."}
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        if int(claims.get("exp", 0)) - int(claims.get("iat", 0)) > _MAX_ASSERTION_S:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT: Token must be a short-lived "
                         "token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT "
                         "claim."}
        scopes = tuple(str(claims.get("scope") or "").split())
        token = "ya29.emu-" + os.urandom(24).hex()
        now = time.time()
        with self._lock:
            self._sweep(now)
            self.tokens[token] = AccessToken(token, acct.client_email, acct.project_id, scopes, now + self.expires_in)
            self.minted.append(acct.client_email)
        return 200, {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}

    async def token_endpoint(self, request: Request) -> Response:
        raw = await request.body()
        form = {k: v[0] for k, v in urllib.parse.parse_qs(raw.decode("latin-1")).items()}
        status, body = self.grant(form)
        return Response(orjson.dumps(body), status_code=status, media_type="application/json",
                        headers={"cache-control": "no-cache, no-store"})


def project_number(project_id: str) -> str:
    """A stable 12-digit project number for a project id (Vertex names caches by number)."""
    return str(100_000_000_000 + int(hashlib.sha256(project_id.encode()).hexdigest()[:12], 16) % 900_000_000_000)


def make_service_account(project_id: str, token_uri: str, *, name: str = "gateway") -> tuple[dict[str, Any], str]:
    """A fresh service-account key file (as the Cloud console downloads it, with a new 2048-bit RSA key) and its
    public key in PEM, for `VertexEmulator.register_service_account`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    email = f"{name}@{project_id}.iam.gserviceaccount.com"
    info = {"type": "service_account", "project_id": project_id, "private_key_id": os.urandom(20).hex(),
            "private_key": private_pem, "client_email": email, "client_id": str(int.from_bytes(os.urandom(8), "big")),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "universe_domain": "googleapis.com"}
    return info, public_pem
