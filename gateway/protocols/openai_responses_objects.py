"""The objects of the Responses API the gateway renders: the `response` object and its output items."""

from __future__ import annotations

from typing import Any


def finish_of(status: str | None, incomplete: dict[str, Any] | None, has_calls: bool) -> str:
    if status == "incomplete":
        return "content_filter" if (incomplete or {}).get("reason") == "content_filter" else "length"
    return "tool_calls" if has_calls else "stop"


def message_item(item_id: str, text: str, refusal: str | None, status: str = "completed") -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text or not refusal:
        content.append({"type": "output_text", "annotations": [], "logprobs": [], "text": text})
    if refusal:
        content.append({"type": "refusal", "refusal": refusal})
    return {"id": item_id, "type": "message", "status": status, "content": content, "role": "assistant"}


def call_item(item_id: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "function_call", "status": status, "arguments": arguments,
            "call_id": call_id, "name": name}


def response_object(
    req: dict[str, Any], resp_id: str, created_at: int, model: str, status: str,
    output: list[dict[str, Any]], usage: dict[str, Any] | None, finish_reason: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `response` object as OpenAI returns it, echoing the request's settings."""
    incomplete = None
    if status == "incomplete":
        incomplete = {"reason": "content_filter" if finish_reason == "content_filter" else "max_output_tokens"}
    return {
        "id": resp_id,
        "object": "response",
        "created_at": created_at,
        "completed_at": created_at if status == "completed" else None,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": req.get("instructions"),
        "max_output_tokens": req.get("max_output_tokens"),
        "max_tool_calls": req.get("max_tool_calls"),
        "model": model,
        "output": output,
        "parallel_tool_calls": req.get("parallel_tool_calls", True),
        "previous_response_id": req.get("previous_response_id"),
        "prompt_cache_key": req.get("prompt_cache_key"),
        "reasoning": req.get("reasoning") or {"effort": None, "summary": None},
        "safety_identifier": req.get("safety_identifier"),
        "service_tier": (extra or {}).get("service_tier") or req.get("service_tier") or "default",
        "temperature": req.get("temperature", 1.0),
        "text": req.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": req.get("tool_choice", "auto"),
        "tools": req.get("tools") or [],
        "top_logprobs": req.get("top_logprobs", 0),
        "top_p": req.get("top_p", 1.0),
        "truncation": req.get("truncation", "disabled"),
        "usage": usage,
        "user": req.get("user"),
        "metadata": req.get("metadata") or {},
    }


def status_of(finish_reason: str) -> str:
    return "incomplete" if finish_reason in ("length", "content_filter") else "completed"
