"""OpenAI Chat Completions request → Gemini generateContent request (v1beta).

Why not litellm's Gemini transformation: `sync_transform_request_body` runs its context-caching
logic (which can create a CachedContent over HTTP), downloads http(s) media without a known
extension to inline it, and looks up GCS metadata; none of that belongs on a proxy's request path.

Mapping: system/developer → `systemInstruction`; assistant → role `model` with `functionCall`
parts; tool results → `functionResponse` parts in a user turn, named after the call they answer;
JSON schemas go as `parametersJsonSchema` / `responseJsonSchema` (full JSON Schema, v1beta), so no
schema rewriting is needed. A tool call id that carries a Gemini thought signature
(`<id>__thought__<sig>`, see gemini_stream) gives the signature back to Gemini.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson

from gateway.protocols.gemini_stream import split_call_id
from gateway.protocols.translate.common import (
    THINKING_BUDGET,
    check_params,
    data_url,
    file_data_of,
    function_tools,
    guess_mime,
    image_url_of,
    json_schema_of,
    max_tokens_of,
    refuse,
    require_messages,
    require_model,
    stop_list,
    text_of,
    tool_arguments,
)

_HANDLED = frozenset({
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "stream",
    "tools", "tool_choice", "parallel_tool_calls", "response_format", "reasoning_effort", "seed",
    "frequency_penalty", "presence_penalty",
    "top_k",  # Gemini-native, through extra_body
})
# Gemini 3 refuses a function call without its signature; Google documents this value as the
# fallback for history that has none (litellm sends the same).
DUMMY_SIGNATURE = "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="
_AUDIO = {"wav": "audio/wav", "mp3": "audio/mp3"}


def path_for(model: str, stream: bool) -> str:
    model = model[len("models/"):] if model.startswith("models/") else model
    name = quote(model, safe="-._~")
    if stream:
        return f"/v1beta/models/{name}:streamGenerateContent?alt=sse"
    return f"/v1beta/models/{name}:generateContent"


def _media(url: str) -> dict[str, Any]:
    parsed = data_url(url)
    if parsed is not None:
        return {"inlineData": {"mimeType": parsed[0], "data": parsed[1]}}
    if url.startswith(("https://", "http://", "gs://")):
        return {"fileData": {"mimeType": guess_mime(url), "fileUri": url}}
    raise refuse("image_url must be an http(s) URL or a base64 data URL.")


def _user_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if not isinstance(content, list):
        raise refuse("A user message's content must be a string or an array of parts.")
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if part.get("text"):
                parts.append({"text": part["text"]})
        elif kind == "image_url":
            parts.append(_media(image_url_of(part)))
        elif kind == "input_audio":
            audio = part.get("input_audio") or {}
            mime = _AUDIO.get(audio.get("format") or "")
            if mime is None or not isinstance(audio.get("data"), str):
                raise refuse("input_audio needs base64 'data' and a 'format' of wav or mp3.")
            parts.append({"inlineData": {"mimeType": mime, "data": audio["data"]}})
        elif kind == "file":
            mime, data = file_data_of(part)
            parts.append({"inlineData": {"mimeType": mime, "data": data}})
        else:
            raise refuse(f"Content part type '{kind}' is not supported for Gemini models.")
    return parts


def _model_parts(m: dict[str, Any], model: str, names: dict[str, str]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    content = m.get("content")
    if isinstance(content, list):
        text = "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    else:
        text = content or ""
    if text:
        parts.append({"text": text})
    first = True
    for call in m.get("tool_calls") or []:
        fn = call.get("function") or {}
        name = fn.get("name") or ""
        cid = call.get("id") or ""
        names[cid] = name
        part: dict[str, Any] = {"functionCall": {"name": name, "args": tool_arguments(fn.get("arguments"), name)}}
        signature = split_call_id(cid)[1]
        if signature is None and first and model.startswith("gemini-3"):
            signature = DUMMY_SIGNATURE  # Gemini signs only the first call of a parallel batch
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
        first = False
    return parts


def _response_part(m: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    cid = m.get("tool_call_id")
    if not cid:
        raise refuse("A tool message needs a 'tool_call_id'.")
    name = names.get(cid)
    if name is None:
        raise refuse(f"Tool message answers unknown tool_call_id '{cid}' (Gemini needs the function name).")
    text = text_of(m.get("content"), "tool messages")
    try:
        value = orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        value = None
    response = value if isinstance(value, dict) else {"content": text}
    return {"functionResponse": {"name": name, "response": response}}


def _contents(messages: list[dict[str, Any]], model: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool_call_id → function name

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for m in messages:
        role = m["role"]
        if role in ("system", "developer"):
            text = text_of(m.get("content"), "system messages")
            if text:
                system.append({"text": text})
        elif role == "user":
            add("user", _user_parts(m.get("content")))
        elif role == "assistant":
            add("model", _model_parts(m, model, names))
        elif role == "tool":
            add("user", [_response_part(m, names)])
        else:
            raise refuse(f"Message role '{role}' is not supported for Gemini models.")
    if not contents:
        raise refuse("At least one user or assistant message with content is required.")
    return system, contents


def _tool_config(body: dict[str, Any]) -> dict[str, Any] | None:
    choice = body.get("tool_choice")
    if choice is None:
        return None
    if choice in ("auto", "none", "required"):
        mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}[choice]
        return {"functionCallingConfig": {"mode": mode}}
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    raise refuse(f"Unsupported tool_choice {choice!r} for Gemini models.", "tool_choice")


def _thinking(model: str, effort: str) -> dict[str, Any]:
    """reasoning_effort → thinkingConfig. With thinking on, `includeThoughts` asks for the thought
    summaries, which come back as `reasoning_content` (what LiteLLM's users get)."""
    if model.startswith("gemini-3"):
        level = {"none": "minimal", "xhigh": "high", "max": "high"}.get(effort, effort)
        return {"thinkingLevel": level, "includeThoughts": True}
    if effort == "none":
        return {"thinkingBudget": 0}
    return {"thinkingBudget": THINKING_BUDGET[effort], "includeThoughts": True}


def translate_request(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An OpenAI Chat body → (the generateContent path, the Gemini body)."""
    model = require_model(body)
    messages = require_messages(body)
    check_params(body, _HANDLED, "Gemini")
    system, contents = _contents(messages, model)
    out: dict[str, Any] = {"contents": contents}
    if system:
        out["systemInstruction"] = {"parts": system}
    tools = function_tools(body)
    if tools:
        decls = []
        for fn in tools:
            decl: dict[str, Any] = {"name": fn["name"]}
            if fn.get("description"):
                decl["description"] = fn["description"]
            if fn.get("parameters"):
                decl["parametersJsonSchema"] = fn["parameters"]
            decls.append(decl)
        out["tools"] = [{"functionDeclarations": decls}]
    config = _tool_config(body)
    if config is not None:
        out["toolConfig"] = config
    gen: dict[str, Any] = {}
    max_tokens = max_tokens_of(body)
    if max_tokens is not None:
        gen["maxOutputTokens"] = max_tokens
    for src, dst in (("temperature", "temperature"), ("top_p", "topP"), ("top_k", "topK"), ("seed", "seed"),
                     ("frequency_penalty", "frequencyPenalty"), ("presence_penalty", "presencePenalty")):
        if body.get(src) is not None:
            gen[dst] = body[src]
    stops = stop_list(body)
    if stops:
        gen["stopSequences"] = stops
    kind, schema = json_schema_of(body)
    if kind != "text":
        gen["responseMimeType"] = "application/json"
        if schema is not None:
            gen["responseJsonSchema"] = schema
    effort = body.get("reasoning_effort")
    if effort is not None:
        if effort != "none" and effort not in THINKING_BUDGET:
            raise refuse(f"Unsupported reasoning_effort {effort!r}.", "reasoning_effort")
        gen["thinkingConfig"] = _thinking(model, effort)
    if gen:
        out["generationConfig"] = gen
    return path_for(model, body.get("stream") is True), out
