"""Request-shape validation (gateway_dev/emulators/shapes*.py): each vendor's wording of a malformed body, the
depth limit, and vLLM's lax coercions. No server: `check` is called directly."""

from __future__ import annotations

from typing import Any

import pytest

from gateway_dev.emulators.shapes import MAX_DEPTH, check, check_depth, too_deep
from gateway_dev.emulators.shapes_anthropic import CountTokensRequest, MessagesRequest
from gateway_dev.emulators.shapes_gemini import CachedContent, GenerateContentRequest
from gateway_dev.emulators.shapes_openai import (
    ChatCompletionRequest,
    EmbeddingsRequest,
    ResponsesRequest,
    VLLMChatRequest,
    VLLMCompletionRequest,
)
from gateway_dev.emulators.web import EmulatorError, error_body

MSGS = [{"role": "user", "content": "hi"}]


def refused(shape: Any, body: dict[str, Any], vendor: str, **kw: Any) -> EmulatorError:
    with pytest.raises(EmulatorError) as e:
        check(shape, body, vendor, **kw)
    return e.value


def nested(levels: int) -> Any:
    """`levels` objects inside each other."""
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(("body", "message", "param", "code"), [
    ({"stream": "yes"}, "Invalid type for 'stream': expected a boolean, but got a string instead.", "stream",
     "invalid_type"),
    ({"messages": [{"role": "user", "content": 5}]},
     "Invalid type for 'messages[0].content': expected one of a string or an array, but got an integer instead.",
     "messages[0].content", "invalid_type"),
    ({"messages": [{"role": "user", "content": [5]}]},
     "Invalid type for 'messages[0].content[0]': expected an object, but got an integer instead.",
     "messages[0].content[0]", "invalid_type"),
    ({"messages": [{"role": "user", "content": [{"type": "video"}]}]},
     "Invalid value: 'video'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal' or 'file'.",
     "messages[0].content[0].type", "invalid_value"),
    ({"messages": [{"role": "user", "content": [{"type": "text"}]}]},
     "Missing required parameter: 'messages[0].content[0].text'.", "messages[0].content[0].text",
     "missing_required_parameter"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": 5}}]}]},
     "Invalid type for 'messages[0].content[0].image_url.url': expected a string, but got an integer instead.",
     "messages[0].content[0].image_url.url", "invalid_type"),
    ({"messages": [{"role": "robot", "content": "x"}]},
     "Invalid value: 'robot'. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool' or "
     "'function'.", "messages[0].role", "invalid_value"),
    ({"messages": []}, "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
     "array instead.", "messages", "empty_array"),
    ({"messages": None}, "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"),
    ({"n": 0}, "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead.", "n",
     "integer_below_min_value"),
    ({"n": 100000}, "Invalid 'n': integer above maximum value. Expected a value <= 128, but got 100000 instead.",
     "n", "integer_above_max_value"),
    ({"temperature": 3}, "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 "
     "instead.", "temperature", "decimal_above_max_value"),
    ({"max_tokens": 1.5}, "Invalid type for 'max_tokens': expected an integer, but got a decimal instead.",
     "max_tokens", "invalid_type"),
    ({"stop": ["a", 1]}, "Invalid type for 'stop[1]': expected a string, but got an integer instead.", "stop[1]",
     "invalid_type"),
    ({"tool_choice": {}}, "Missing required parameter: 'tool_choice.type'.", "tool_choice.type",
     "missing_required_parameter"),
    ({"stream_options": []}, "Invalid type for 'stream_options': expected an object, but got an array instead.",
     "stream_options", "invalid_type"),
])
def test_openai_chat_wording(body: dict[str, Any], message: str, param: str, code: str) -> None:
    err = refused(ChatCompletionRequest, {"model": "gpt-4o", "messages": MSGS, **body}, "openai")
    assert (err.status, err.message, err.param, err.code) == (400, message, param, code)
    assert error_body(err)["error"] == {"message": message, "type": "invalid_request_error", "param": param,
                                        "code": code}


def test_openai_responses_and_embeddings_wording() -> None:
    err = refused(ResponsesRequest, {"model": "gpt-5", "input": "x", "previous_response_id": [1]}, "openai")
    assert err.param == "previous_response_id" and err.code == "invalid_type"
    err = refused(ResponsesRequest, {"model": "gpt-5", "input": "x", "max_output_tokens": 8}, "openai")
    assert err.code == "integer_below_min_value" and "Expected a value >= 16" in err.message
    err = refused(EmbeddingsRequest, {"model": "text-embedding-3-small", "input": "x", "dimensions": 0}, "openai")
    assert err.param == "dimensions" and err.code == "integer_below_min_value"
    check(ResponsesRequest, {"model": "gpt-5", "input": None}, "openai")  # the endpoint words a missing input


