"""The Gemini API's JSON on the wire, shared by the Gemini and Vertex AI emulators: request bodies read in
lowerCamelCase (proto3 JSON accepts both spellings) and checked against their shape, and the answer's
parts, usage metadata, response and model resource as the API writes them."""

from __future__ import annotations

from typing import Any

from gateway_dev.emulators.answers import Generated
from gateway_dev.emulators.shapes import MAX_DEPTH, Shape, check
from gateway_dev.emulators.web import Call, EmulatorError

FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"}


# Free-form maps whose keys are user data, not proto field names.
_OPAQUE = frozenset({"args", "response", "properties", "parametersJsonSchema", "responseJsonSchema", "example",
                     "default", "enum", "labels", "metadata"})


def camel_keys(obj: Any, depth: int = 1) -> Any:
    """Proto3 JSON accepts `thinking_budget` as well as `thinkingBudget` (google-genai 3.6 sends snake_case
    inside `thinkingConfig`): read both, as the API does, by normalizing to lowerCamelCase. Nesting beyond
    MAX_DEPTH is the API's 400, never a RecursionError."""
    if not isinstance(obj, list | dict):
        return obj
    if depth > MAX_DEPTH:
        raise _err(400, f"Invalid JSON payload received. Nesting is deeper than {MAX_DEPTH} levels.")
    if isinstance(obj, list):
        return [camel_keys(v, depth + 1) for v in obj]
    out: dict[str, Any] = {}
    for k, v in obj.items():
        head, *rest = k.split("_")
        name = head + "".join(w[:1].upper() + w[1:] for w in rest) if rest else k
        out[name] = v if name in _OPAQUE else camel_keys(v, depth + 1)
    return out


def _body(call: Call, shape: type[Shape]) -> dict[str, Any]:
    """The request body in lowerCamelCase, checked against `shape` (a 400 INVALID_ARGUMENT otherwise)."""
    body = camel_keys(call.body)
    check(shape, body, "gemini")
    return body


def _err(status: int, message: str, word: str | None = None) -> EmulatorError:
    return EmulatorError("gemini", status, message, type=word)


def _parts(g: Generated, thoughts: bool = True) -> list[dict[str, Any]]:
    """The answer's parts: thought summaries first (only with `includeThoughts`), then calls or text."""
    out: list[dict[str, Any]] = [{"text": g.reasoning_text, "thought": True}] if thoughts and g.reasoning_text else []
    if g.tool_calls:
        return out + [{"functionCall": {"name": c.name, "args": c.arguments}} for c in g.tool_calls]
    return [*out, {"text": g.text}]


def _usage(n_in: int, cached: int, g: Generated) -> dict[str, Any]:
    candidates = g.output_tokens - g.reasoning_tokens
    usage: dict[str, Any] = {"promptTokenCount": n_in, "candidatesTokenCount": candidates,
                             "totalTokenCount": n_in + candidates + g.reasoning_tokens,
                             "promptTokensDetails": [{"modality": "TEXT", "tokenCount": n_in}]}
    if cached:
        usage["cachedContentTokenCount"] = cached
        usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": cached}]
    if g.reasoning_tokens:
        usage["thoughtsTokenCount"] = g.reasoning_tokens
    return usage


def _response(model: str, rid: str, g: Generated, parts: list[dict[str, Any]], finish: str | None,
              usage: dict[str, Any]) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": rid}


def _model_resource(model: str) -> dict[str, Any]:
    return {"name": f"models/{model}", "version": "001", "displayName": model, "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536, "supportedGenerationMethods": ["generateContent", "countTokens",
                                                                      "createCachedContent"]}
