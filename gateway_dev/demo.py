"""`llm-cache-gateway demo`: the vendor emulators and the gateway on free local ports, a realistic
mixed workload through the official SDKs, and what each layer did with it.

Nothing leaves the machine: OpenAI, Anthropic, Gemini, DeepSeek and two vLLM replicas are the
bundled emulators, the stores are the embedded ones (or `--redis-url`). The workload:

- a support bot (OpenAI): FAQ questions asked again (response cache), reworded (semantic cache),
  and look-alike questions that must NOT reuse an answer (the semantic guard);
- an agent on Claude whose 3,000-token system prompt carries a timestamp (prompt rewrite +
  Anthropic cache_control), streamed;
- a document assistant on Gemini and a coding assistant on DeepSeek (vendor prompt caches);
- chat sessions on the vLLM pool (cache-aware routing);
- the cloud platforms: the `AzureOpenAI` client on an Azure deployment (response cache) and Claude on Amazon
  Bedrock through the OpenAI protocol (`bedrock/…`, cachePoint blocks placed by the gateway);
- another tenant asking the same questions (never served the first tenant's answers).
"""

from __future__ import annotations

import math
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from rich.console import Console
from rich.table import Table

from gateway_dev.localrun import LocalGateway

ACME_KEY, GLOBEX_KEY, ADMIN_KEY = "demo-acme-key", "demo-globex-key", "demo-admin-key"
ON = {
    "response_cache": {"enabled": True, "ttl": "1h"},
    "semantic_cache": {"enabled": True, "threshold": 0.9, "version": "kb-2026-11"},
    "prompt_rewrite": {"enabled": True},
    "provider_cache": {"anthropic": {"enabled": True, "ttl": "auto"}, "openai": {"prompt_cache_key": "auto"}},
}
FAQ = [
    ("How do I reset my password?", "What's the way to reset my password?"),
    ("How can I export my invoices as PDF?", "How do I download my invoices in PDF format?"),
    ("Does the Pro plan include SSO?", "Is SSO part of the Pro plan?"),
    ("怎么修改账户的绑定邮箱？", "如何更改账户绑定的邮箱？"),
]
LOOKALIKES = [  # one slot changed: another answer is needed
    "Does the Enterprise plan include SSO?",
    "How can I export my invoices as CSV?",
]
TOOLS = [{"name": n, "description": f"{d} for the customer account.", "input_schema": {
    "type": "object", "properties": {"account_id": {"type": "string"}}, "required": ["account_id"]}}
    for n, d in [("get_orders", "List the orders"), ("get_invoices", "List the invoices"),
                 ("refund", "Refund an order"), ("update_email", "Change the e-mail address")]]


def _agent_system(now: str) -> str:
    rules = " ".join(f"Rule {i}: answer politely, cite the policy section, never invent order numbers."
                     for i in range(120))
    request_id = f"req-{int(time.time() * 1e6)}"
    return f"You are the support agent of Example Corp. Current time: {now}. Request id: {request_id}.\n{rules}"


@dataclass
class Tally:
    """What the demo saw: requests per (workload, x-gateway-cache), in the order they ran, and per
    workload its prompt tokens and those a vendor or replica read from its own prompt cache."""

    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    tokens: dict[str, list[int]] = field(default_factory=dict)

    def add_tokens(self, workload: str, prompt: int, cached: int) -> None:
        row = self.tokens.setdefault(workload, [0, 0])
        row[0] += prompt
        row[1] += cached


# What each outcome means for the workload it happened to (the intended misses say so).
MEANING = {"response-hit": "answered from the response cache (an exact repeat)",
           "semantic-hit": "answered from the semantic cache (the same question reworded)",
           "miss": "answered upstream (the vendor, or a vLLM replica)",
           "bypass": "answered upstream (no cache layer applies)"}
INTENDED_MISS = {
    "look-alike questions": "miss, as intended: one word changed makes another question; no answer reused",
    "another tenant, same FAQ": "miss, as intended: tenants never share cached answers",
}


