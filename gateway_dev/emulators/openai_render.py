"""Renders an OpenAI Chat Completions or Responses request into the token sequence the prompt cache sees.

Order: tool definitions, then the structured-output schema ("serves as a prefix to the system message"),
then the messages/items in order, then the assistant generation prompt (the exact server ordering is
undocumented). Cache-only fields (`prompt_cache_*`, `prompt_cache_breakpoint`) never enter the rendering, so
they cannot change the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway_dev.emulators.answers import ToolSpec
from gateway_dev.emulators.openai_cache import Breakpoint
from gateway_dev.emulators.tokens import encode, synthetic_tokens
from gateway_dev.emulators.web import EmulatorError

CHAT_BREAKPOINT_PARTS = {"text", "image_url", "input_audio", "file", "refusal"}
RESPONSES_BREAKPOINT_PARTS = {"input_text", "input_image", "input_file"}


def canon(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS).decode()


@dataclass
class Prompt:
    tokens: list[int] = field(default_factory=list)
    breakpoints: list[Breakpoint] = field(default_factory=list)
    message_ends: list[int] = field(default_factory=list)
    segments: list[str] = field(default_factory=list)
    question: str = ""
    tool_result: str | None = None
    tools: list[ToolSpec] = field(default_factory=list)

    @property
    def key(self) -> str:
        return "\x1e".join(self.segments)

    def text(self, s: str) -> None:
        if s:
            self.tokens.extend(encode(s))
            self.segments.append(s)

    def synthetic(self, kind: str, content: str, n: int) -> None:
        self.tokens.extend(synthetic_tokens(content, n))
        self.segments.append(f"[{kind}:{content[:64]}:{len(content)}]")

    def mark(self, part: dict[str, Any], allowed: set[str], where: str) -> None:
        bp = part.get("prompt_cache_breakpoint")
        if bp is None:
            return
        if part.get("type") not in allowed or not isinstance(bp, dict) or bp.get("mode") != "explicit":
            raise EmulatorError("openai", 400, f"Invalid 'prompt_cache_breakpoint' on {where}: only "
                                f"{', '.join(sorted(allowed))} content parts can be marked with mode 'explicit'.",
                                param=where, code="invalid_value")
        self.breakpoints.append(Breakpoint(len(self.tokens), bp.get("ttl") or "30m"))


def _image(p: Prompt, url: str, detail: str | None) -> None:
    p.synthetic("image", f"{url}|{detail or 'auto'}", 85 if detail == "low" else 765)


def render_chat(body: dict[str, Any]) -> Prompt:
    p = Prompt()
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict):
            raise EmulatorError("openai", 400, f"Invalid type for 'tools[{i}]': expected an object.",
                                param=f"tools[{i}]")
        fn = tool.get("function") or {}
        if tool.get("type", "function") == "function":
            if not fn.get("name"):
                raise EmulatorError("openai", 400, f"Missing required parameter: 'tools[{i}].function.name'.",
                                    param=f"tools[{i}].function.name", code="missing_required_parameter")
            p.tools.append(ToolSpec(fn["name"], fn.get("description", ""), fn.get("parameters") or {}))
        p.text("<|tool|>" + canon(tool))
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        p.text("<|schema|>" + canon(fmt.get("json_schema") or {}))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise EmulatorError("openai", 400, "[] is too short - 'messages'" if messages == [] else
                            "Missing required parameter: 'messages'.", param="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("system", "developer", "user", "assistant", "tool",
                                                             "function"):
            raise EmulatorError("openai", 400, f"Invalid value for 'messages[{i}].role'.", param=f"messages[{i}].role",
                                code="invalid_value")
        role = m["role"]
        p.text(f"<|im_start|>{role}" + (f" name={m['name']}" if m.get("name") else "") + "\n")
        if role == "tool":
            p.text(f"[tool_call_id={m.get('tool_call_id', '')}]")
        content = m.get("content")
        texts: list[str] = []
        if isinstance(content, str):
            p.text(content)
            texts.append(content)
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if not isinstance(part, dict):
                    raise EmulatorError("openai", 400, f"Invalid type for 'messages[{i}].content[{j}]'.",
                                        param=f"messages[{i}].content[{j}]")
                kind = part.get("type")
                if kind in ("text", "refusal"):
                    t = part.get("text") if kind == "text" else part.get("refusal")
                    p.text(t or "")
                    texts.append(t or "")
                elif kind == "image_url":
                    img = part.get("image_url") or {}
                    _image(p, img.get("url", ""), img.get("detail"))
                elif kind == "input_audio":
                    p.synthetic("audio", (part.get("input_audio") or {}).get("data", ""), 100)
                elif kind == "file":
                    f = part.get("file") or {}
                    p.synthetic("file", f.get("file_id") or f.get("file_data") or "", 200)
                else:
                    raise EmulatorError("openai", 400, f"Invalid value: '{kind}'. Supported values are: 'text', "
                                        "'image_url', 'input_audio', 'refusal', and 'file'.",
                                        param=f"messages[{i}].content[{j}].type", code="invalid_value")
                p.mark(part, CHAT_BREAKPOINT_PARTS, f"messages[{i}].content[{j}]")
        if m.get("tool_calls"):
            p.text(canon(m["tool_calls"]))
        p.text("<|im_end|>\n")
        p.message_ends.append(len(p.tokens))
        if role == "user":
            p.question, p.tool_result = " ".join(texts), None
        elif role in ("tool", "function"):
            p.tool_result = " ".join(texts)
    p.text("<|im_start|>assistant\n")
    return p


def render_responses(body: dict[str, Any]) -> Prompt:
    p = Prompt()
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "function" and tool.get("name"):
            p.tools.append(ToolSpec(tool["name"], tool.get("description") or "", tool.get("parameters") or {}))
        p.text("<|tool|>" + canon(tool))
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        p.text("<|schema|>" + canon(fmt.get("schema") or {}))
    if body.get("instructions"):
        p.text("<|im_start|>developer\n")
        p.text(str(body["instructions"]))
        p.text("<|im_end|>\n")
        p.message_ends.append(len(p.tokens))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise EmulatorError("openai", 400, "Missing required parameter: 'input'.", param="input",
                            code="missing_required_parameter")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise EmulatorError("openai", 400, f"Invalid type for 'input[{i}]'.", param=f"input[{i}]")
        kind = item.get("type", "message")
        if kind == "function_call":
            p.text("<|im_start|>assistant\n" + canon({k: item.get(k) for k in ("name", "arguments", "call_id")}))
        elif kind == "function_call_output":
            out = item.get("output")
            out = out if isinstance(out, str) else canon(out)
            p.text(f"<|im_start|>tool\n[call_id={item.get('call_id', '')}]")
            p.text(out)
            p.tool_result = out
        elif kind == "message":
            role = item.get("role", "user")
            p.text(f"<|im_start|>{role}\n")
            content = item.get("content")
            texts: list[str] = []
            if isinstance(content, str):
                p.text(content)
                texts.append(content)
            for j, part in enumerate(content if isinstance(content, list) else []):
                ptype = part.get("type")
                if ptype in ("input_text", "output_text", "text"):
                    p.text(part.get("text") or "")
                    texts.append(part.get("text") or "")
                elif ptype == "input_image":
                    _image(p, part.get("image_url") or part.get("file_id") or "", part.get("detail"))
                elif ptype == "input_file":
                    p.synthetic("file", part.get("file_id") or part.get("file_data") or part.get("file_url") or "",
                                200)
                p.mark(part, RESPONSES_BREAKPOINT_PARTS, f"input[{i}].content[{j}]")
            if role == "user":
                p.question, p.tool_result = " ".join(texts), None
        else:
            p.text(canon(item))  # reasoning items and others: part of the prefix, no answer effect
        p.text("<|im_end|>\n")
        p.message_ends.append(len(p.tokens))
    p.text("<|im_start|>assistant\n")
    return p
