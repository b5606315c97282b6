"""The vendors' own prompt-cache diagnostics: compare a request with an earlier response and name the first
place where the prompt prefix diverged.

Anthropic (Messages, `diagnostics: {"previous_message_id": "msg_…" | null}`): every request that carries the
`diagnostics` object stores a fingerprint under its response id (scoped to the API key); a later request
naming that id gets `diagnostics.cache_miss_reason` in its response: `model_changed`, `tools_changed`,
`system_changed`, `messages_changed` (an earlier message differs, not only appended ones; each with
`cache_missed_input_tokens`), `previous_message_not_found`, or `unavailable` (model, system and tools match
but another prompt-affecting parameter, such as `thinking` or `tool_choice`, differs). No divergence:
`diagnostics: null`.

OpenAI (Responses, GPT-5.6 and later, `prompt_cache_options.comparison_response_id`): every response's
fingerprint is kept; the response gets `prompt_cache_diagnostics`: `{"type": "cache_miss", "reason": …,
"cache_missed_tokens", "comparison_reusable_tokens"}` with reasons `model_changed`,
`prompt_cache_key_changed`, `tools_changed`, `text_format_changed`, `reasoning_effort_changed`,
`verbosity_changed`, `service_tier_changed`, `input_changed`; `{"type": "cache_hit"}` when the prefix
matched and was read; `{"type": "comparison_response_not_found"}`; `{"type": "unavailable"}` otherwise.

Fingerprints hold hashes and token counts only, never prompt text; the newest 4,096 per vendor are kept.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

KEEP = 4096


def _h(obj: Any) -> str:
    return hashlib.blake2b(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS), digest_size=12).hexdigest()


@dataclass(frozen=True, slots=True)
class Fingerprint:
    owner: str  # API key
    fields: tuple[tuple[str, str], ...]  # (name, hash) of each compared setting, in divergence order
    messages: tuple[str, ...]  # chained hash after each message / input item
    tokens_before: tuple[int, ...]  # prompt tokens before each message (len(messages) + 1 entries)

    @property
    def total(self) -> int:
        return self.tokens_before[-1]


def chain(items: list[Any]) -> tuple[str, ...]:
    out: list[str] = []
    h = ""
    for item in items:
        h = _h([h, item])
        out.append(h)
    return tuple(out)


class _Store:
    def __init__(self) -> None:
        self._prints: OrderedDict[str, Fingerprint] = OrderedDict()

    def put(self, response_id: str, fp: Fingerprint) -> None:
        self._prints[response_id] = fp
        while len(self._prints) > KEEP:
            self._prints.popitem(last=False)

    def get(self, response_id: Any, owner: str) -> Fingerprint | None:
        fp = self._prints.get(response_id) if isinstance(response_id, str) else None
        return fp if fp is not None and fp.owner == owner else None

    def clear(self) -> None:
        self._prints.clear()


def _first_divergence(old: Fingerprint, new: Fingerprint) -> int | None:
    """Index of the first of `old`'s messages that `new` does not repeat (None: `new` extends `old`)."""
    for i, h in enumerate(old.messages):
        if i >= len(new.messages) or new.messages[i] != h:
            return i
    return None


