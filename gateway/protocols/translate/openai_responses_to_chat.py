"""OpenAI Responses request → OpenAI Chat Completions request.

The Responses API reaches a non-OpenAI model (Claude, Gemini, DeepSeek, vLLM) through Chat:
Responses → Chat here, then Chat → the vendor with the pair's translator. The answer needs no
translation: the upstream adapter parses it into the neutral `Answer`/events and the Responses
adapter renders them.

Refused with a clear 400: server-side state (`previous_response_id`, `conversation`, stored
`prompt`s, `item_reference`s, `background`), built-in tools (web search, file search, computer
use ...) and file ids, none of which exist at another vendor.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.translate.common import refuse

PATH = "/chat/completions"  # below an OpenAI-compatible base URL (which ends in /v1)
_COPIED = ("model", "temperature", "top_p", "stream", "parallel_tool_calls", "top_k")
# Never change the answer (or only shape OpenAI-side storage/output): not sent to another vendor.
_DROPPED = frozenset({"include", "truncation", "stream_options", "prompt_cache_options", "max_tool_calls", "user",
                      "metadata", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier",
                      "store"})
_STATEFUL = ("previous_response_id", "conversation", "prompt")


def _part(part: Any) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": part.get("text") or ""}
    if kind == "refusal":
        return {"type": "text", "text": part.get("refusal") or ""}
    if kind == "input_image":
        if not part.get("image_url"):
            raise refuse("input_image needs an 'image_url' (file ids are not supported for this model).")
        image: dict[str, Any] = {"url": part["image_url"]}
        if part.get("detail"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        if not part.get("file_data"):
            raise refuse("input_file needs inline 'file_data' (file ids and URLs are not supported for this model).")
        return {"type": "file", "file": {"file_data": part["file_data"], "filename": part.get("filename") or ""}}
    if kind == "input_audio":
        return {"type": "input_audio", "input_audio": part.get("input_audio") or {}}
    raise refuse(f"Input content type '{kind}' is not supported for this model.")


def _content(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise refuse("A message's content must be a string or an array of parts.")
    parts = [_part(p) for p in content]
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(p.get("text") or "" for p in output if isinstance(p, dict))
    raise refuse("function_call_output 'output' must be a string or an array of text parts.")


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions:
        if not isinstance(instructions, str):
            raise refuse("'instructions' must be a string for this model.")
        messages.append({"role": "system", "content": instructions})
    inp = body.get("input")
    if isinstance(inp, str):
        messages.append({"role": "user", "content": inp})
        return messages
    if not isinstance(inp, list):
        raise refuse("'input' must be a string or an array of items.")
    for item in inp:
        if not isinstance(item, dict):
            raise refuse("Each input item must be an object.")
        kind = item.get("type")
        if (kind is None or kind == "message") and item.get("role"):
            role = item["role"]
            if role not in ("user", "assistant", "system", "developer"):
                raise refuse(f"Unsupported message role '{role}'.")
            content = _content(item.get("content"))
            if role == "assistant" and not isinstance(content, str):
                content = "".join(p.get("text") or "" for p in content)
            messages.append({"role": role, "content": content})
        elif kind == "function_call":
            call = {"id": item.get("call_id") or "", "type": "function",
                    "function": {"name": item.get("name") or "", "arguments": item.get("arguments") or ""}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)  # one assistant turn, several calls
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id") or "",
                             "content": _output_text(item.get("output"))})
        elif kind == "reasoning":
            continue  # OpenAI's own (encrypted) reasoning means nothing to another model
        elif kind == "item_reference":
            raise refuse("'item_reference' input items need OpenAI-stored state; not supported for this model.")
        else:
            raise refuse(f"Input item type '{kind}' is not supported for this model.")
    if not messages:
        raise refuse("'input' is empty.")
    return messages


def _tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    tools = body.get("tools")
    if not tools:
        return None
    out = []
    for tool in tools:
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else "?"
            raise refuse(f"Built-in tool '{kind}' is only available on OpenAI models.", "tools")
        fn: dict[str, Any] = {"name": tool.get("name")}
        for key in ("description", "parameters", "strict"):
            if tool.get(key) is not None:
                fn[key] = tool[key]
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(choice: Any) -> Any:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    raise refuse(f"Unsupported tool_choice {choice!r} for this model.", "tool_choice")


def _response_format(text: Any) -> dict[str, Any] | None:
    fmt = (text or {}).get("format") if isinstance(text, dict) else None
    if not fmt or fmt.get("type") == "text":
        return None
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if fmt.get("type") == "json_schema":
        schema = {"name": fmt.get("name") or "response", "schema": fmt.get("schema")}
        if fmt.get("strict") is not None:
            schema["strict"] = fmt["strict"]
        return {"type": "json_schema", "json_schema": schema}
    raise refuse(f"Unsupported text.format type '{fmt.get('type')}'.", "text")


def responses_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses body → the equivalent Chat Completions body."""
    for key in _STATEFUL:
        if body.get(key):
            raise refuse(f"'{key}' needs OpenAI-stored state and is only supported for OpenAI models.", key)
    if body.get("background"):
        raise refuse("'background' responses are only supported for OpenAI models.", "background")
    out: dict[str, Any] = {key: body[key] for key in _COPIED if key in body}
    out["messages"] = _messages(body)
    if body.get("max_output_tokens") is not None:
        out["max_completion_tokens"] = body["max_output_tokens"]
    tools = _tools(body)
    if tools:
        out["tools"] = tools
    if body.get("tool_choice") is not None:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    fmt = _response_format(body.get("text"))
    if fmt is not None:
        out["response_format"] = fmt
    text = body.get("text")
    if isinstance(text, dict) and text.get("verbosity") not in (None, "medium"):
        out["verbosity"] = text["verbosity"]
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort"):
        out["reasoning_effort"] = reasoning["effort"]
    if body.get("top_logprobs"):
        out["top_logprobs"] = body["top_logprobs"]
    known = {*_COPIED, *_DROPPED, *_STATEFUL, "input", "instructions", "max_output_tokens", "tools", "tool_choice",
             "text", "reasoning", "top_logprobs", "background"}
    unknown = sorted(set(body) - known)
    if unknown:
        raise refuse(f"Unsupported parameter '{unknown[0]}' for this model through the Responses API.", unknown[0])
    return out


def translate_request(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A Responses body → (`/chat/completions`, the Chat body) for an OpenAI-compatible upstream."""
    chat = responses_to_chat(body)
    if chat.get("stream") is True:
        chat["stream_options"] = {"include_usage": True}  # meter the stream; the client never sees Chat chunks
    return PATH, chat
