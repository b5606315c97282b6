"""Request shapes of the OpenAI-compatible endpoints: Chat Completions (OpenAI, DeepSeek), Responses,
Embeddings, and vLLM's chat and text completions (validated lax, as vLLM's pydantic models are).

Only the fields the emulators read, or whose type the vendor documents plainly, are declared; bounds are the
API reference's (n 1-128, temperature 0-2, top_p 0-1, penalties -2..2, max_output_tokens >= 16)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from gateway_dev.emulators.shapes import Shape, by_type

Temperature = Annotated[float, Field(ge=0, le=2)]
Unit = Annotated[float, Field(ge=0, le=1)]
Penalty = Annotated[float, Field(ge=-2, le=2)]


# -- chat ---------------------------------------------------------------------------------------------------
class ImageURL(Shape):
    url: str
    detail: str | None = None


class InputAudio(Shape):
    data: str
    format: str | None = None


class FileRef(Shape):
    file_id: str | None = None
    file_data: str | None = None
    filename: str | None = None


class _Part(Shape):
    prompt_cache_breakpoint: dict[str, Any] | None = None


class TextPart(_Part):
    type: Literal["text"]
    text: str


class RefusalPart(_Part):
    type: Literal["refusal"]
    refusal: str


class ImagePart(_Part):
    type: Literal["image_url"]
    image_url: ImageURL


class AudioPart(_Part):
    type: Literal["input_audio"]
    input_audio: InputAudio


class FilePart(_Part):
    type: Literal["file"]
    file: FileRef


ChatPart = by_type(TextPart, ImagePart, AudioPart, RefusalPart, FilePart)


class FunctionCall(Shape):
    name: str
    arguments: str


class ToolCall(Shape):
    id: str | None = None
    type: str | None = None
    function: FunctionCall


class ChatMessage(Shape):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ChatPart] | None = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[ToolCall] | None = None


class FunctionDef(Shape):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ChatTool(Shape):
    type: str = "function"
    function: FunctionDef | None = None


class NamedFunction(Shape):
    name: str


class ChatToolChoice(Shape):
    type: str
    function: NamedFunction | None = None


class JSONSchemaFormat(Shape):
    name: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None


class ResponseFormat(Shape):
    type: str
    json_schema: JSONSchemaFormat | None = None


class StreamOptions(Shape):
    include_usage: bool | None = None
    include_obfuscation: bool | None = None


class CacheOptions(Shape):
    mode: str | None = None
    ttl: str | None = None
    prewarm: bool | None = None


class ChatCompletionRequest(Shape):
    model: str | None = None  # a missing model gets the endpoint's own message
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    n: Annotated[int, Field(ge=1, le=128)] | None = None
    temperature: Temperature | None = None
    top_p: Unit | None = None
    presence_penalty: Penalty | None = None
    frequency_penalty: Penalty | None = None
    seed: int | None = None
    stop: str | Annotated[list[str], Field(max_length=4)] | None = None
    tools: list[ChatTool] | None = None
    tool_choice: str | ChatToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    reasoning_effort: str | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    user: str | None = None
    store: bool | None = None
    metadata: dict[str, str] | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    prompt_cache_options: CacheOptions | None = None


# -- Responses ----------------------------------------------------------------------------------------------
class ResponsesPart(Shape):
    type: str
    text: str | None = None
    image_url: str | None = None
    file_id: str | None = None
    file_data: str | None = None
    file_url: str | None = None
    detail: str | None = None
    prompt_cache_breakpoint: dict[str, Any] | None = None


class ResponsesItem(Shape):
    type: str | None = None
    role: str | None = None
    content: str | list[ResponsesPart] | None = None
    name: str | None = None
    arguments: str | None = None
    call_id: str | None = None
    output: str | list[dict[str, Any]] | None = None


class ResponsesTool(Shape):
    type: str
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ResponsesToolChoice(Shape):
    type: str
    name: str | None = None


class TextFormat(Shape):
    type: str
    name: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")


class TextConfig(Shape):
    format: TextFormat | None = None
    verbosity: str | None = None


class Reasoning(Shape):
    effort: str | None = None
    summary: str | None = None


class ResponsesRequest(Shape):
    model: str | None = None
    input: str | list[ResponsesItem] | None = None  # missing: render_responses words it
    instructions: str | None = None
    previous_response_id: str | None = None
    stream: bool | None = None
    max_output_tokens: Annotated[int, Field(ge=16)] | None = None
    reasoning: Reasoning | None = None
    text: TextConfig | None = None
    tools: list[ResponsesTool] | None = None
    tool_choice: str | ResponsesToolChoice | None = None
    parallel_tool_calls: bool | None = None
    temperature: Temperature | None = None
    top_p: Unit | None = None
    store: bool | None = None
    metadata: dict[str, str] | None = None
    user: str | None = None
    truncation: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    prompt_cache_options: CacheOptions | None = None


# -- Embeddings ---------------------------------------------------------------------------------------------
class EmbeddingsRequest(Shape):
    model: str | None = None
    input: Any = None  # str | list[str] | list[int] | list[list[int]]: the endpoint words its own 400
    dimensions: Annotated[int, Field(ge=1)] | None = None
    encoding_format: Literal["float", "base64"] | None = None
    user: str | None = None


# -- vLLM ---------------------------------------------------------------------------------------------------
class VLLMChatRequest(Shape):
    """vLLM's ChatCompletionRequest, for the fields the replica reads (validated with strict=False)."""

    model: str | None = None
    messages: list[ChatMessage]
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    n: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0)] | None = None
    stop: str | list[str] | None = None
    tools: list[ChatTool] | None = None
    tool_choice: str | ChatToolChoice | None = None
    cache_salt: str | None = None


class VLLMCompletionRequest(Shape):
    model: str | None = None
    prompt: str | list[str] | list[int] | list[list[int]]
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: int | None = None
    stop: str | list[str] | None = None
    cache_salt: str | None = None


class VLLMTokenizeRequest(Shape):
    model: str | None = None
    messages: list[ChatMessage] | None = None
    prompt: str | None = None
