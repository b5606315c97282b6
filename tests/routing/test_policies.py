"""Each policy's choices, deterministic, on a pool that is not started (no network)."""

from __future__ import annotations

import collections

import pytest

from gateway.metrics import ROUTE_DECISIONS
from gateway.routing.params import RoutingParams
from gateway.routing.policies import ConsistentHash, RouteRequest, hrw_order, make_policy
from gateway.routing.pool import Replica, ReplicaPool
from gateway.routing.router import Router
from gateway.stores.memory import MemoryStore

URLS = [f"http://10.0.0.{i}:8000" for i in range(1, 5)]


def make_router(policy: str = "cache_aware", store: MemoryStore | None = None, **params: object) -> Router:
    pool = ReplicaPool(URLS)
    return Router(pool, store=store if store is not None else MemoryStore(), policy=policy, params=params)


def chat(system: str, *turns: str) -> dict:
    messages = [{"role": "system", "content": system}]
    for i, text in enumerate(turns):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return {"model": "m", "messages": messages}


def long_text(tag: str, words: int = 300) -> str:
    return " ".join(f"{tag}{i}" for i in range(words))


async def test_round_robin_cycles_in_name_order() -> None:
    router = make_router("round_robin")
    got = [(await router.choose(chat("s", f"q{i}"))).name for i in range(8)]
    assert got == [u[7:] for u in URLS] * 2


async def test_least_loaded_picks_the_lowest_load_and_rotates_ties() -> None:
    router = make_router("least_loaded")
    replicas = router.pool.candidates("m")
    replicas[0].inflight, replicas[1].inflight, replicas[2].inflight, replicas[3].inflight = 3, 1, 1, 2
    got = {(await router.choose(chat("s", "q"))).name for _ in range(4)}
    assert got == {replicas[1].name, replicas[2].name}
    replicas[2].foreign = 5  # load seen in the replica's metrics from another gateway counts too
    assert {(await router.choose(chat("s", "q"))).name for _ in range(3)} == {replicas[1].name}


async def test_consistent_hash_sticks_and_moves_only_the_sessions_of_a_removed_replica() -> None:
    policy = ConsistentHash(RoutingParams())
    replicas = [Replica(u) for u in URLS]
    before = {f"s{i}": policy.select(RouteRequest("m", {}, f"s{i}"), replicas, None)[0].name for i in range(200)}
    assert len(set(before.values())) == 4
    gone = replicas[0].name
    after = {s: policy.select(RouteRequest("m", {}, s), replicas[1:], None)[0].name for s in before}
    moved = {s for s in before if before[s] != after[s]}
    assert moved == {s for s, r in before.items() if r == gone}


async def test_append_only_sessions_stick_to_their_replica() -> None:
    router = make_router()
    sessions = {}
    for s in range(12):
        turns = [long_text(f"u{s}t0", 40)]
        first = (await router.choose(chat(long_text(f"sys{s}"), *turns))).name
        sessions[s] = first
        for t in range(1, 8):
            turns += [long_text(f"a{s}t{t}", 30), long_text(f"u{s}t{t}", 20)]
            assert (await router.choose(chat(long_text(f"sys{s}"), *turns))).name == first
    assert len(set(sessions.values())) == 4  # new sessions spread (least loaded, hash tie-break)


async def test_sticky_without_bindings_through_the_prefix_index() -> None:
    """With session affinity off, the prefix index alone keeps a conversation on its replica."""
    router = make_router(session_affinity=False)
    turns = [long_text("u0", 40)]
    first = await router.choose(chat(long_text("sys"), *turns))
    for replica in router.pool.replicas.values():
        replica.inflight = 2
    for t in range(1, 6):
        first.inflight = 2 + t % 2  # one more request than the others does not outweigh its cache
        turns += [long_text(f"a{t}", 30), long_text(f"u{t}", 20)]
        assert (await router.choose(chat(long_text("sys"), *turns))).name == first.name
    first.inflight = 12  # overloaded (the guard): the conversation moves (no binding to hold it)
    turns += [long_text("a6", 30), long_text("u6", 20)]
    assert (await router.choose(chat(long_text("sys"), *turns))).name != first.name