def run_demo(requests: int = 0, redis_url: str | None = None) -> int:
    from gateway_dev.emulators.harness import EmulatorSet

    console = Console(width=150) if not Console().is_terminal else Console()
    scale = max(1, requests // 40) if requests else 1
    with tempfile.TemporaryDirectory(prefix="gateway-demo-") as tmp, \
            EmulatorSet(vllm_replicas=2, frozen_clock=False) as emu:
        tenants = {"acme": {"key": ACME_KEY, **ON}, "globex": {"key": GLOBEX_KEY, **ON}}
        extra: dict[str, Any] = {"admin_key": ADMIN_KEY, "azure_base_url": emu.platform_url,
                                 "azure_api_key": "demo-azure-resource-key", "bedrock_base_url": emu.platform_url,
                                 "bedrock_region": "us-east-1", "bedrock_api_key": "ABSKZGVtby1iZWRyb2Nr"}
        if redis_url:
            extra["redis_url"] = redis_url
        console.print("[bold]llm-cache-gateway demo[/bold]: starting the vendor emulators and the gateway …")
        with LocalGateway(emu, tenants, Path(tmp), **extra) as gw:
            console.print(f"  emulators  {emu.vendor_url}  (vLLM: {', '.join(emu.vllm_urls)})")
            console.print(f"  gateway    {gw.url}\n")
            if redis_url:  # a reused Redis holds an earlier run's entries: start cold, as the tables assume
                for tenant in ("acme", "globex"):
                    httpx2.post(f"{gw.url}/admin/cache/purge", json={"tenant": tenant}, timeout=30,
                                headers={"authorization": f"Bearer {ADMIN_KEY}"})
            before = {t: _admin(gw, f"/admin/usage?tenant={t}") for t in ("acme", "globex")}
            seen = Tally()
            for _ in range(scale):
                _support_bot(gw, seen)
                _agent(gw, seen)
                _documents_and_code(gw, seen)
                _vllm_sessions(gw, emu, seen)
                _platforms(gw, seen)
                _other_tenant(gw, seen)
            gw.wait_idle()
            # this run's usage: a reused Redis also holds earlier runs' totals
            totals = {t: _minus(_admin(gw, f"/admin/usage?tenant={t}"), before[t]) for t in ("acme", "globex")}
        _report(console, seen, totals)
    return 0


def _cache_header(raw: Any) -> str:
    return raw.headers.get("x-gateway-cache", "?")


def _support_bot(gw: LocalGateway, seen: Tally) -> None:
    client = gw.openai(ACME_KEY)
    system = "You are the help-center assistant of Example Corp. Answer in two sentences."
    for question, rephrased in FAQ:
        for text in (question, question, rephrased):  # ask, ask again, reword
            raw = client.chat.completions.with_raw_response.create(
                model="gpt-4o-mini", messages=[{"role": "system", "content": system},
                                               {"role": "user", "content": text}])
            seen.requests["support bot (OpenAI)", _cache_header(raw)] += 1
            gw.wait_idle()  # the demo waits for cache writes so the replay is deterministic
    for text in LOOKALIKES:
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "system", "content": system}, {"role": "user", "content": text}])
        seen.requests["look-alike questions", _cache_header(raw)] += 1
    # the same FAQ streamed: a cached answer replays as a stream
    stream = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", stream=True, messages=[{"role": "system", "content": system},
                                                    {"role": "user", "content": FAQ[0][0]}])
    seen.requests["support bot, streamed", _cache_header(stream)] += 1
    for _ in stream.parse():
        pass


