"""A small load generator with accounting, for the reliability suite.

`Load` sends OpenAI Chat requests (stream or not) from several tenants through the gateway and
keeps a `Ledger`:
- sent, succeeded, failed; failures split into *expected* (the request carried an upstream fault
  that the gateway must pass through) and *unexpected*;
- wrong answers: a 200 whose text is not the emulator's answer to that request (the emulators
  answer with a pure function of model + conversation, so `truth()` asks the emulator directly);
- cross-tenant answers: a tenant served an answer it never asked upstream for. Two checks:
  the first request a tenant sends for a prompt can never be a cache hit (nothing of its own can be
  stored yet), and, with `upstream_keys: passthrough`, every (tenant, prompt) that got an answer
  must appear among the emulator's recorded upstream calls under that tenant's own key;
- usage records lost: request ids the gateway answered with that have no usage record.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

MODEL = "gpt-4o-mini"
HIT = ("response-hit", "semantic-hit")


def body(prompt: str, stream: bool = False) -> dict[str, Any]:
    b: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": prompt}]}
    if stream:
        b["stream"] = True
    return b


def stream_text(raw: bytes) -> tuple[str, bool]:
    """(text, complete) of an OpenAI Chat SSE stream: complete when it ended with [DONE] and no error."""
    text, done = [], False
    for line in raw.split(b"\n"):
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            done = True
            continue
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            return "".join(text), False
        if "error" in chunk:
            return "".join(text), False
        for choice in chunk.get("choices") or []:
            text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text), done


@dataclass
class Outcome:
    tenant: str
    prompt: str
    status: int  # 0: no HTTP answer (connection error, client timeout)
    cache: str | None
    request_id: str | None
    text: str | None
    complete: bool
    fault: str | None
    first: bool  # the tenant's first request for this prompt
    started: float
    ended: float
    tail: bytes = b""  # the last bytes of an incomplete answer, for the failure message


@dataclass
class Ledger:
    outcomes: list[Outcome] = field(default_factory=list)
    wrong_detail: list[str] = field(default_factory=list)

    @property
    def sent(self) -> int:
        return len(self.outcomes)

    @property
    def succeeded(self) -> int:
        return sum(o.status == 200 and o.complete for o in self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not (o.status == 200 and o.complete)]

    @property
    def failed_expected(self) -> int:
        return sum(o.fault is not None for o in self.failed)

    @property
    def failed_unexpected(self) -> list[Outcome]:
        return [o for o in self.failed if o.fault is None]

    def check_answers(self, truth: Mapping[str, str]) -> int:
        """Wrong answers: complete 200s whose text differs from the emulator's answer."""
        self.wrong_detail = [f"{o.tenant} {o.prompt!r} [{o.cache}]: {o.text!r:.80} != {truth.get(o.prompt)!r:.80}"
                             for o in self.outcomes if o.status == 200 and o.complete and o.text != truth.get(o.prompt)]
        return len(self.wrong_detail)

    def cross_tenant(self, upstream_calls: Iterable[tuple[str, str]] | None = None,
                     keys: Mapping[str, str] | None = None) -> list[str]:
        """Answers a tenant can only have got from another tenant's cache entry or upstream call."""
        bad = [f"{o.tenant} first request for {o.prompt!r} was a {o.cache}" for o in self.outcomes
               if o.first and o.cache in HIT]
        if upstream_calls is not None and keys is not None:
            asked = set(upstream_calls)  # (key, prompt) pairs the emulator received
            for o in self.outcomes:
                if o.status == 200 and o.complete and (keys[o.tenant], o.prompt) not in asked:
                    bad.append(f"{o.tenant} got an answer for {o.prompt!r} that no upstream call of its own made")
        return bad

    def request_ids(self, tenant: str | None = None) -> set[str]:
        return {o.request_id for o in self.outcomes if o.request_id and (tenant is None or o.tenant == tenant)}

    def summary(self) -> dict[str, int]:
        return {"sent": self.sent, "succeeded": self.succeeded, "failed": len(self.failed),
                "failed_expected": self.failed_expected, "failed_unexpected": len(self.failed_unexpected)}