async def test_a_prefix_every_session_shares_does_not_pile_new_sessions_on_one_replica() -> None:
    router = make_router()
    system = long_text("agent", 600)  # most of each first turn
    placed = collections.Counter()
    for s in range(12):  # each new session stays in flight (a long agent run), its prefill work with it
        body = chat(system, f"task {s}: " + long_text(f"t{s}", 60))
        decision = await router.decide(router.request(body, f"s{s}"))
        router.begin(decision.replica, decision.pending)
        placed[decision.replica.name] += 1
    assert len(placed) == 4 and max(placed.values()) - min(placed.values()) <= 2, placed


async def test_sessions_sharing_a_system_prompt_group_together() -> None:
    router = make_router(session_affinity=False)
    groups = collections.defaultdict(set)
    for q in range(10):
        for g in range(8):
            replica = await router.choose(chat(long_text(f"group{g}", 400), f"question {q} of group {g}?"))
            groups[g].add(replica.name)
    assert all(len(names) == 1 for names in groups.values())
    assert len({next(iter(n)) for n in groups.values()}) == 4  # the groups are spread over the replicas


@pytest.mark.parametrize("group_pending", [True, False])
async def test_a_prefix_group_stays_whole_while_other_groups_work_queues_on_its_replica(group_pending: bool) -> None:
    router = make_router(group_pending=group_pending)  # each question its own session: none is bound
    system = long_text("group", 400)
    first = await router.decide(router.request(chat(system, "question 0?"), "q0"))
    home = first.replica
    router.begin(home, first.pending)
    router.done_prefill(home, first.pending, first.request)  # its prefill is over: the group's own queue is empty
    home.pending_bytes += 4 * len(system)  # four cold prompts of other groups still prefill there
    decisions = [await router.decide(router.request(chat(system, f"question {q}?"), f"q{q}")) for q in range(1, 4)]
    moved = [d.replica for d in decisions]
    if group_pending:  # the work queued there is not the group's: it stays whole
        assert all(r is home for r in moved)
    else:  # counted as the group's: the group is split
        assert any(r is not home for r in moved)
    for d in [first, *decisions]:  # all answered
        router.end(d.replica, ok=True, request=d.request)
    home.pending_bytes = 0
    for replica in router.pool.replicas.values():  # other groups' requests in flight: the guard trips on home
        replica.inflight = 10 if replica is home else 2
    guarded = (await router.decide(router.request(chat(system, "question 9?"), "q9"))).replica
    assert (guarded is home) == group_pending  # none of them is this group's: it is no reason to split it


async def test_a_prefix_group_whose_own_requests_queue_grows_onto_the_replica_holding_its_blocks() -> None:
    router = make_router(session_affinity=False)
    system = long_text("group", 400)
    decisions = []
    for q in range(8):  # none finishes its prefill: the group's own queue grows on its replica
        d = await router.decide(router.request(chat(system, f"question {q}? " + long_text(f"q{q}", 40)), f"q{q}"))
        router.begin(d.replica, d.pending)
        decisions.append(d)
    holders = {d.replica.name for d in decisions}
    assert len(holders) >= 2  # its own load made it grow
    for d in decisions:  # all done
        router.end(d.replica, ok=True, pending=d.pending, request=d.request)
    for q in range(8, 12):  # the group's next requests go to a replica that holds its blocks, not a fresh one
        d = await router.decide(router.request(chat(system, f"question {q}? " + long_text(f"q{q}", 40)), f"q{q}"))
        assert d.replica.name in holders and d.reason == "prefix"