def _agent(gw: LocalGateway, seen: Tally) -> None:
    client = gw.anthropic(ACME_KEY)
    history: list[dict[str, Any]] = []
    for turn in range(6):
        history.append({"role": "user", "content": f"Turn {turn}: what is the status of my last refund?"})
        now = time.strftime("%Y-%m-%d %H:%M:%S")  # changes every request: the rewrite moves it out
        with client.messages.stream(model="claude-sonnet-4-6", max_tokens=200, system=_agent_system(now),
                                    tools=TOOLS, tool_choice={"type": "none"}, messages=history) as stream:
            message = stream.get_final_message()
        usage = message.usage
        seen.requests["agent (Claude, streamed)", "miss"] += 1
        seen.add_tokens("agent (Claude): Anthropic's prompt cache",
                        usage.input_tokens + (usage.cache_read_input_tokens or 0)
                        + (usage.cache_creation_input_tokens or 0), usage.cache_read_input_tokens or 0)
        text = "".join(block.text for block in message.content if block.type == "text")
        history.append({"role": "assistant", "content": text or "ok"})


def _documents_and_code(gw: LocalGateway, seen: Tally) -> None:
    document = "Clause. The supplier shall deliver within thirty days of the order. " * 180
    gemini = gw.gemini(ACME_KEY)
    for question in ("Summarize the delivery terms.", "What are the penalties?", "Who pays shipping?"):
        answer = gemini.models.generate_content(model="gemini-2.5-flash", contents=f"{document}\n\n{question}")
        meta = answer.usage_metadata
        seen.requests["documents (Gemini)", "miss"] += 1
        seen.add_tokens("documents (Gemini): Gemini's context cache", meta.prompt_token_count or 0,
                        meta.cached_content_token_count or 0)
    deepseek = gw.openai(ACME_KEY)
    code = "def handler(event):\n    return process(event)\n" * 150
    for question in ("Add type hints.", "Add logging.", "Write a unit test."):
        answer = deepseek.chat.completions.create(model="deepseek-chat", messages=[
            {"role": "system", "content": "You are a senior Python reviewer."},
            {"role": "user", "content": f"{code}\n{question}"}])
        seen.requests["code review (DeepSeek)", "miss"] += 1
        seen.add_tokens("code review (DeepSeek): DeepSeek's disk cache", answer.usage.prompt_tokens,
                        getattr(answer.usage, "prompt_cache_hit_tokens", 0) or 0)


def _vllm_sessions(gw: LocalGateway, emu: Any, seen: Tally) -> None:
    if not emu.vllm_urls or gw.components.pool is None:
        return
    client = gw.openai(ACME_KEY)
    model = client.models.list().data[-1].id
    for session in ("alice", "bob", "carol"):
        history = [{"role": "system", "content": "You are a helpful assistant for an internal wiki. " * 40}]
        for turn in range(4):
            history.append({"role": "user", "content": f"{session} asks question {turn} about the wiki."})
            raw = client.chat.completions.with_raw_response.create(
                model=model, messages=history, extra_headers={"x-gateway-session": session})
            answer = raw.parse()
            seen.requests["chat sessions (vLLM pool)", _cache_header(raw)] += 1
            details = answer.usage.prompt_tokens_details
            seen.add_tokens("chat sessions (vLLM): the replica's prefix cache", answer.usage.prompt_tokens,
                            (details.cached_tokens or 0) if details else 0)
            history.append({"role": "assistant", "content": answer.choices[0].message.content})


def _platforms(gw: LocalGateway, seen: Tally) -> None:
    import openai

    with openai.AzureOpenAI(azure_endpoint=gw.url, api_key=ACME_KEY, api_version="2024-10-21",
                            max_retries=0) as azure:
        for _ in range(2):
            raw = azure.chat.completions.with_raw_response.create(
                model="gpt-4o", messages=[{"role": "user", "content": "Summarize our travel policy in one line."}])
            seen.requests["Azure OpenAI deployment", _cache_header(raw)] += 1
            gw.wait_idle()
    client = gw.openai(ACME_KEY)
    handbook = "Travel policy clause: economy class for flights under six hours, receipts within 30 days. " * 120
    for question in ("Can I fly business to Tokyo?", "How fast must I file receipts?", "Are taxis covered?"):
        raw = client.chat.completions.with_raw_response.create(
            model="bedrock/anthropic.claude-sonnet-4-20250514-v1:0",
            messages=[{"role": "system", "content": handbook}, {"role": "user", "content": question}])
        answer = raw.parse()
        seen.requests["Claude on Bedrock", _cache_header(raw)] += 1
        details = answer.usage.prompt_tokens_details if answer.usage else None
        seen.add_tokens("Claude on Bedrock: Bedrock's prompt cache (cachePoint)",
                        answer.usage.prompt_tokens if answer.usage else 0,
                        (details.cached_tokens or 0) if details else 0)


