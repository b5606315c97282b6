"""Bedrock `cachePoint` blocks, placed by the same rule as Anthropic's `cache_control` breakpoints.

Converse caches like Claude does (prefix order tools → system → messages, at most 4 checkpoints, a minimum per
checkpoint, 5m refreshed by each hit or 1h), but marks a checkpoint with a `cachePoint` block *after* the content
it ends instead of a field on that content. So the Converse body is viewed as an Anthropic body, one view block per
Converse block (a client's `cachePoint` becomes a `cache_control` on the block before it), Anthropic's placement
(`anthropic.place`: candidates, lookback bridge, break-even per TTL, TTL order, slots left by the client's own
markers) decides on the view, and each marker it adds becomes a `cachePoint` inserted after the block it marks.

Models: Claude models take Anthropic's per-model minimum (Bedrock's table lists 1,024 for Claude 3.7 Sonnet and
2,048 for Claude 3.5 Haiku, the same figures); Amazon Nova caches from 1,000 tokens and takes no checkpoint in
`tools`; other models on Bedrock do not cache and get nothing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gateway.provider_cache.plugins import AnthropicCache
from gateway.provider_cache.tables import min_tokens
from gateway.rewrite.anthropic import layout as anthropic_layout

if TYPE_CHECKING:
    from gateway.context import RequestContext
    from gateway.rewrite.layout import Layout

NOVA_MIN = 1000
_PROFILE = re.compile(r"^(?:us|eu|apac|global|jp|au|ca|us-gov)\.")
_VERSION = re.compile(r"-v\d+(?::\d+)?$")
Where = tuple[str, int, int]


def base_model(model_id: str) -> str:
    """`us.anthropic.claude-3-7-sonnet-20250219-v1:0` → `anthropic.claude-3-7-sonnet-20250219-v1:0`."""
    return _PROFILE.sub("", model_id.removeprefix("bedrock/"))


def caches(model_id: str) -> bool:
    return base_model(model_id).startswith(("anthropic.claude-", "amazon.nova-"))


def minimum(model_id: str) -> int:
    model = base_model(model_id)
    if model.startswith("amazon.nova-"):
        return NOVA_MIN
    return min_tokens("anthropic", _VERSION.sub("", model.removeprefix("anthropic.")))


def _marker(point: Any) -> dict[str, str]:
    ttl = point.get("ttl") if isinstance(point, dict) else None
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def _view_block(block: Any) -> dict[str, Any]:
    if not isinstance(block, dict):
        return {"type": "other", "value": block}
    if isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if "toolUse" in block:
        use = block["toolUse"] if isinstance(block["toolUse"], dict) else {}
        return {"type": "tool_use", "id": use.get("toolUseId"), "name": use.get("name"), "input": use.get("input")}
    if "toolResult" in block:
        result = block["toolResult"] if isinstance(block["toolResult"], dict) else {}
        raw_parts = result.get("content")
        parts: list[Any] = raw_parts if isinstance(raw_parts, list) else []
        return {"type": "tool_result", "tool_use_id": result.get("toolUseId"),
                "content": [{"type": "text", "text": str(p.get("text") or p.get("json") or "")}
                            for p in parts if isinstance(p, dict)]}
    if "image" in block:
        return {"type": "image"}
    if "document" in block:
        return {"type": "document"}
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"] if isinstance(block["reasoningContent"], dict) else {}
        return {"type": "thinking", "thinking": str((reasoning.get("reasoningText") or {}).get("text") or "")}
    return {"type": "other", "value": block}


def _view_list(blocks: Any, part: str, msg: int, index: list[Where]) -> list[dict[str, Any]]:
    """View blocks of one Converse list; `index` gets, per view block, where its Converse block sits."""
    out: list[dict[str, Any]] = []
    for j, block in enumerate(blocks if isinstance(blocks, list) else []):
        if isinstance(block, dict) and "cachePoint" in block:
            if out:
                out[-1]["cache_control"] = _marker(block["cachePoint"])
            continue
        out.append(_view_block(block))
        index.append((part, msg, j))
    return out


def view(body: dict[str, Any]) -> tuple[dict[str, Any], list[Where], list[Where], list[list[Where]]]:
    """The Anthropic-shaped view of a Converse body, and where each view block sits in the body:
    (view, tools, system, messages) with `messages[i][k]` for view block k of message i."""
    raw_config = body.get("toolConfig")
    config: dict[str, Any] = raw_config if isinstance(raw_config, dict) else {}
    raw_tools = config.get("tools")
    tools_at: list[Where] = []
    tools: list[dict[str, Any]] = []
    for j, tool in enumerate(raw_tools if isinstance(raw_tools, list) else []):
        if isinstance(tool, dict) and "cachePoint" in tool:
            if tools:
                tools[-1]["cache_control"] = _marker(tool["cachePoint"])
            continue
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        tools.append(dict(spec) if isinstance(spec, dict) else {"name": "", "value": tool})
        tools_at.append(("tools", -1, j))
    system_at: list[Where] = []
    system = _view_list(body.get("system"), "system", -1, system_at)
    messages: list[dict[str, Any]] = []
    messages_at: list[list[Where]] = []
    raw_messages = body.get("messages")
    for i, m in enumerate(raw_messages if isinstance(raw_messages, list) else []):
        at: list[Where] = []
        content = m.get("content") if isinstance(m, dict) else None
        messages.append({"role": m.get("role") if isinstance(m, dict) else "user",
                         "content": _view_list(content, "messages", i, at)})
        messages_at.append(at)
    out: dict[str, Any] = {"messages": messages}
    if tools:
        out["tools"] = tools
    if system:
        out["system"] = system
    return out, tools_at, system_at, messages_at


def _point(ttl: str | None) -> dict[str, Any]:
    return {"cachePoint": {"type": "default", **({"ttl": "1h"} if ttl == "1h" else {})}}


def _added(before: list[Any], after: list[Any], at: list[Where]) -> list[tuple[Where, str | None]]:
    out: list[tuple[Where, str | None]] = []
    for k, (old, new) in enumerate(zip(before, after, strict=False)):
        if isinstance(new, dict) and new.get("cache_control") and not (isinstance(old, dict)
                                                                      and old.get("cache_control")):
            out.append((at[k], new["cache_control"].get("ttl")))
    return out


def apply(body: dict[str, Any], original_view: dict[str, Any], placed_view: dict[str, Any], tools_at: list[Where],
          system_at: list[Where], messages_at: list[list[Where]]) -> tuple[dict[str, Any], int]:
    """A copy of the Converse `body` with a `cachePoint` after each block the placement marked in the view;
    returns the body (the same object when nothing was added) and the number of points added."""
    adds = _added(original_view.get("tools") or [], placed_view.get("tools") or [], tools_at)
    adds += _added(original_view.get("system") or [], placed_view.get("system") or [], system_at)
    for i, at in enumerate(messages_at):
        adds += _added(original_view["messages"][i]["content"], placed_view["messages"][i]["content"], at)
    if not adds:
        return body, 0
    out = dict(body)
    by_list: dict[tuple[str, int], list[tuple[int, str | None]]] = {}
    for (part, msg, j), ttl in adds:
        by_list.setdefault((part, msg), []).append((j, ttl))
    for (part, msg), points in by_list.items():
        if part == "tools":
            config = dict(out["toolConfig"])
            config["tools"] = _insert(config["tools"], points)
            out["toolConfig"] = config
        elif part == "system":
            out["system"] = _insert(out["system"], points)
        else:
            messages = list(out["messages"])
            messages[msg] = {**messages[msg], "content": _insert(messages[msg]["content"], points)}
            out["messages"] = messages
    return out, len(adds)


def _insert(blocks: list[Any], points: list[tuple[int, str | None]]) -> list[Any]:
    out = list(blocks)
    for j, ttl in sorted(points, reverse=True):  # from the end, so earlier indices stay valid
        out.insert(j + 1, _point(ttl))
    return out


def without_tool_points(placed_view: dict[str, Any], original_view: dict[str, Any]) -> dict[str, Any]:
    """Nova takes no checkpoint in tools: the placement's tool markers are dropped (the client's stay)."""
    tools = placed_view.get("tools")
    if not tools:
        return placed_view
    kept = [t if (original_view["tools"][k].get("cache_control")) else {x: v for x, v in t.items()
                                                                          if x != "cache_control"}
            for k, t in enumerate(tools)]
    return {**placed_view, "tools": kept}


class BedrockCache(AnthropicCache):
    """The provider-cache plug-in of Bedrock's spec: Anthropic's placement on the Converse body's view, the
    policy's `provider_cache.bedrock` (else `provider_cache.anthropic`)."""

    protocols = frozenset({"bedrock_converse"})
    provider = "bedrock"

    def policy(self, ctx: RequestContext) -> Any:
        pc = ctx.policy.provider_cache  # type: ignore[union-attr]
        return pc.bedrock or pc.anthropic

    def enabled(self, ctx: RequestContext) -> bool:
        return super().enabled(ctx) and caches(ctx.model)

    def minimum(self, model: str) -> int:
        return minimum(model)

    def layout(self, body: dict[str, Any]) -> Layout:
        return anthropic_layout(view(body)[0])

    def view(self, body: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        v, *where = view(body)
        return v, where

    def apply(self, ctx: RequestContext, original: dict[str, Any], v: dict[str, Any], placed: dict[str, Any],
              where: Any) -> dict[str, Any]:
        if base_model(ctx.model).startswith("amazon.nova-"):
            placed = without_tool_points(placed, v)
        return apply(original, v, placed, *where)[0]


BEDROCK_CACHE = BedrockCache()