def test_deepseek_answers_422_in_serde_words() -> None:
    err = refused(ChatCompletionRequest, {"model": "deepseek-chat", "messages": MSGS, "stream": "yes"}, "deepseek")
    assert err.status == 422 and err.type == "invalid_request_error"
    assert err.message == ('Failed to deserialize the JSON body into the target type: stream: invalid type: '
                           'string "yes", expected a boolean')
    err = refused(ChatCompletionRequest, {"model": "deepseek-chat"}, "deepseek")
    assert err.message.endswith("missing field `messages`")


@pytest.mark.parametrize(("body", "message"), [
    ({"messages": {}}, "messages: Input should be a valid list"),
    ({"messages": [1]}, "messages.0: Input should be a valid dictionary or object to extract fields from"),
    ({"messages": [{"role": "user", "content": [1]}]},
     "messages.0.content.0: Input should be a valid dictionary or object to extract fields from"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role: Input should be 'user' or 'assistant'"),
    ({"thinking": "on"}, "thinking: Input should be a valid dictionary or object to extract fields from"),
    ({"tool_choice": "auto"}, "tool_choice: Input should be a valid dictionary or object to extract fields from"),
    ({"stream": "yes"}, "stream: Input should be a valid boolean"),
    ({"max_tokens": None}, "max_tokens: Field required"),
    ({"max_tokens": 0}, "max_tokens: Input should be greater than or equal to 1"),
    ({"stop_sequences": "END"}, "stop_sequences: Input should be a valid list"),
])
def test_anthropic_wording(body: dict[str, Any], message: str) -> None:
    err = refused(MessagesRequest, {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": MSGS, **body},
                  "anthropic")
    assert (err.status, err.message) == (400, message)
    assert error_body(err)["error"] == {"type": "invalid_request_error", "message": message}


def test_anthropic_count_tokens_needs_no_max_tokens() -> None:
    check(CountTokensRequest, {"model": "claude-sonnet-4-5", "messages": MSGS}, "anthropic")


@pytest.mark.parametrize(("body", "message"), [
    ({"contents": [{"parts": [{"text": 5}]}]}, "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5"),
    ({"contents": ["hi"]}, "Invalid value at 'contents[0]' "
     "(type.googleapis.com/google.ai.generativelanguage.v1beta.Content), \"hi\""),
    ({"generationConfig": {"maxOutputTokens": "many"}},
     "Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32), \"many\""),
    ({"cachedContent": ["x"]}, "Invalid value at 'cached_content' (TYPE_STRING), [\"x\"]"),
    ({"tools": [{"functionDeclarations": [{}]}]},
     "* GenerateContentRequest.tools[0].function_declarations[0].name: Field required\n"),
])
def test_gemini_wording(body: dict[str, Any], message: str) -> None:
    err = refused(GenerateContentRequest, {"contents": [{"parts": [{"text": "hi"}]}], **body}, "gemini")
    assert (err.status, err.message) == (400, message)
    assert error_body(err)["error"] == {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}


def test_gemini_cached_content_fields() -> None:
    err = refused(CachedContent, {"model": "gemini-2.5-flash", "ttl": 3600}, "gemini")
    assert err.message == "Invalid value at 'ttl' (TYPE_STRING), 3600"


def test_vllm_is_lax_like_its_pydantic_models() -> None:
    parsed = check(VLLMChatRequest, {"messages": MSGS, "stream": "true", "max_tokens": "16"}, "vllm", strict=False)
    assert parsed.model_dump(exclude_unset=True)["stream"] is True
    assert parsed.model_dump(exclude_unset=True)["max_tokens"] == 16
    err = refused(VLLMChatRequest, {"messages": MSGS, "stream": "maybe"}, "vllm", strict=False)
    assert err.status == 400 and err.param == "stream"
    assert err.message.startswith("1 validation error for VLLMChatRequest\nstream\n  Input should be a valid boolean")
    assert error_body(err)["error"]["type"] == "BadRequestError" and error_body(err)["error"]["code"] == 400
    err = refused(VLLMCompletionRequest, {"prompt": {"a": 1}}, "vllm", strict=False)
    assert err.param == "prompt"


def test_depth_limit_is_iterative_and_vendor_worded() -> None:
    assert not too_deep(nested(MAX_DEPTH))
    assert too_deep(nested(MAX_DEPTH + 1))
    assert too_deep(nested(100_000))  # no RecursionError at any depth
    for vendor, status in (("openai", "invalid_request_error"), ("anthropic", "invalid_request_error"),
                           ("gemini", "INVALID_ARGUMENT")):
        with pytest.raises(EmulatorError) as e:
            check_depth({"x": nested(5000)}, vendor)
        assert e.value.status == 400 and f"{MAX_DEPTH} levels" in e.value.message
        body = error_body(e.value)
        assert (body["error"].get("type") or body["error"].get("status")) == status
