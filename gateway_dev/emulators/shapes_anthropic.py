"""Request shapes of Anthropic's `/v1/messages` and `/v1/messages/count_tokens`.

`cache_control` is left untyped here: anthropic_cache.py words its own errors for it (the TTL rules)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from gateway_dev.emulators.shapes import Shape


class Source(Shape):
    type: str | None = None
    data: str | None = None
    url: str | None = None
    file_id: str | None = None
    media_type: str | None = None


class Block(Shape):
    """Any content block: the fields each block type reads, typed; the `type` word itself is free (new block
    types appear often, and the emulator hashes unknown ones as they are)."""

    type: str
    text: str | None = None
    source: Source | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    tool_use_id: str | None = None
    content: str | list[Block] | None = None  # tool_result
    is_error: bool | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    cache_control: Any = None


class Message(Shape):
    role: Literal["user", "assistant"]
    content: str | list[Block]


class Tool(Shape):
    type: str | None = None
    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    cache_control: Any = None


class ToolChoice(Shape):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class Thinking(Shape):
    type: str
    budget_tokens: int | None = None


class JSONOutputFormat(Shape):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class OutputConfig(Shape):
    format: JSONOutputFormat | None = None
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None


class Metadata(Shape):
    user_id: str | None = None


class CountTokensRequest(Shape):
    model: str
    messages: list[Message]
    system: str | list[Block] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    cache_control: Any = None


class MessagesRequest(CountTokensRequest):
    max_tokens: Annotated[int, Field(ge=1)]
    stream: bool | None = None
    stop_sequences: list[str] | None = None
    temperature: Annotated[float, Field(ge=0, le=1)] | None = None
    top_p: Annotated[float, Field(ge=0, le=1)] | None = None
    top_k: Annotated[int, Field(ge=0)] | None = None
    metadata: Metadata | None = None
    service_tier: str | None = None
    output_config: OutputConfig | None = None
    output_format: JSONOutputFormat | None = None  # the structured-outputs beta's spelling
