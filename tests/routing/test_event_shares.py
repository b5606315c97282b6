"""The cache-aware policy with the engines' KV events beside its own prediction."""

from __future__ import annotations

from .test_policies import chat, long_text, make_router


async def test_events_do_not_hide_a_prefix_that_a_request_in_flight_is_computing() -> None:
    """An engine reports a block stored only once it is computed: while the group's first request still
    queues or prefills on its replica, the events show the prefix nowhere. The group's next request must
    still join it there; once no request carrying the prefix is in flight, the events decide (the blocks may
    have been evicted since)."""
    router = make_router()
    policy = router.policy
    replicas = router.pool.candidates("m")
    system = long_text("grp")
    first = router.request(chat(system, "first?"), "s1")
    home, _ = policy.select(first, replicas, None)
    policy.placed(first, home)
    nowhere = {r.name: 0.0 for r in replicas}  # the stream is live, the blocks not reported yet
    second = router.request(chat(system, "second?"), "s2")
    second.event_share = dict(nowhere)
    assert policy.select(second, replicas, None) == (home, "prefix")
    policy.ended(first, home)  # nothing of the group in flight: the events' word stands
    third = router.request(chat(system, "third?"), "s3")
    third.event_share = {**nowhere, replicas[(replicas.index(home) + 1) % 4].name: 0.9}
    assert policy.select(third, replicas, None)[0].name == replicas[(replicas.index(home) + 1) % 4].name