def _other_tenant(gw: LocalGateway, seen: Tally) -> None:
    client = gw.openai(GLOBEX_KEY)
    system = "You are the help-center assistant of Example Corp. Answer in two sentences."
    for question, _ in FAQ[:2]:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=messages)
        seen.requests["another tenant, same FAQ", _cache_header(raw)] += 1


def _admin(gw: LocalGateway, path: str) -> dict[str, Any]:
    response = httpx2.get(f"{gw.url}{path}", headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=30)
    response.raise_for_status()
    return response.json()


def _minus(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(value, dict):
            out[key] = _minus(value, old if isinstance(old, dict) else {})
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value - (old if isinstance(old, int | float) else 0)
        else:
            out[key] = value
    return out


def usd(value: float) -> str:
    """Dollars with enough digits to show small amounts (never a bare 0.0000 for a real cost)."""
    if value == 0:
        return "0"
    if abs(value) >= 1:
        return f"{value:,.2f}"
    if abs(value) >= 0.0001:
        return f"{value:.4f}"
    return f"{value:.{1 - math.floor(math.log10(abs(value)))}f}"  # two significant digits: 0.000073


def _report(console: Console, seen: Tally, totals: dict[str, dict[str, Any]]) -> None:
    events = Table(title="Requests, by workload and what answered them")
    for column, justify in (("workload", "left"), ("x-gateway-cache", "left"), ("requests", "right"),
                            ("meaning", "left")):
        events.add_column(column, justify=justify)  # type: ignore[arg-type]
    for (workload, status), count in seen.requests.items():
        meaning = INTENDED_MISS.get(workload, MEANING.get(status, status)) if status == "miss" \
            else MEANING.get(status, status)
        events.add_row(workload, status, f"{count:,}", meaning)
    console.print(events)

    tokens = Table(title="Prompt tokens, and those the vendors and replicas read from their own prompt caches")
    for column in ("workload: cache", "prompt tokens", "read from that cache", "share"):
        tokens.add_column(column, justify="left" if column.startswith("workload") else "right")
    for workload, (prompt, cached) in seen.tokens.items():
        tokens.add_row(workload, f"{prompt:,}", f"{cached:,}", f"{100 * cached / prompt:.0f}%" if prompt else "-")
    console.print(tokens)

    usage = Table(title="Usage and money per tenant, this run (from /admin/usage)")
    for column in ("tenant", "requests", "response hits", "semantic hits", "input tokens", "cached input",
                   "cache writes", "output tokens", "cost $", "without cache $", "saved $"):
        usage.add_column(column, justify="right")
    for tenant, t in totals.items():
        usage.add_row(tenant, str(t["requests"]), str(t["hits"]["response"]), str(t["hits"]["semantic"]),
                      f"{t['input_tokens']:,}", f"{t['cached_input_tokens']:,}",
                      f"{t['cache_creation_input_tokens']:,}", f"{t['output_tokens']:,}", usd(t["cost_usd"]),
                      usd(t["cost_without_cache_usd"]), usd(t["cost_without_cache_usd"] - t["cost_usd"]))
    console.print(usage)
    console.print("Self-hosted vLLM models cost 0 here by design (no per-token price); set `prices:` in the "
                  "config to count them.")
    paid = sum(t["cost_usd"] for t in totals.values())
    full = sum(t["cost_without_cache_usd"] for t in totals.values())
    if full > 0:
        console.print(f"[bold]Caching saved {100 * (full - paid) / full:.1f}% of the cost[/bold] "
                      f"(${usd(full - paid)} of ${usd(full)}).")