async def test_a_group_member_still_prefilling_the_shared_prefix_does_not_split_the_group() -> None:
    """The group's first request is still prefilling its system prompt on its replica, which is busier than
    the others: the next question still goes there (waiting for that prefill takes at most what prefilling the
    prompt again elsewhere would, and that would be a second copy)."""
    router = make_router()  # each question its own session: none is bound
    system = long_text("group", 400)
    first = await router.decide(router.request(chat(system, "question 0?"), "q0"))
    home = first.replica
    router.begin(home, first.pending)  # in flight, its prefill not over
    home.inflight = 3  # and two requests of other groups decoding there, none elsewhere
    second = await router.decide(router.request(chat(system, "question 1?"), "q1"))
    assert second.replica is home and second.reason == "prefix"


async def test_other_groups_load_on_its_replica_does_not_split_a_group_of_one_shots() -> None:
    """The end of a run of one-shot groups: the replica holding this group's prompt still decodes six
    requests of other groups while the others have drained. None of those is this group's, nothing is
    queued to prefill there: the group's next question stays (elsewhere it would prefill the prompt again)."""
    router = make_router()
    system = long_text("group", 400)
    first = await router.decide(router.request(chat(system, "question 0?"), "q0"))
    home = first.replica
    router.begin(home, first.pending)
    router.done_prefill(home, first.pending, first.request)
    router.end(home, ok=True, request=first.request)  # answered: the group has nothing in flight
    home.inflight = 6  # six requests of other groups decoding there, the other replicas idle
    nxt = await router.decide(router.request(chat(system, "question 1?"), "q1"))
    assert nxt.replica is home and nxt.reason == "prefix"


async def test_a_group_with_members_still_prefilling_stays_whole_on_a_busier_replica() -> None:
    """Three questions of a group arrive while its first is still prefilling the shared prompt on a replica
    that also decodes other groups' requests. The group's own requests there (2, then 3) are no more than an
    average replica's load: what its members prefill of the shared prompt is what the next one reuses, and
    the others' load is no reason to copy the prompt to a second replica."""
    router = make_router()
    system = long_text("group", 400)
    others = [r for r in router.pool.replicas.values()]
    for r in others:
        r.inflight = 3  # other groups' requests decoding everywhere
    first = await router.decide(router.request(chat(system, "question 0?"), "q0"))
    home = first.replica
    router.begin(home, first.pending)  # still prefilling the prompt
    home.inflight += 3  # and three more requests of other groups there
    for q in range(1, 4):
        d = await router.decide(router.request(chat(system, f"question {q}?"), f"q{q}"))
        assert d.replica is home and d.reason == "prefix", q
        router.begin(home, d.pending)  # each one in flight, none done prefilling


async def test_what_a_groups_members_prefill_beyond_the_shared_prefix_is_queued_work() -> None:
    """Three new sessions of a tenant are prefilling long tasks of their own after the tenant's prompt on its
    replica, the pool otherwise evenly loaded. Their tasks are work queued ahead of a new session there (only
    their share of the prompt itself would be reused): it goes elsewhere rather than wait behind them."""
    router = make_router()
    system = long_text("tenant", 400)
    warm = await router.decide(router.request(chat(system, "task 0"), "s0"))
    home = warm.replica
    router.begin(home, warm.pending)
    router.done_prefill(home, warm.pending, warm.request)
    router.end(home, ok=True, request=warm.request)  # the prompt is cached there, nothing in flight
    rest = {r.name for r in router.pool.replicas.values()} - {home.name}
    for s in range(1, 4):
        d = await router.decide(router.request(chat(system, f"task {s}: " + long_text(f"t{s}", 600)), f"s{s}"),
                                exclude=rest)
        router.begin(home, d.pending)  # still prefilling its task
    for r in router.pool.replicas.values():
        r.inflight = 3  # home: those three
    new = await router.decide(router.request(chat(system, "task 9"), "s9"))
    assert new.replica is not home


