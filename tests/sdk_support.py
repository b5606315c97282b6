"""Shared by test packages: one chat request through the official async OpenAI SDK, as a client sees it."""

from __future__ import annotations

import inspect

import openai


async def ask_chat(client: openai.AsyncOpenAI, prompt: str, *, stream: bool) -> tuple[str | None, str]:
    """The gateway's `x-gateway-cache` status and the answer's text, streamed or whole."""
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], stream=stream)
    parsed = raw.parse()
    if inspect.isawaitable(parsed):  # the async client's stream parses to an awaitable
        parsed = await parsed
    if not stream:
        return raw.headers.get("x-gateway-cache"), parsed.choices[0].message.content or ""
    text = ""
    async for chunk in parsed:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
    return raw.headers.get("x-gateway-cache"), text
