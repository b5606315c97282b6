"""Request bodies of each protocol with volatile values in their stable part, for the rewrite tests."""

from __future__ import annotations

from typing import Any

import orjson

SYSTEM = ("You are the support assistant of Acme. Current time: {ts}. Request id: {rid}.\n"
          "Answer politely and cite the policy section. 今天是{cn}。")
TOOL_DESC = "Look up an order. Data as of {ts}."
STAMPS = [("2026-11-05T10:23:45Z", "rq-8f3k2m1x", "2026年11月5日"),
          ("2026-11-06T08:00:01Z", "rq-77aa21bq", "2026年11月6日")]
QUESTION = "What is the refund window for order 2026-11-01? Trace 3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"


def values(i: int) -> dict[str, str]:
    ts, rid, cn = STAMPS[i]
    return {"ts": ts, "rid": rid, "cn": cn}


def chat(i: int, turns: int = 2) -> dict[str, Any]:
    v = values(i)
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM.format(**v)}]
    for t in range(turns - 1):
        messages += [{"role": "user", "content": f"question {t} at 2026-01-0{t + 1}"},
                     {"role": "assistant", "content": f"answer {t} mentions 2026-02-0{t + 1}"}]
    messages.append({"role": "user", "content": QUESTION})
    tools = [
        {"type": "function", "function": {"name": "zeta_lookup", "description": TOOL_DESC.format(**v),
                                          "parameters": {"type": "object", "required": ["id"],
                                                         "properties": {"id": {"type": "string"}}}}},
        {"function": {"parameters": {"properties": {"q": {"type": "string"}}, "type": "object"},
                      "name": "alpha_search", "description": "Search the help center."}, "type": "function"},
    ]
    return {"model": "gpt-4o", "messages": messages, "tools": tools}


def anthropic(i: int, turns: int = 2) -> dict[str, Any]:
    v = values(i)
    messages: list[dict[str, Any]] = []
    for t in range(turns - 1):
        messages += [{"role": "user", "content": f"question {t} at 2026-01-0{t + 1}"},
                     {"role": "assistant", "content": [{"type": "text", "text": f"answer {t} on 2026-02-0{t + 1}"}]}]
    messages.append({"role": "user", "content": QUESTION})
    tools = [{"name": "zeta_lookup", "description": TOOL_DESC.format(**v),
              "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}},
             {"input_schema": {"properties": {"q": {"type": "string"}}, "type": "object"}, "name": "alpha_search",
              "description": "Search the help center."}]
    return {"model": "claude-sonnet-4-5", "max_tokens": 256, "system": SYSTEM.format(**v), "tools": tools,
            "messages": messages}


def gemini(i: int, turns: int = 2) -> dict[str, Any]:
    v = values(i)
    contents: list[dict[str, Any]] = []
    for t in range(turns - 1):
        contents += [{"role": "user", "parts": [{"text": f"question {t} at 2026-01-0{t + 1}"}]},
                     {"role": "model", "parts": [{"text": f"answer {t} on 2026-02-0{t + 1}"}]}]
    contents.append({"role": "user", "parts": [{"text": QUESTION}]})
    tools = [{"functionDeclarations": [
        {"name": "zeta_lookup", "description": TOOL_DESC.format(**v),
         "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}},
        {"parameters": {"properties": {"q": {"type": "string"}}, "type": "object"}, "name": "alpha_search",
         "description": "Search the help center."}]}]
    return {"systemInstruction": {"parts": [{"text": SYSTEM.format(**v)}]}, "tools": tools, "contents": contents}


def responses(i: int, turns: int = 2) -> dict[str, Any]:
    v = values(i)
    items: list[dict[str, Any]] = []
    for t in range(turns - 1):
        items += [{"role": "user", "content": f"question {t} at 2026-01-0{t + 1}"},
                  {"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": f"answer {t} on 2026-02-0{t + 1}"}]}]
    items.append({"role": "user", "content": QUESTION})
    tools = [{"type": "function", "name": "zeta_lookup", "description": TOOL_DESC.format(**v),
              "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}},
             {"parameters": {"properties": {"q": {"type": "string"}}, "type": "object"}, "name": "alpha_search",
              "type": "function", "description": "Search the help center."}]
    return {"model": "gpt-4o", "instructions": SYSTEM.format(**v), "input": items, "tools": tools}


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)