@pytest.mark.parametrize("expected_turns", [True, False])
async def test_a_new_session_weighs_the_load_it_joins_by_the_turns_sessions_bring(expected_turns: bool) -> None:
    router = make_router(expected_turns=expected_turns)
    system = long_text("tenant", 400)
    turns = ["task 0"]
    home = (await router.choose(chat(system, *turns), session="s0"))
    for t in range(1, 8):  # one session of 8 turns so far: sessions are long here
        turns += [f"answer {t}", f"tool result {t}"]
        assert (await router.choose(chat(system, *turns), session="s0")) is home
    home.inflight = 2  # two sessions busy on the replica holding the tenant's prompt, none elsewhere
    placed = await router.choose(chat(system, "task 1"), session="s1")
    if expected_turns:  # its 4 expected turns there outweigh one prefill of the prompt elsewhere
        assert placed is not home
    else:  # this request alone: its prompt's cached share wins
        assert placed is home


async def test_one_shot_groups_stay_whole_under_the_same_load() -> None:
    router = make_router()
    system = long_text("group", 400)
    home = await router.choose(chat(system, "question 0?"), session="q0")
    for q in range(1, 8):  # every request a new session of one turn: the load term weighs 1
        assert (await router.choose(chat(system, f"question {q}?"), session=f"q{q}")) is home
    home.inflight = 2
    assert (await router.choose(chat(system, "question 9?"), session="q9")) is home


def guarded(router: Router) -> float:
    return sum(ROUTE_DECISIONS.labels("vllm", r.name, "load_guard")._value.get() for r in router.pool.replicas.values())


async def test_overload_breaks_stickiness_and_moves_the_session() -> None:
    router = make_router()
    body = chat(long_text("sys"), long_text("u0", 40))
    home = (await router.decide(router.request(body, "k1"))).replica
    home.inflight = 10  # others idle: 10 − 0 ≥ balance_abs and 10 ≥ 1.5 × mean
    counted = guarded(router)
    moved = await router.decide(router.request(body, "k1"))
    assert moved.replica is not home and moved.reason == "load_guard"
    assert guarded(router) == counted + 1  # the decision is counted under its reason
    assert await router.sessions.get("k1") == moved.replica.name
    home.inflight = 2  # mild imbalance stays sticky
    decision = await router.decide(router.request(body, "k1"))
    assert decision.replica is moved.replica and decision.reason == "session"


async def test_load_guard_thresholds_need_both_absolute_and_relative_excess() -> None:
    policy = make_policy("cache_aware", RoutingParams(balance_abs=4, balance_rel=1.5))
    replicas = [Replica(u) for u in URLS]
    for r, load in zip(replicas, (20, 18, 17, 16), strict=True):
        r.inflight = load  # 20 − 16 ≥ 4 but 20 < 1.5 × 16: busy everywhere is not overload
    assert policy.overloaded(replicas) == set()  # type: ignore[attr-defined]
    replicas[0].inflight = 40
    assert policy.overloaded(replicas) == {replicas[0].name}  # type: ignore[attr-defined]


async def test_cold_placement_is_deterministic_across_gateways() -> None:
    """Two routers with no shared state place a new session identically (rendezvous tie-break)."""
    a, b = make_router(), make_router()
    for s in range(20):
        body = chat(long_text(f"sys{s}"), "hello")
        assert (await a.choose(body)).name == (await b.choose(body)).name


async def test_session_header_binds_across_gateways_sharing_a_store() -> None:
    store = MemoryStore()
    a, b = make_router(store=store), make_router(store=store)
    # Gateway b has seen another conversation with the same prefix on another replica ...
    body = chat(long_text("shared"), "first question")
    on_b = await b.choose(body, session="other")
    # ... gateway a places session "s1" elsewhere by its own view,
    a.pool.replicas[on_b.name].inflight = 50
    on_a = await a.choose(body, session="s1")
    assert on_a.name != on_b.name
    # and b follows the binding for s1, not its own index.
    later = chat(long_text("shared"), "first question", "answer", "second question")
    assert (await b.choose(later, session="s1")).name == on_a.name


