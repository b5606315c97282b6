"""`POST /v1/responses`: the Responses API on top of the OpenAI emulator's cache and answers.

Stream framing: `event: <type>` + `data: <json>` with a rising `sequence_number`; usage only in the terminal
`response.completed` (or `response.incomplete`) event; no `[DONE]`.
`previous_response_id` is honoured for responses this emulator stored (`store` defaults to true).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request

from gateway_dev.emulators.answers import Generated, generate
from gateway_dev.emulators.chat_wire import tool_call_id
from gateway_dev.emulators.diagnostics import OpenAIDiagnostics
from gateway_dev.emulators.latency import pause
from gateway_dev.emulators.models import openai_reasoning_tokens
from gateway_dev.emulators.openai_app import OpenAIEmulator, called_tools
from gateway_dev.emulators.openai_render import render_responses
from gateway_dev.emulators.shapes import check
from gateway_dev.emulators.shapes_openai import ResponsesRequest
from gateway_dev.emulators.tokens import get_tokenizer
from gateway_dev.emulators.web import EmulatorError, EmulatorResponse, json_response, new_id, sse_event

# Request fields the Response object echoes (those its 3.57 type declares; `store` is not one of them).
_ECHO = ("instructions", "max_output_tokens", "metadata", "previous_response_id", "prompt_cache_key", "temperature",
         "top_p", "user", "truncation")


class ResponsesEndpoint:
    def __init__(self, emu: OpenAIEmulator, keep: int = 1000) -> None:
        self.emu = emu
        self._stored: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._keep = keep
        self.diagnostics = OpenAIDiagnostics()

    def _input_items(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
        prev = body.get("previous_response_id")
        if prev:
            if prev not in self._stored:
                raise EmulatorError("openai", 400, f"Previous response with id '{prev}' not found.",
                                    param="previous_response_id", code="previous_response_not_found")
            items = self._stored[prev] + items
        return items

    async def create(self, request: Request) -> EmulatorResponse:
        emu = self.emu
        call = await emu.begin(request, "responses")
        check(ResponsesRequest, call.body, "openai")
        body = dict(call.body)
        model = emu.check_model(body)
        items = self._input_items(body)
        prompt = render_responses({**body, "input": items})
        plan, v2, retention = emu.plan(call, body, prompt, responses=True)
        reasoning_cfg = body.get("reasoning") or {}
        reasoning = openai_reasoning_tokens(model, reasoning_cfg.get("effort"))
        opts = body.get("prompt_cache_options") or {}
        prewarm = bool(opts.get("prewarm"))
        fmt = (body.get("text") or {}).get("format") or {}
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            choice = choice.get("name")
        g = generate(model=model, conversation_key=prompt.key, question=prompt.question,
                     target_tokens=0 if prewarm else call.target_tokens,
                     max_tokens=0 if prewarm else body.get("max_output_tokens"), tools=prompt.tools,
                     tool_choice=choice, tool_result=prompt.tool_result,
                     called_tools=called_tools({"input": items}),
                     json_schema=fmt.get("schema") if fmt.get("type") == "json_schema" else None,
                     json_object=fmt.get("type") == "json_object", reasoning_tokens=0 if prewarm else reasoning)
        n_in = len(prompt.tokens)
        n_out = 0 if prewarm else g.output_tokens
        details: dict[str, Any] = {"cached_tokens": plan.cached_tokens, "cache_write_tokens": plan.write_tokens}
        if v2:
            details["cache_write_tokens_details"] = {"ttl_30m_tokens": plan.write_by_ttl["30m"],
                                                     "ttl_12h_tokens": plan.write_by_ttl["12h"]}
        usage = {"input_tokens": n_in, "input_tokens_details": details, "output_tokens": n_out,
                 "output_tokens_details": {"reasoning_tokens": g.reasoning_tokens}, "total_tokens": n_in + n_out}
        rid = new_id("resp_", 48)
        output = [] if prewarm else self._output(g, rid)
        incomplete = g.finish == "length" and not prewarm
        now = self.emu.state.clock.now()
        final = {
            "id": rid, "object": "response", "created_at": int(now),
            "status": "incomplete" if incomplete else "completed",
            "completed_at": int(now) if not incomplete else None, "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "model": model, "output": output, "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "reasoning": {"effort": reasoning_cfg.get("effort"), "summary": None},
            "text": {"format": fmt or {"type": "text"}}, "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [], "usage": usage,
            **{k: body.get(k) for k in _ECHO},
        }
        final["prompt_cache_retention"] = retention  # the effective value (a guess: the API may echo null)
        if final["metadata"] is None:
            final["metadata"] = {}
        if v2 and opts:
            final["prompt_cache_options"] = opts
        if v2:
            fp = OpenAIDiagnostics.fingerprint(call.api_key, body, items, prompt.message_ends)
            if opts.get("comparison_response_id") is not None:
                final["prompt_cache_diagnostics"] = self.diagnostics.diagnose(
                    opts["comparison_response_id"], call.api_key, fp, plan.cached_tokens)
            self.diagnostics.put(rid, fp)
        if body.get("store", True):
            self._stored[rid] = items + [_as_input(o) for o in output]
            while len(self._stored) > self._keep:
                self._stored.popitem(last=False)
        ttft = call.latency.ttft(n_in - plan.cached_tokens, plan.cached_tokens)
        headers = {"x-request-id": new_id("req_", 32)}
        if body.get("stream"):
            return EmulatorResponse(chunks=self._events(final, g, ttft, plan.commit, call.latency.inter_token_s,
                                                        call.fault.stream_error_after if call.fault else None),
                                    headers=headers, fault=call.fault)
        await pause(ttft)
        plan.commit()
        await pause(call.latency.decode(n_out))
        return json_response(final, headers=headers, fault=call.fault)

    @staticmethod
    def _output(g: Generated, rid: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if g.reasoning_tokens:
            out.append({"id": "rs_" + rid[5:], "type": "reasoning", "summary": []})
        for i, c in enumerate(g.tool_calls):
            out.append({"id": f"fc_{rid[5:]}{i}", "type": "function_call", "status": "completed",
                        "call_id": tool_call_id(c.id_seed, i), "name": c.name, "arguments": c.arguments_json})
        if not g.tool_calls:
            out.append({"id": "msg_" + rid[5:], "type": "message", "status":
                        "incomplete" if g.finish == "length" else "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": g.text, "annotations": [], "logprobs": []}]})
        return out

    async def _events(self, final: dict[str, Any], g: Generated, ttft: float, commit: Any, itl: float,
                      error_after: int | None) -> AsyncIterator[bytes]:
        seq = 0

        def ev(kind: str, **payload: Any) -> bytes:
            nonlocal seq
            data = {"type": kind, "sequence_number": seq, **payload}
            seq += 1
            return sse_event(kind, data)

        start = {**final, "status": "in_progress", "output": [], "usage": None, "completed_at": None,
                 "incomplete_details": None}
        events: list[tuple[bool, str, dict[str, Any]]] = [
            (False, "response.created", {"response": start}), (False, "response.in_progress", {"response": start})]
        tok = get_tokenizer()
        for idx, item in enumerate(final["output"]):
            if item["type"] == "message":
                open_item = {**item, "status": "in_progress", "content": []}
                part0 = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                ids = {"item_id": item["id"], "output_index": idx, "content_index": 0}
                events.append((False, "response.output_item.added", {"output_index": idx, "item": open_item}))
                events.append((False, "response.content_part.added", {**ids, "part": part0}))
                events += [(True, "response.output_text.delta", {**ids, "delta": p, "logprobs": []})
                           for p in tok.pieces(g.tokens)]
                text = item["content"][0]["text"]
                events.append((False, "response.output_text.done", {**ids, "text": text, "logprobs": []}))
                events.append((False, "response.content_part.done", {**ids, "part": item["content"][0]}))
            elif item["type"] == "function_call":
                events.append((False, "response.output_item.added",
                               {"output_index": idx, "item": {**item, "status": "in_progress", "arguments": ""}}))
                args = item["arguments"]
                step = max(1, len(args) // 4)
                events += [(True, "response.function_call_arguments.delta",
                            {"item_id": item["id"], "output_index": idx, "delta": args[k:k + step]})
                           for k in range(0, len(args), step)]
                events.append((False, "response.function_call_arguments.done",
                               {"item_id": item["id"], "output_index": idx, "arguments": args}))
            else:
                events.append((False, "response.output_item.added", {"output_index": idx, "item": item}))
            events.append((False, "response.output_item.done", {"output_index": idx, "item": item}))
        terminal = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
        events.append((False, terminal, {"response": final}))

        yield ev(events[0][1], **events[0][2])
        await pause(ttft)
        commit()
        deltas = 0
        for n, (is_delta, kind, payload) in enumerate(events[1:], start=1):
            if error_after is not None and n >= error_after:
                yield ev("error", code="server_error", message="The server had an error while processing your "
                         "request. Sorry about that!", param=None)
                return
            if is_delta:
                if deltas:
                    await pause(itl)
                deltas += 1
            yield ev(kind, **payload)


def _as_input(item: dict[str, Any]) -> dict[str, Any]:
    """An output item as the next turn's input item (for `previous_response_id`)."""
    if item["type"] == "message":
        return {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": item["content"][0]["text"]}]}
    return item