class AnthropicDiagnostics(_Store):
    FIELDS = ("model", "tools", "system")  # the prefix order: a model, then tools -> system -> messages

    @staticmethod
    def fingerprint(owner: str, body: dict[str, Any], block_tokens: list[tuple[str, int]]) -> Fingerprint:
        """`block_tokens`: (part, tokens) of each flattened block in cache order; part is "tools", "system"
        or "messages.<i>"."""
        strip = _without_cache_control
        fields = (("model", _h([body.get("model"), body.get("speed")])),
                  ("tools", _h(strip(body.get("tools") or []))),
                  ("system", _h(strip(body.get("system") or ""))))
        messages = [strip(m) for m in body.get("messages") or []]
        before = [sum(n for part, n in block_tokens if not part.startswith("messages."))]
        for i in range(len(messages)):
            before.append(before[-1] + sum(n for part, n in block_tokens if part == f"messages.{i}"))
        # tool_choice and thinking change the messages part only; they are compared after it
        extra = _h([body.get("tool_choice"), body.get("thinking")])
        return Fingerprint(owner, (*fields, ("other", extra)), chain(messages), tuple(before))

    def diagnose(self, request: Any, owner: str, new: Fingerprint) -> dict[str, Any] | None:
        """The response's `diagnostics` object (None: the request sent none or nothing diverged)."""
        if not isinstance(request, dict) or "previous_message_id" not in request:
            return None
        previous_id = request.get("previous_message_id")
        if previous_id is None:
            return None
        old = self.get(previous_id, owner)
        if old is None:
            return {"cache_miss_reason": {"type": "previous_message_not_found"}}
        old_fields, new_fields = dict(old.fields), dict(new.fields)
        for name in self.FIELDS:
            if old_fields[name] != new_fields[name]:
                return {"cache_miss_reason": {"type": f"{name}_changed", "cache_missed_input_tokens": old.total}}
        at = _first_divergence(old, new)
        if at is not None:
            lost = old.total - old.tokens_before[at]
            return {"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": lost}}
        if old_fields["other"] != new_fields["other"]:
            return {"cache_miss_reason": {"type": "unavailable"}}
        return None


class OpenAIDiagnostics(_Store):
    FIELDS = ("model", "prompt_cache_key", "tools", "text_format", "reasoning_effort", "verbosity", "service_tier")

    @staticmethod
    def fingerprint(owner: str, body: dict[str, Any], items: list[Any], message_ends: list[int]) -> Fingerprint:
        text: dict[str, Any] = body["text"] if isinstance(body.get("text"), dict) else {}
        reasoning: dict[str, Any] = body["reasoning"] if isinstance(body.get("reasoning"), dict) else {}
        values = {"model": body.get("model"), "prompt_cache_key": body.get("prompt_cache_key"),
                  "tools": body.get("tools") or [], "text_format": text.get("format"),
                  "reasoning_effort": reasoning.get("effort"), "verbosity": text.get("verbosity"),
                  "service_tier": body.get("service_tier")}
        entries = ([{"instructions": body["instructions"]}] if body.get("instructions") else []) + [
            _without_breakpoints(i) for i in items]
        ends = list(message_ends)[-len(entries):] if entries else []
        ends += [ends[-1] if ends else 0] * (len(entries) - len(ends))
        before = (0, *ends) if entries else (0,)
        return Fingerprint(owner, tuple((k, _h(values[k])) for k in OpenAIDiagnostics.FIELDS), chain(entries),
                           tuple(before))

    def diagnose(self, comparison_id: Any, owner: str, new: Fingerprint, cached_tokens: int) -> dict[str, Any]:
        old = self.get(comparison_id, owner)
        if old is None:
            return {"type": "comparison_response_not_found"}
        old_fields, new_fields = dict(old.fields), dict(new.fields)
        for name in self.FIELDS:
            if old_fields[name] != new_fields[name]:
                return {"type": "cache_miss", "reason": f"{name}_changed", "cache_missed_tokens": old.total,
                        "comparison_reusable_tokens": old.total}
        at = _first_divergence(old, new)
        if at is not None:
            return {"type": "cache_miss", "reason": "input_changed",
                    "cache_missed_tokens": old.total - old.tokens_before[at], "comparison_reusable_tokens": old.total}
        return {"type": "cache_hit"} if cached_tokens > 0 else {"type": "unavailable"}


def _without_cache_control(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _without_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_without_cache_control(v) for v in obj]
    return obj


def _without_breakpoints(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _without_breakpoints(v) for k, v in obj.items() if k != "prompt_cache_breakpoint"}
    if isinstance(obj, list):
        return [_without_breakpoints(v) for v in obj]
    return obj