class Load:
    """Requests from `tenants` (name → key) over `prompts`, `repeats` times each, by `concurrency`
    workers taking jobs in order. `fault(i)` may return an `x-emulator-fault` value for job i."""

    def __init__(self, base_url: str, tenants: Mapping[str, str], prompts: list[str], *, repeats: int = 3,
                 concurrency: int = 8, stream: bool | Callable[[int], bool] = False,
                 fault: Callable[[int], str | None] | None = None, timeout: float = 30.0,
                 pace: float = 0.0, latency: str | None = None) -> None:
        self.base_url, self.tenants, self.prompts = base_url, dict(tenants), prompts
        self.repeats, self.concurrency, self.timeout, self.pace = repeats, concurrency, timeout, pace
        self.stream = stream if callable(stream) else (lambda i, s=stream: s)
        self.fault = fault or (lambda i: None)
        self.latency = latency  # the emulator's `x-emulator-latency` for every request (forwarded upstream)
        self.ledger = Ledger()
        self.progress = 0  # jobs finished
        self._seen: set[tuple[str, str]] = set()

    def jobs(self) -> list[tuple[str, str]]:
        return [(t, p) for _ in range(self.repeats) for p in self.prompts for t in self.tenants]

    async def run(self) -> Ledger:
        jobs = iter(enumerate(self.jobs()))
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
            await asyncio.gather(*(self._worker(session, jobs) for _ in range(self.concurrency)))
        return self.ledger

    async def _worker(self, session: aiohttp.ClientSession, jobs: Iterable[tuple[int, tuple[str, str]]]) -> None:
        for i, (tenant, prompt) in jobs:
            first = (tenant, prompt) not in self._seen
            self._seen.add((tenant, prompt))
            stream, fault = self.stream(i), self.fault(i)
            headers = {"authorization": f"Bearer {self.tenants[tenant]}", "content-type": "application/json"}
            if fault:
                headers["x-emulator-fault"] = fault
            if self.latency:
                headers["x-emulator-latency"] = self.latency
            started = time.monotonic()
            status, cache, rid, text, complete, tail = 0, None, None, None, False, b""
            try:
                async with session.post(f"{self.base_url}/v1/chat/completions", data=orjson.dumps(body(prompt, stream)),
                                        headers=headers) as resp:
                    status, cache, rid = resp.status, resp.headers.get("x-gateway-cache"), \
                        resp.headers.get("x-gateway-request-id")
                    raw = await resp.read()
                    if status == 200 and stream:
                        text, complete = stream_text(raw)
                        tail = b"" if complete else raw[-400:]
                    elif status == 200:
                        text, complete = orjson.loads(raw)["choices"][0]["message"]["content"], True
            except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError, KeyError):
                complete = False
            self.ledger.outcomes.append(Outcome(tenant, prompt, status, cache, rid, text, complete, fault, first,
                                                started, time.monotonic(), tail))
            self.progress += 1
            if self.pace:
                await asyncio.sleep(self.pace)


async def truth(emulator_base: str, prompts: Iterable[str]) -> dict[str, str]:
    """The emulator's own answer to each prompt, asked directly (no gateway)."""
    out = {}
    async with aiohttp.ClientSession() as session:
        for prompt in prompts:
            async with session.post(f"{emulator_base}/chat/completions", json=body(prompt),
                                    headers={"authorization": "Bearer sk-direct"}) as resp:
                out[prompt] = (await resp.json())["choices"][0]["message"]["content"]
    return out


def upstream_calls(emulators: Any) -> list[tuple[str, str]]:
    """(key, last user prompt) of every chat call the in-process emulator received."""
    calls = []
    for rec in emulators.requests("openai.chat"):
        key = (rec.headers.get("authorization") or "").removeprefix("Bearer ").strip()
        messages = (rec.body or {}).get("messages") or []
        if messages:
            calls.append((key, messages[-1].get("content")))
    return calls


async def usage_records(base_url: str, admin_key: str, tenant: str, limit: int = 10_000) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(
            f"{base_url}/admin/usage/records", params={"tenant": tenant, "limit": str(limit)},
            headers={"authorization": f"Bearer {admin_key}"}) as resp:
        assert resp.status == 200, await resp.text()
        data = await resp.json()
    return data["records"] if isinstance(data, dict) else data


async def lost_usage(base_url: str, admin_key: str, ledger: Ledger, tenants: Iterable[str],
                     wait: float = 15.0) -> dict[str, set[str]]:
    """Request ids answered but without a usage record, per tenant (polls while the flush catches up)."""
    deadline = time.monotonic() + wait
    while True:
        lost: dict[str, set[str]] = defaultdict(set)
        for tenant in tenants:
            try:
                recorded = {r.get("request_id") for r in await usage_records(base_url, admin_key, tenant)}
            except (aiohttp.ClientError, AssertionError):
                recorded = set()
            missing = ledger.request_ids(tenant) - recorded
            if missing:
                lost[tenant] = missing
        if not lost or time.monotonic() > deadline:
            return dict(lost)
        await asyncio.sleep(0.5)


async def lost_usage_in_redis(redis_url: str, ledger: Ledger, tenants: Iterable[str]) -> dict[str, set[str]]:
    """Like `lost_usage`, reading the records straight from Redis with the gateway's own store and
    query code (when no gateway is left running to ask)."""
    from gateway.config import Settings
    from gateway.stores import open_store
    from gateway.usage import query

    store = open_store(Settings.load(env={}, redis_url=redis_url, store_timeout=5.0))
    try:
        lost = {}
        for tenant in tenants:
            recorded = {r.get("request_id") for r in await query.records(store, tenant, 10_000)}
            if missing := ledger.request_ids(tenant) - recorded:
                lost[tenant] = missing
        return lost
    finally:
        await store.close()


def report(scenario: str, ledger: Ledger, wrong: int, cross: int, lost: int, refused: int = 0) -> str:
    """One line of figures for the run (printed: `pytest -s` or `-rP` shows it). `refused`: requests
    the test expects to find no server (sent after a shutdown began)."""
    s = ledger.summary()
    line = (f"[reliability] {scenario}: sent {s['sent']}, succeeded {s['succeeded']}, failed {s['failed']} "
            f"(upstream faults passed through {s['failed_expected']}"
            + (f", refused after shutdown {refused}" if refused else "")
            + f", other {s['failed_unexpected'] - refused}), wrong answers {wrong}, answers from another tenant "
            f"{cross}, usage records lost {lost}")
    print(line)
    return line
