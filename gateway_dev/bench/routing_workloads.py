"""The routing benchmark's workloads: agent sessions, SGLang's generated shared prefix, and a mix with
one-off requests (see `gateway_dev.bench.routing`)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


# ---- workloads ------------------------------------------------------------------------------------------
class Words:
    """Random text of about `n` tokens: words that are one o200k token each (as SGLang's benchmark samples
    random vocabulary tokens)."""

    def __init__(self, seed: int) -> None:
        from gateway_dev.emulators.tokens import get_tokenizer

        enc = get_tokenizer()._enc
        words = []
        for i in range(2_000, 60_000):
            piece = enc.decode_single_token_bytes(i)
            if piece.startswith(b" ") and 4 <= len(piece) <= 9 and piece[1:].isalpha() and piece[1:].islower():
                words.append(piece.decode())
        self.words, self.rng = words, random.Random(seed)

    def text(self, n: int) -> str:
        return "".join(self.rng.choices(self.words, k=max(1, n))).strip()


@dataclass
class Session:
    messages: list[dict[str, str]]
    followups: list[str] = field(default_factory=list)  # the user/tool message after each answer


@dataclass
class Workload:
    name: str
    title: str
    sessions: list[Session]  # run by the clients, each session's turns back to back
    output_tokens: int
    # Unrelated traffic: one single-turn request is sent, outside the clients, after every
    # `one_off_every` session requests (other users' requests arriving while the agents work).
    one_offs: list[Session] = field(default_factory=list)
    one_off_every: int = 4

    @property
    def requests(self) -> int:
        return sum(1 + len(s.followups) for s in self.sessions) + len(self.one_offs)


def agent_sessions(w: Words, rng: random.Random, n: int) -> list[Session]:
    system = "You are a coding agent. Tools: read_file, run_tests, apply_patch. " + w.text(1000)
    return [
        Session([{"role": "system", "content": system}, {"role": "user", "content": "Task: " + w.text(400)}],
                ["Tool result: " + w.text(rng.randint(200, 800)) for _ in range(rng.randint(5, 30) - 1)])
        for _ in range(n)
    ]


def make_workloads(scale: float, seed: int) -> dict[str, Workload]:
    w, rng = Words(seed), random.Random(seed)
    a = agent_sessions(w, rng, max(4, round(48 * scale)))
    groups, per_group = max(4, round(96 * scale)), 6
    systems = [w.text(1500) for _ in range(groups)]
    b = [Session([{"role": "system", "content": systems[g]}, {"role": "user", "content": w.text(100)}])
         for g in range(groups) for _ in range(per_group)]
    rng.shuffle(b)
    c_sessions = agent_sessions(w, rng, max(4, round(48 * scale)))
    session_requests = sum(1 + len(s.followups) for s in c_sessions)
    one_offs = [Session([{"role": "user", "content": w.text(rng.randint(1000, 3000))}])
                for _ in range(session_requests // 4)]  # one per 4 session requests: 20% of all requests
    tenants, per_tenant = 6, max(2, round(8 * scale))
    d: list[Session] = []
    for t in range(tenants):  # each tenant's agent: its own long system prompt and tool list
        system = f"Tenant {t} agent. Tools: " + ", ".join(f"tool_{t}_{k}" for k in range(12)) + ". " + w.text(2500)
        d += [Session([{"role": "system", "content": system}, {"role": "user", "content": "Task: " + w.text(200)}],
                      ["Tool result: " + w.text(rng.randint(200, 600)) for _ in range(rng.randint(4, 16) - 1)])
              for _ in range(per_tenant)]
    rng.shuffle(d)  # the tenants' sessions arrive interleaved
    return {
        "d": Workload("d", f"(d) multi-tenant agents: {tenants} tenants x {per_tenant} sessions of 4-16 turns, "
                           "2500-token system prompt per tenant", d, 24),
        "a": Workload("a", f"(a) agent sessions: {len(a)} sessions of 5-30 turns", a, 24),
        "b": Workload("b", f"(b) generated shared prefix: {groups} groups x {per_group} prompts, "
                           "1500-token system prompt, 100-token question", b, 24),
        "c": Workload("c", f"(c) mixed: {len(c_sessions)} agent sessions + {len(one_offs)} one-off requests (20%)",
                      c_sessions, 24, one_offs=one_offs),
    }
