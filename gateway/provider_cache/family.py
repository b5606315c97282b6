"""A request's prefix family: the template it was built from, whether or not the rewrite ran.

Break-even statistics and per-template usage rows need one identity for every request built from the
same template. The client's `x-gateway-template` is that identity when it is sent. Otherwise the
family is a hash of the template parts of the body (tool definitions, the structured-output schema,
system/developer instructions) with every volatile value (dates, times, ids, as the rewrite layer
detects them) masked: two requests whose system prompts differ only in their timestamp are one
family, with the rewrite on or off, and a response-cache hit lands in the same family as the misses
of the same prompt.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

import orjson
import xxhash

from gateway.rewrite.detect import VolatileDetector, detector_for
from gateway.rewrite.move import CONTEXT_OPEN

if TYPE_CHECKING:
    from gateway.context import RequestContext

_MASK = "\u2400"  # one symbol for every masked value (the values' lengths are volatile too)
_PLACEHOLDER = re.compile(r"\[\[gw:\d+\]\]")  # where the rewrite moved a value out: masked alike
_SYSTEM_ROLES = frozenset({"system", "developer"})


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, dict):
        return ""
    fn = tool.get("function")
    return str((fn.get("name") if isinstance(fn, dict) else None) or tool.get("name") or "")


def sorted_tools(tools: Any) -> Any:
    """Tools in name order (Gemini: the declarations inside each entry): the order is not the template."""
    if not isinstance(tools, list):
        return tools
    out = []
    for tool in tools:
        if isinstance(tool, dict) and isinstance(tool.get("functionDeclarations"), list):
            tool = {**tool, "functionDeclarations": sorted(tool["functionDeclarations"], key=_tool_name)}
        out.append(tool)
    return sorted(out, key=_tool_name)


def _leading_system(turns: Any) -> list[Any]:
    out: list[Any] = []
    for turn in turns if isinstance(turns, list) else []:
        if not isinstance(turn, dict) or turn.get("role") not in _SYSTEM_ROLES:
            break
        content = turn.get("content")
        if isinstance(content, str) and content.startswith(CONTEXT_OPEN):
            continue  # the rewrite's context block: the moved values, not the template
        out.append(content)
    return out


def template_parts(protocol: str, body: dict[str, Any]) -> list[str]:
    """The template parts of a native body, serialized, in the vendor's cache order."""
    if protocol == "openai_chat":
        parts = [sorted_tools(body.get("tools")), body.get("response_format"), _leading_system(body.get("messages"))]
    elif protocol == "openai_responses":
        text: dict[str, Any] = body["text"] if isinstance(body.get("text"), dict) else {}
        parts = [sorted_tools(body.get("tools")), text.get("format"), body.get("instructions"),
                 _leading_system(body.get("input"))]
    elif protocol == "anthropic_messages":
        parts = [sorted_tools(body.get("tools")), body.get("system")]
    elif protocol == "bedrock_converse":
        config = body["toolConfig"] if isinstance(body.get("toolConfig"), dict) else {}
        tools = [t for t in config.get("tools") or [] if not (isinstance(t, dict) and "cachePoint" in t)]
        system = [b for b in body.get("system") or [] if not (isinstance(b, dict) and "cachePoint" in b)]
        parts = [sorted(tools, key=lambda t: str((t.get("toolSpec") or {}).get("name") or "")
                        if isinstance(t, dict) else ""), system]
    elif protocol == "gemini":
        parts = [body.get("systemInstruction"), sorted_tools(body.get("tools")), body.get("toolConfig"),
                 body.get("cachedContent")]
    else:
        return []
    return [_dump(p) for p in parts if p]


def mask(text: str, detector: VolatileDetector) -> str:
    if "[[gw:" in text:
        text = _PLACEHOLDER.sub(_MASK, text)
    spans = detector.spans(text)
    if not spans:
        return text
    out: list[str] = []
    at = 0
    for s in spans:
        out.append(text[at:s.start])
        out.append(_MASK)
        at = s.end
    out.append(text[at:])
    return "".join(out)


_FAMILIES_MAX = 4096  # families remembered (~150 bytes each): the templates of recent requests
_families: dict[tuple[VolatileDetector, bytes], str] = {}


def family_id(protocol: str, body: dict[str, Any], detector: VolatileDetector) -> str | None:
    """16 hex digits naming the body's template with volatile values masked; None without one (no
    tools, no schema, no instructions: nothing that a cache could share across conversations).

    Remembered by the parts' own 128-bit hash: masking a 30k-character system prompt walks all of its
    sentences (~0.15 ms even when every one of them is in the detector's cache), and an agent sends
    the same instructions with every request. Only hashes are kept, never text."""
    parts = template_parts(protocol, body)
    if not parts:
        return None
    raw = [p.encode("utf-8", "surrogatepass") for p in parts]
    key_hash = xxhash.xxh3_128()
    for b in raw:  # each part's length first: where one part ends is part of the key
        key_hash.update(len(b).to_bytes(8, "little"))
        key_hash.update(b)
    key = (detector, key_hash.digest())
    found = _families.get(key)
    if found is None:
        digest = hashlib.blake2b(digest_size=8)
        for p in parts:
            digest.update(mask(p, detector).encode("utf-8", "surrogatepass"))
            digest.update(b"\x1e")
        found = digest.hexdigest()
        if len(_families) >= _FAMILIES_MAX:  # FIFO: a template's requests come straight back
            del _families[next(iter(_families))]
        _families[key] = found
    return found


def ensure_family(ctx: RequestContext) -> str | None:
    """The request's family, computed once: `t:<id>@<version>` for an `x-gateway-template`, else
    the masked-prefix hash of what goes upstream (None without template parts)."""
    if ctx.prefix_family is not None:
        return ctx.prefix_family or None
    family: str | None = None
    if ctx.template_id:
        family = f"t:{ctx.template_id}@{ctx.template_version or ''}"
    elif ctx.upstream_adapter is not None and ctx.upstream_body:
        patterns = tuple(ctx.policy.prompt_rewrite.volatile_patterns) if ctx.policy is not None else ()
        family = family_id(ctx.upstream_adapter.name, ctx.upstream_body, detector_for(patterns))
    ctx.prefix_family = family or ""
    return family


def template_name(ctx: RequestContext) -> str | None:
    """`prompt_template_id` of a request without `x-gateway-template`: `prefix:<family>`."""
    family = ensure_family(ctx)
    return f"prefix:{family}" if family and not family.startswith("t:") else None
