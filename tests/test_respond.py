"""Streaming behaviour of the respond step: a client disconnect ends the upstream stream, unless
single-flight followers ride on it; the SSE splitter handles every framing; a cut upstream stream is
relayed but never completes."""

from __future__ import annotations

import asyncio
import inspect
import re
import time

import aiohttp
import httpx2
import openai
import pytest

from gateway.protocols.sse import SSESplitter
from gateway_dev.emulators.harness import EmulatorSet

KEY = "key-acme"


def _running(url: str) -> float:
    text = httpx2.get(f"{url}/metrics").text
    match = re.search(r"^vllm:num_requests_running(?:\{[^}]*\})? ([0-9.e+-]+)$", text, re.M)
    assert match, text[:500]
    return float(match.group(1))


def test_a_client_disconnect_ends_the_upstream_stream(gateway_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with EmulatorSet(vllm_replicas=1) as emu:
        gw = gateway_factory({"acme": {"key": KEY, "response_cache": {"enabled": False}}}, emulators_=emu)
        client = gw.openai(KEY)
        model = next(m.id for m in client.models.list() if m.owned_by == "vllm")
        # ~200 tokens at 50 ms each: the upstream would stream for ~10 s
        stream = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Tell me a long story."}], stream=True,
            max_tokens=200, extra_headers={"x-emulator-latency": "itl=0.05"})
        received = 0
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                received += 1
            if received >= 2:
                break
        assert _running(emu.vllm_urls[0]) == 1
        stream.close()  # the client goes away mid-answer
        deadline = time.monotonic() + 3
        while _running(emu.vllm_urls[0]) != 0:
            assert time.monotonic() < deadline, "the upstream kept generating after the client left"
            time.sleep(0.05)


async def test_a_leader_whose_client_left_is_read_to_the_end_for_its_followers(gateway_factory, emulators) -> None:  # type: ignore[no-untyped-def]
    gw = gateway_factory({"acme": {"key": KEY}})
    prompt = "Explain connection draining, for a request that follows another."
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{emulators.openai_base_url}/chat/completions", json=body,
                                headers={"authorization": "Bearer sk-direct"}) as direct:
            right = (await direct.json())["choices"][0]["message"]["content"]
        # The leader: a slow stream (30 ms a token) whose client reads the first piece, then hangs up
        # once a second client with the same question is riding on it.
        leader = await session.post(f"{gw.url}/v1/chat/completions", json={**body, "stream": True},
                                    headers={"authorization": f"Bearer {KEY}", "x-emulator-latency": "itl=0.03"})
        assert leader.status == 200 and leader.headers["x-gateway-cache"] == "miss"
        await leader.content.readany()
        client = openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key=KEY, max_retries=0)
        raw = await client.chat.completions.with_raw_response.create(**body, stream=True)
        follower = raw.parse()
        if inspect.isawaitable(follower):
            follower = await follower
        chunks = follower.__aiter__()
        text = "".join(c.choices[0].delta.content or "" for c in [await chunks.__anext__()] if c.choices)
        leader.connection.transport.abort()  # type: ignore[union-attr]
        leader.close()
        async for chunk in chunks:  # an upstream failure would raise here, as an in-stream error
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
        assert text == right
        assert raw.headers["x-gateway-cache"] == "miss"  # it rode the leader's upstream call
        await asyncio.to_thread(gw.wait_idle)
        # The whole answer was read for the follower, so it is stored like any complete answer.
        again = await client.chat.completions.with_raw_response.create(**body)
        assert again.headers["x-gateway-cache"] == "response-hit"
        whole = again.parse()
        if inspect.isawaitable(whole):
            whole = await whole
        assert whole.choices[0].message.content == right
    calls = [r for r in emulators.requests("openai.chat") if (r.body or {}).get("messages") == body["messages"]]
    assert len(calls) == 2  # the direct one, and the leader's: the follower never went upstream


async def test_a_leader_whose_client_left_alone_is_not_stored(gateway_factory) -> None:  # type: ignore[no-untyped-def]
    gw = gateway_factory({"acme": {"key": KEY}})
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "A stream nobody follows."}]}
    async with aiohttp.ClientSession() as session:
        leader = await session.post(f"{gw.url}/v1/chat/completions", json={**body, "stream": True},
                                    headers={"authorization": f"Bearer {KEY}", "x-emulator-latency": "itl=0.03"})
        await leader.content.readany()
        leader.connection.transport.abort()  # type: ignore[union-attr]
        leader.close()
    await asyncio.sleep(0.2)
    await asyncio.to_thread(gw.wait_idle)
    client = openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key=KEY, max_retries=0)
    again = await client.chat.completions.with_raw_response.create(**body)
    assert again.headers["x-gateway-cache"] == "miss"


def test_a_cut_upstream_stream_reaches_the_client_as_an_error_not_a_clean_end(gw_plain) -> None:  # type: ignore[no-untyped-def]
    import anthropic

    client = gw_plain.anthropic(KEY)
    with pytest.raises(anthropic.APIError), client.messages.stream(model="claude-sonnet-4-6", max_tokens=100,
                                messages=[{"role": "user", "content": "Hi"}],
                                extra_headers={"x-emulator-fault": "stream_error_after=2"}) as stream:
        stream.get_final_message()


@pytest.fixture
def gw_plain(gateway_factory):  # type: ignore[no-untyped-def]
    return gateway_factory({"acme": {"key": KEY, "response_cache": {"enabled": False}}})


@pytest.mark.parametrize("sep", [b"\n\n", b"\r\n\r\n"])
def test_sse_splitter_any_split(sep: bytes) -> None:
    events = [b'data: {"a":1}', b"event: x\ndata: 2", b"data: [DONE]"]
    stream = sep.join(events) + sep
    for cut in range(1, len(stream)):
        splitter = SSESplitter()
        got = splitter.feed(stream[:cut]) + splitter.feed(stream[cut:])
        if sep == b"\r\n\r\n":
            got = [e.replace(b"\r\n", b"\n") for e in got]
            expected = [e.replace(b"\r\n", b"\n") for e in events]
        else:
            expected = events
        assert got == expected, cut
        assert splitter.rest() == b""
