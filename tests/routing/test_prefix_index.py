from __future__ import annotations

import subprocess
import sys

from gateway.routing.prefix_index import PrefixIndex, chunk_keys, render

SYSTEM = "You are a careful assistant. " * 20


def conversation(turns: int) -> dict:
    messages = [{"role": "system", "content": SYSTEM}]
    for t in range(turns):
        messages.append({"role": "user", "content": f"question {t}: " + "why? " * 10})
        if t < turns - 1:
            messages.append({"role": "assistant", "content": f"answer {t}: " + "because. " * 10})
    return {"model": "m", "messages": messages, "tools": [{"type": "function", "function": {"name": "f"}}]}


def test_render_of_a_conversation_is_a_prefix_of_its_next_turn() -> None:
    for t in range(1, 6):
        assert render(conversation(t + 1)).startswith(render(conversation(t)))


def test_render_ignores_key_order_and_covers_completions_and_responses() -> None:
    a = {"messages": [{"role": "user", "content": "x"}]}
    b = {"messages": [{"content": "x", "role": "user"}]}
    assert render(a) == render(b)
    assert render({"prompt": "hello"}) == b"hello"
    assert render({"input": [{"role": "user", "content": "a"}], "instructions": "be brief"}).startswith(b"be brief")


def test_chunk_keys_share_exactly_the_common_prefix() -> None:
    base = b"a" * 640
    same = chunk_keys(base + b"b" * 64, "m")
    other = chunk_keys(base + b"c" * 64, "m")
    assert len(same) == len(other) == 11
    assert same[:10] == other[:10] and same[10] != other[10]
    # a later divergence never makes later chunks look shared: keys are chained
    shifted = chunk_keys(b"z" * 64 + base[64:] + b"b" * 64, "m")
    assert not set(shifted) & set(same)


def test_partial_chunks_are_not_keyed_and_models_do_not_share() -> None:
    assert chunk_keys(b"x" * 63, "m") == []
    assert len(chunk_keys(b"x" * 130, "m")) == 2
    assert chunk_keys(b"x" * 128, "m") != chunk_keys(b"x" * 128, "other-model")
    assert len(chunk_keys(b"x" * 6400, "m", max_chunks=5)) == 5


def test_keys_are_the_same_in_another_process() -> None:
    """Two gateway processes (different PYTHONHASHSEED) must compute the same keys."""
    code = ("from gateway.routing.prefix_index import chunk_keys;"
            "print(chunk_keys(b'hello world ' * 40, 'm')[-1].hex())")
    outs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout.strip()
        for seed in ("1", "2")
    }
    assert outs == {chunk_keys(b"hello world " * 40, "m")[-1].hex()}


def test_match_counts_leading_chunks_per_replica() -> None:
    index = PrefixIndex(default_capacity=1000)
    one = chunk_keys(render(conversation(1)), "m")
    three = chunk_keys(render(conversation(3)), "m")
    index.insert("a", one)
    got = index.match(three, ["a", "b"])
    assert got["b"] == 0
    assert 0 < got["a"] == len(one) < len(three)
    index.insert("b", three)
    assert index.match(three, ["a", "b"]) == {"a": len(one), "b": len(three)}
    index.drop("b")
    assert index.match(three, ["b"]) == {"b": 0}


def test_lru_bound_evicts_the_tail_of_a_prompt_first() -> None:
    index = PrefixIndex(default_capacity=6)
    keys = chunk_keys(b"q" * 64 * 10, "m")
    index.insert("a", keys)
    assert index.size("a") == 6
    assert index.match(keys, ["a"]) == {"a": 6}  # the head survived, as on a vLLM replica
    other = chunk_keys(b"r" * 64 * 4, "m")
    index.insert("a", other)
    assert index.match(other, ["a"]) == {"a": 4}
    assert index.match(keys, ["a"]) == {"a": 2}
    index.set_capacity("a", 3)
    assert index.size("a") == 3 and index.occupancy("a") == 1.0
