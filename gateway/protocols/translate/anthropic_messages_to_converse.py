"""Anthropic Messages request → Amazon Bedrock Converse request.

Claude on Bedrock through Converse: system text blocks → `system`, message blocks → Converse content blocks
(`text`, `image`, `document`, `toolUse`, `toolResult`, `reasoningContent`), tools → `toolConfig`, sampling →
`inferenceConfig`, what Converse has no field for but Claude honours (`top_k`, `thinking`) →
`additionalModelRequestFields`. A `cache_control` marker becomes a `cachePoint` block right after the block it
marks (Converse's way of ending a cached prefix, TTL kept); a top-level `cache_control` (Anthropic's automatic
mode) marks the last block of the conversation. The model id goes in the path, URL-encoded as boto3 sends it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gateway.protocols.translate.common import refuse

_HANDLED = frozenset({"model", "messages", "system", "max_tokens", "temperature", "top_p", "top_k",
                      "stop_sequences", "stream", "tools", "tool_choice", "thinking", "cache_control"})
_DROPPED = frozenset({"metadata", "service_tier", "diagnostics"})  # never change the answer
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}


def converse_path(model: str, stream: bool) -> str:
    """`/model/{modelId}/converse[-stream]` with the id percent-encoded (`:` → `%3A`), byte for byte what boto3
    signs and sends."""
    return f"/model/{quote(model, safe='')}/{'converse-stream' if stream else 'converse'}"


def cache_point(marker: Any) -> dict[str, Any]:
    point: dict[str, Any] = {"type": "default"}
    if isinstance(marker, dict) and marker.get("ttl") == "1h":
        point["ttl"] = "1h"
    return {"cachePoint": point}


def _source_bytes(block: dict[str, Any], what: str) -> tuple[str, str]:
    raw = block.get("source")
    source: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if source.get("type") != "base64" or not isinstance(source.get("data"), str):
        raise refuse(f"Bedrock takes {what} as base64 data only (not URLs or file ids).")
    return str(source.get("media_type") or ""), source["data"]


def _tool_result(block: dict[str, Any]) -> dict[str, Any]:
    content = block.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        parts = [{"text": content}] if content else []
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append({"text": str(part.get("text") or "")})
            elif isinstance(part, dict) and part.get("type") == "image":
                parts.append(_image(part))
            else:
                raise refuse("A tool_result may hold text and image blocks only for Bedrock models.")
    result: dict[str, Any] = {"toolUseId": str(block.get("tool_use_id") or ""), "content": parts or [{"text": ""}]}
    if block.get("is_error"):
        result["status"] = "error"
    return {"toolResult": result}


def _image(block: dict[str, Any]) -> dict[str, Any]:
    mime, data = _source_bytes(block, "images")
    if mime not in _IMAGE_FORMATS:
        raise refuse(f"Image type '{mime}' is not supported by Bedrock (png, jpeg, gif, webp).")
    return {"image": {"format": _IMAGE_FORMATS[mime], "source": {"bytes": data}}}


def _block(block: Any, n: int) -> dict[str, Any]:
    if not isinstance(block, dict):
        raise refuse("Each content block must be an object.")
    kind = block.get("type")
    if kind == "text":
        return {"text": str(block.get("text") or "")}
    if kind == "image":
        return _image(block)
    if kind == "document":
        mime, data = _source_bytes(block, "documents")
        if mime != "application/pdf":
            raise refuse(f"Document type '{mime}' is not supported for Bedrock through this gateway (PDF only).")
        return {"document": {"format": "pdf", "name": str(block.get("title") or f"document{n}"),
                             "source": {"bytes": data}}}
    if kind == "tool_use":
        return {"toolUse": {"toolUseId": str(block.get("id") or ""), "name": str(block.get("name") or ""),
                            "input": block.get("input") if isinstance(block.get("input"), dict) else {}}}
    if kind == "tool_result":
        return _tool_result(block)
    if kind == "thinking":
        text: dict[str, Any] = {"text": str(block.get("thinking") or "")}
        if block.get("signature"):
            text["signature"] = block["signature"]
        return {"reasoningContent": {"reasoningText": text}}
    if kind == "redacted_thinking":
        return {"reasoningContent": {"redactedContent": str(block.get("data") or "")}}
    raise refuse(f"Content block type '{kind}' is not supported for Bedrock models.")


def _blocks(content: Any, counter: list[int]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if not isinstance(content, list):
        raise refuse("A message's content must be a string or an array of blocks.")
    out: list[dict[str, Any]] = []
    for block in content:
        counter[0] += 1
        out.append(_block(block, counter[0]))
        if isinstance(block, dict) and block.get("cache_control"):
            out.append(cache_point(block["cache_control"]))
    return out


def _tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise refuse("'tools' must be an array.")
    out: list[dict[str, Any]] = []
    for tool in tools:
        if not isinstance(tool, dict) or not tool.get("name"):
            raise refuse("Each tool needs a 'name'.")
        if tool.get("type") not in (None, "custom"):
            raise refuse(f"Server tool '{tool.get('type')}' is not available on Bedrock through Converse.")
        spec: dict[str, Any] = {"name": tool["name"],
                                "inputSchema": {"json": tool.get("input_schema") or {"type": "object"}}}
        if tool.get("description"):
            spec["description"] = tool["description"]
        out.append({"toolSpec": spec})
        if tool.get("cache_control"):
            out.append(cache_point(tool["cache_control"]))
    return out


def _tool_choice(choice: Any) -> dict[str, Any] | None:
    if choice is None:
        return None
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "auto":
        return {"auto": {}}
    if kind == "any":
        return {"any": {}}
    if kind == "tool" and choice.get("name"):
        return {"tool": {"name": choice["name"]}}
    if kind == "none":
        return None
    raise refuse(f"Unsupported tool_choice {choice!r} for Bedrock models.")


def translate_request(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An Anthropic Messages body (with `model`) → (the Converse path, the Converse body)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise refuse("'model' is required.")
    for key in body:
        if key not in _HANDLED and key not in _DROPPED:
            raise refuse(f"Unsupported parameter '{key}' for Bedrock model '{model}'.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise refuse("'messages' must be a non-empty array.")
    counter = [0]
    out: dict[str, Any] = {}
    system = body.get("system")
    if system:
        out["system"] = _blocks(system, counter)
    converted: list[dict[str, Any]] = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise refuse("Each message needs the role 'user' or 'assistant'.")
        blocks = _blocks(m.get("content"), counter)
        if blocks:
            converted.append({"role": m["role"], "content": blocks})
    if not converted:
        raise refuse("At least one message with content is required.")
    if body.get("cache_control") and not any("cachePoint" in b for b in converted[-1]["content"][-1:]):
        converted[-1]["content"].append(cache_point(body["cache_control"]))
    out["messages"] = converted
    config: dict[str, Any] = {}
    for src, dst in (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP"),
                     ("stop_sequences", "stopSequences")):
        if body.get(src) is not None:
            config[dst] = body[src]
    if config:
        out["inferenceConfig"] = config
    tools = _tools(body)
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "none":
        if any("toolUse" in b or "toolResult" in b for m in converted for b in m["content"]):
            raise refuse("tool_choice 'none' with tool calls in the conversation is not supported for Bedrock.")
        tools = []  # Converse has no "none": offering no tools is the same answer
    if tools:
        tool_config: dict[str, Any] = {"tools": tools}
        mapped = _tool_choice(choice)
        if mapped is not None:
            tool_config["toolChoice"] = mapped
        out["toolConfig"] = tool_config
    extra: dict[str, Any] = {}
    if body.get("top_k") is not None:
        extra["top_k"] = body["top_k"]
    if body.get("thinking") is not None:
        extra["thinking"] = body["thinking"]
    if extra:
        out["additionalModelRequestFields"] = extra
    return converse_path(model, body.get("stream") is True), out
