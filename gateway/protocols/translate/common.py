"""What the request translators share: OpenAI Chat parameter policy, media parts, model limits.

Parameter policy for an OpenAI Chat request sent to another vendor:
- dropped: fields that never change the answer (`user`, `store`, `metadata`, prompt-cache hints,
  `stream_options`, `service_tier`, `prediction`, ...);
- refused with a clear 400: fields that change the answer and cannot be honoured (`n>1`,
  `logprobs`, `audio` output, ...), and any field the gateway does not know (an allow-list, so a
  new OpenAI parameter is refused rather than silently ignored);
- everything else is mapped by the pair's translator.
"""

from __future__ import annotations

import importlib.util
import mimetypes
import os
from functools import lru_cache
from typing import Any

import orjson

from gateway.errors import GatewayError

# Never change the answer: safe to drop when the vendor has no equivalent.
DROPPED = frozenset({
    "user", "store", "metadata", "prompt_cache_key", "prompt_cache_retention", "prompt_cache_options",
    "stream_options", "service_tier", "safety_identifier", "prediction",
})
# OpenAI's reasoning_effort → a thinking budget in tokens (litellm's defaults, constants.py).
THINKING_BUDGET = {"minimal": 128, "low": 1024, "medium": 2048, "high": 4096, "xhigh": 8192, "max": 16384}
DEFAULT_MAX_TOKENS = 4096  # when the model is not in litellm's table: accepted by every Claude model


def refuse(message: str, param: str | None = None) -> GatewayError:
    return GatewayError(400, message, "unsupported_parameter" if param else "invalid_request_error")


def check_params(body: dict[str, Any], handled: frozenset[str], vendor: str) -> None:
    """Refuses what cannot be honoured for `vendor`; `handled` lists what its translator maps."""
    model = body.get("model")
    for key, value in body.items():
        if key in handled or key in DROPPED:
            continue
        if key == "n":
            if value not in (None, 1):
                raise refuse(f"'n' > 1 is not supported for {vendor} model '{model}' through the OpenAI API.", key)
        elif key in ("logprobs", "top_logprobs"):
            if value not in (None, False, 0):
                raise refuse(f"'{key}' is not supported for {vendor} model '{model}' through the OpenAI API.", key)
        elif key in ("frequency_penalty", "presence_penalty"):
            if value not in (None, 0, 0.0):
                raise refuse(f"'{key}' is not supported for {vendor} model '{model}' through the OpenAI API.", key)
        elif key == "logit_bias":
            if value:
                raise refuse(f"'logit_bias' is not supported for {vendor} model '{model}'.", key)
        elif key == "modalities":
            if value not in (None, ["text"]):
                raise refuse(f"Only text output is supported for {vendor} model '{model}'.", key)
        elif key == "verbosity":
            if value not in (None, "medium"):
                raise refuse(f"'verbosity' is not supported for {vendor} model '{model}'.", key)
        elif key in ("audio", "web_search_options", "functions", "function_call"):
            if value is not None:
                raise refuse(f"'{key}' is not supported for {vendor} model '{model}' through the OpenAI API.", key)
        elif key == "seed":
            continue  # best-effort determinism even at OpenAI; dropped where the vendor has none
        else:
            raise refuse(f"Unsupported parameter '{key}' for {vendor} model '{model}' through the OpenAI API.", key)


def require_model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise refuse("'model' is required.")
    return model


def require_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise refuse("'messages' must be a non-empty array.")
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise refuse("Each message must be an object with a 'role'.")
    return messages


def max_tokens_of(body: dict[str, Any]) -> int | None:
    value = body.get("max_completion_tokens")
    if value is None:
        value = body.get("max_tokens")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise refuse("'max_tokens' / 'max_completion_tokens' must be a positive integer.", "max_tokens")
    return value


def stop_list(body: dict[str, Any]) -> list[str] | None:
    stop = body.get("stop")
    if stop is None:
        return None
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return stop
    raise refuse("'stop' must be a string or an array of strings.", "stop")


def text_of(content: Any, what: str) -> str:
    """A content that must be text (system, tool results): a string or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                out.append(part["text"])
            else:
                raise refuse(f"Only text content is supported in {what}.")
        return "\n".join(out)
    raise refuse(f"Invalid content in {what}.")


def data_url(url: str) -> tuple[str, str] | None:
    """`data:<mime>;base64,<data>` → (mime, base64 data); None for other URLs."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        raise refuse("Only base64 data URLs are supported for inline media.")
    return head[: -len(";base64")] or "application/octet-stream", data


def image_url_of(part: dict[str, Any]) -> str:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url:
        raise refuse("An image_url part needs a 'url'.")
    return url


def guess_mime(url: str, default: str = "image/jpeg") -> str:
    return mimetypes.guess_type(url.split("?", 1)[0])[0] or default


def file_data_of(part: dict[str, Any]) -> tuple[str, str]:
    """An OpenAI `file` part with inline `file_data` → (mime, base64 data)."""
    f = part.get("file") or {}
    raw = f.get("file_data")
    if not isinstance(raw, str):
        raise refuse("Only 'file' parts with inline 'file_data' are supported for this model (OpenAI file ids "
                     "do not exist at other vendors).")
    parsed = data_url(raw)
    if parsed is not None:
        return parsed
    return guess_mime(f.get("filename") or "", "application/pdf"), raw


def tool_arguments(arguments: Any, name: str) -> dict[str, Any]:
    if arguments in (None, ""):
        return {}
    if isinstance(arguments, dict):
        return arguments
    try:
        value = orjson.loads(arguments)
    except (orjson.JSONDecodeError, TypeError) as exc:
        raise refuse(f"The arguments of tool call '{name}' are not valid JSON.") from exc
    if not isinstance(value, dict):
        raise refuse(f"The arguments of tool call '{name}' must be a JSON object.")
    return value


def function_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The `function` tools of a Chat request (other tool kinds are refused)."""
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise refuse("'tools' must be an array.", "tools")
    out = []
    for tool in tools:
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            kind = tool.get("type") if isinstance(tool, dict) else type(tool).__name__
            raise refuse(f"Only 'function' tools are supported for this model (got '{kind}').", "tools")
        fn = tool["function"]
        if not isinstance(fn.get("name"), str):
            raise refuse("Each function tool needs a 'name'.", "tools")
        out.append(fn)
    return out


def json_schema_of(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """response_format → ("text" | "json_object" | "json_schema", schema)."""
    fmt = body.get("response_format")
    if fmt is None:
        return "text", None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return "text", None
    if kind == "json_object":
        return "json_object", None
    if kind == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        if not isinstance(schema, dict):
            raise refuse("response_format json_schema needs a 'json_schema.schema' object.", "response_format")
        return "json_schema", schema
    raise refuse(f"Unsupported response_format type '{kind}'.", "response_format")


@lru_cache(maxsize=1)
def _model_table() -> dict[str, Any]:
    """litellm's bundled model table, read as a file (importing litellm costs seconds)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = os.path.join(next(iter(spec.submodule_search_locations)), "model_prices_and_context_window_backup.json")
    try:
        with open(path, "rb") as f:
            table = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return {k: v.get("max_output_tokens") for k, v in table.items() if isinstance(v, dict)}


def preload() -> None:
    """Reads the model table now (call once at startup, off the request path)."""
    _model_table()


def max_output_tokens(model: str, prefix: str) -> int | None:
    table = _model_table()
    for key in (model, f"{prefix}/{model}"):
        value = table.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None