async def test_a_session_whose_replica_is_gone_moves_with_reason_failover() -> None:
    router = make_router()
    body = chat(long_text("sys"), "q")
    home = await router.decide(router.request(body, "k"))
    router.pool.eject(home.replica, "test")
    moved = await router.decide(router.request(body, "k"))
    assert moved.replica is not home.replica and moved.reason == "failover"
    assert await router.sessions.get("k") == moved.replica.name


def test_learned_capacity_converts_tokens_to_chunks() -> None:
    policy = make_policy("cache_aware", RoutingParams(chunk_bytes=64, bytes_per_token=4))
    policy.set_capacity("r", 16 * 1000)
    assert policy.index.capacity("r") == 1000  # type: ignore[attr-defined]
    fixed = make_policy("cache_aware", RoutingParams(index_capacity=77))
    fixed.set_capacity("r", 16 * 1000)
    assert fixed.index.capacity("r") == 77  # type: ignore[attr-defined]


def test_unknown_policy_and_params_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown routing policy"):
        make_policy("random", RoutingParams())
    with pytest.raises(ValueError):
        RoutingParams.parse({"w_prefx": 1})


def test_hrw_order_is_a_permutation() -> None:
    replicas = [Replica(u) for u in URLS]
    assert sorted(r.name for r in hrw_order("k", replicas)) == sorted(r.name for r in replicas)


def test_bytes_per_token_is_learned_from_the_replicas_prompt_token_counter() -> None:
    from gateway.routing.policies import CacheAware
    from gateway.routing.scrape import ReplicaStats

    policy = CacheAware(RoutingParams(chunk_bytes=64, bytes_per_token=4))
    replica = Replica(URLS[0])
    policy.observe(replica.name, None, ReplicaStats(kv_tokens=64_000, prompt_tokens=0))
    assert policy.index.capacity(replica.name) == 4000
    prev = ReplicaStats(kv_tokens=64_000, prompt_tokens=0)
    for step in range(1, 4):  # 8 bytes of rendered request per token the replica counted
        req = RouteRequest("m", {"prompt": "x" * 32_000}, "k")
        req.keys(policy.params)
        policy.placed(req, replica)
        stats = ReplicaStats(kv_tokens=64_000, prompt_tokens=4_000 * step)
        policy.observe(replica.name, prev, stats)
        prev = stats
    assert policy.bytes_per_token == pytest.approx(8.0)
    assert policy.index.capacity(replica.name) == 8000
    frozen = CacheAware(RoutingParams(calibrate=False))
    frozen.observe(replica.name, ReplicaStats(prompt_tokens=0), ReplicaStats(prompt_tokens=9_000))
    assert frozen.bytes_per_token == 4.0


async def test_two_gateways_sharing_redis_send_a_session_to_the_same_replica(redis_server) -> None:  # type: ignore[no-untyped-def]
    """Issue 12: gateways with different local views agree on a session through the shared store."""
    from gateway.config import Settings
    from gateway.stores import open_store

    stores = [open_store(Settings(redis_url=redis_server.url)) for _ in range(2)]
    try:
        a, b = (Router(ReplicaPool(URLS), store=s) for s in stores)
        session = f"conv-{id(a)}"  # unique on the shared redis-server
        for replica in b.pool.replicas.values():
            replica.inflight = 1
        first = await a.choose(chat(long_text("sys"), "hello"), session=session)
        b.pool.replicas[first.name].inflight = 3  # b sees that replica busier than a did
        for turn in range(3):
            body = chat(long_text("sys"), "hello", "answer", f"turn {turn}")
            assert (await b.choose(body, session=session)).name == first.name
            assert (await a.choose(body, session=session)).name == first.name
    finally:
        for s in stores:
            await s.close()
