"""Bedrock request authentication: AWS Signature Version 4 (verified with botocore's own signer) and Bedrock API
keys (`Authorization: Bearer <key>`).

SigV4: the `Authorization` header names the algorithm, the credential scope (`<key id>/<date>/<region>/<service>/
aws4_request`), the signed headers and the signature. The emulator rebuilds the canonical request from what it
received (the raw, still percent-encoded path, the signed headers, the body), asks botocore's `SigV4Auth` for the
signature under the key id's secret and compares. Failures answer as AWS does: 403 with `x-amzn-ErrorType`
UnrecognizedClientException (unknown key id), InvalidSignatureException (wrong signature, scope or an expired
timestamp), MissingAuthenticationTokenException (no credentials at all). Request times follow real time (the
client signs with its own clock).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from calendar import timegm
from dataclasses import dataclass, field

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SIGNING_SERVICE = "bedrock"
MAX_SKEW_S = 300  # "the request must reach AWS within five minutes of the time stamp"
_AUTH = re.compile(r"^AWS4-HMAC-SHA256\s+Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$")


class AwsAuthError(Exception):
    def __init__(self, error_type: str, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.error_type, self.message, self.status = error_type, message, status


@dataclass
class AwsKey:
    secret: str
    session_token: str | None = None


@dataclass
class BedrockAuth:
    """Accepted credentials: access key id -> secret (and session token), and Bedrock API keys (None: any
    non-empty bearer key is accepted)."""

    region: str = "us-east-1"
    keys: dict[str, AwsKey] = field(default_factory=dict)
    api_keys: set[str] | None = None

    def add_key(self, access_key_id: str, secret: str, session_token: str | None = None) -> None:
        self.keys[access_key_id] = AwsKey(secret, session_token)

    def authenticate(self, method: str, raw_path: str, query: str, headers: dict[str, str], body: bytes) -> str:
        """The caller's identity (`sigv4:<key id>` or `bearer:<key>`); raises AwsAuthError."""
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            key = auth[7:].strip()
            if not key or (self.api_keys is not None and key not in self.api_keys):
                raise AwsAuthError("UnrecognizedClientException", "Invalid API Key format: Must start with pre-defined "
                                   "prefix" if key and not key.startswith(("ABSK", "bedrock-api-key-"))
                                   else "The security token included in the request is invalid.")
            return "bearer:" + key
        if not auth:
            raise AwsAuthError("MissingAuthenticationTokenException", "Missing Authentication Token")
        return "sigv4:" + self._verify_sigv4(auth, method, raw_path, query, headers, body)

    def _verify_sigv4(self, auth: str, method: str, raw_path: str, query: str, headers: dict[str, str],
                      body: bytes) -> str:
        m = _AUTH.match(auth.strip())
        if m is None:
            raise AwsAuthError("IncompleteSignatureException", f"Authorization header requires 'Credential', "
                               f"'Signature' and 'SignedHeaders' parameters. Authorization={auth[:40]}", 400)
        credential, signed_names, signature = m.groups()
        parts = credential.split("/")
        if len(parts) != 5 or parts[4] != "aws4_request":
            raise AwsAuthError("IncompleteSignatureException", "Credential should be scoped to a valid region.", 400)
        key_id, date, region, service, _ = parts
        key = self.keys.get(key_id)
        if key is None:
            raise AwsAuthError("UnrecognizedClientException", "The security token included in the request is invalid.")
        if region != self.region:
            raise AwsAuthError("InvalidSignatureException", f"Credential should be scoped to a valid region. "
                               f"Expected '{self.region}' but got '{region}'.")
        if service != SIGNING_SERVICE:
            raise AwsAuthError("InvalidSignatureException", f"Credential should be scoped to correct service: "
                               f"'{SIGNING_SERVICE}'.")
        amz_date = headers.get("x-amz-date", "")
        signed = signed_names.split(";")
        if "host" not in signed or (amz_date and "x-amz-date" not in signed):
            raise AwsAuthError("InvalidSignatureException", "'Host' or 'x-amz-date' must be a signed header.")
        try:
            when = timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
        except ValueError:
            raise AwsAuthError("IncompleteSignatureException", "Authorization header requires existence of either "
                               "a 'X-Amz-Date' or a 'Date' header.", 400) from None
        if not amz_date.startswith(date):
            raise AwsAuthError("InvalidSignatureException", "Date in Credential scope does not match YYYYMMDD from "
                               "ISO-8601 version of date from HTTP.")
        now = time.time()
        if abs(now - when) > MAX_SKEW_S:
            edge = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now - MAX_SKEW_S))
            raise AwsAuthError("InvalidSignatureException", f"Signature expired: {amz_date} is now earlier than "
                               f"{edge} ({time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now))} - 5 min.)")
        if key.session_token is not None and headers.get("x-amz-security-token") != key.session_token:
            raise AwsAuthError("UnrecognizedClientException", "The security token included in the request is invalid.")
        claimed = headers.get("x-amz-content-sha256")
        if claimed is not None and claimed != hashlib.sha256(body).hexdigest():
            raise AwsAuthError("InvalidSignatureException", "The provided 'x-amz-content-sha256' header does not "
                               "match what was computed.", 400)
        missing = [h for h in signed if h not in headers]
        if missing:
            raise AwsAuthError("InvalidSignatureException", f"Signed header {missing[0]!r} is missing.")
        url = f"http://{headers['host']}{raw_path}" + (f"?{query}" if query else "")
        request = AWSRequest(method=method, url=url, data=body, headers={h: headers[h] for h in signed})
        request.context["timestamp"] = amz_date
        signer = SigV4Auth(Credentials(key_id, key.secret, key.session_token), SIGNING_SERVICE, region)
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        if not hmac.compare_digest(expected, signature):
            raise AwsAuthError("InvalidSignatureException", "The request signature we calculated does not match the "
                               "signature you provided. Check your AWS Secret Access Key and signing method. Consult "
                               "the service documentation for details.")
        return key_id
