"""Errors the gateway raises itself. They are rendered in the caller's vendor error shape by the
protocol adapter (or by `vendor_error_body` before the adapter is known), never as a traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class GatewayError(Exception):
    """A request the gateway refuses or cannot complete; `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


# Per vendor: the error `type`/`status` word each status maps to in that vendor's documented shape.
_OPENAI_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_error",
    500: "server_error", 502: "server_error", 503: "server_error", 504: "timeout_error",
}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 502: "api_error", 503: "api_error", 504: "timeout_error", 529: "overloaded_error",
}
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "UNAVAILABLE",
    503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}


ErrorShape = Callable[[int, str, str | None], dict[str, Any]]


def _openai(status: int, message: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": _OPENAI_TYPES.get(status, "server_error"), "param": None,
                      "code": code}}


def _anthropic(status: int, message: str, code: str | None) -> dict[str, Any]:
    return {"type": "error", "error": {"type": code or _ANTHROPIC_TYPES.get(status, "api_error"), "message": message}}


def _gemini(status: int, message: str, code: str | None) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": code or _GEMINI_STATUS.get(status, "UNKNOWN")}}


def _bedrock(status: int, message: str, code: str | None) -> dict[str, Any]:
    # rest-json: the type travels in the `x-amzn-ErrorType` header (bedrock_converse.error_headers)
    return {"message": message}


# error dialect (a protocol adapter's `vendor`, a vendor spec's `error_shape`) → its shape
ERROR_SHAPES: dict[str, ErrorShape] = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini,
                                       "bedrock": _bedrock}


def vendor_error_body(vendor: str, status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """The error body `vendor`'s SDK expects for `status` (OpenAI's shape for an unknown dialect)."""
    return ERROR_SHAPES.get(vendor, _openai)(status, message, code)
