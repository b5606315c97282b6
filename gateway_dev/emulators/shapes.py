"""Request-shape validation shared by the emulators.

Each endpoint declares, as a pydantic model (shapes_openai.py, shapes_anthropic.py, shapes_gemini.py), the
type of every field it reads; unknown fields pass, as they do at the vendors, whose SDKs add fields all the
time. `check()` runs at the endpoint's entry and turns the first failure into that vendor's own 400:

- OpenAI: `invalid_request_error` with `param` ("messages[0].content") and a code (`invalid_type`,
  `missing_required_parameter`, `invalid_value`, `integer_below_min_value`, ...), in OpenAI's wording;
- DeepSeek: its documented 422 "Invalid Parameters", in serde's wording, OpenAI's shape;
- Anthropic: `invalid_request_error` "<dotted.path>: <pydantic message>" (Anthropic validates with pydantic);
- Gemini: `INVALID_ARGUMENT` "Invalid value at '<snake_path>' (TYPE_X), <value>" (the proto JSON parser's);
- vLLM: `BadRequestError` with pydantic's own text (vLLM validates with FastAPI/pydantic, lax mode).

Bodies nested deeper than MAX_DEPTH are refused before anything walks them, so no recursive walk downstream
(canon's orjson.dumps, Gemini's key normalization, tool-argument generation) can exhaust the stack.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Union, get_args

import orjson
from pydantic import BaseModel, ConfigDict, Discriminator, Tag, ValidationError

from gateway_dev.emulators.web import EmulatorError

MAX_DEPTH = 100  # protobuf's default recursion limit; far beyond any real request (a guess for the others)

_DEEP = {
    "openai": f"Invalid body: the JSON is nested more than {MAX_DEPTH} levels deep.",
    "anthropic": f"Request body is nested more than {MAX_DEPTH} levels deep.",
    "gemini": f"Invalid JSON payload received. Nesting is deeper than {MAX_DEPTH} levels.",
}


class Shape(BaseModel):
    """Base of every request shape: strict JSON types (no "1" for 1, no 1 for true), extra fields allowed."""

    model_config = ConfigDict(extra="allow", strict=True)


def by_type(*members: type[BaseModel]) -> Any:
    """A union of object shapes picked by their `type` field (each member declares `type: Literal[...]`).
    Tags read "type=<value>" so they never look like a body key in an error location; an unknown, missing or
    non-string `type` is one `part_type` error that `shape_error` words like the vendor does."""
    tags: dict[str, type[BaseModel]] = {}
    for m in members:
        for value in get_args(m.model_fields["type"].annotation):
            tags[value] = m
    expected = _or_list(list(tags))

    def pick(v: Any) -> str | None:
        t = v.get("type") if isinstance(v, dict) else getattr(v, "type", None)
        return f"type={t}" if isinstance(t, str) else None

    choices = tuple(Annotated[m, Tag(f"type={value}")] for value, m in tags.items())
    return Annotated[Union[choices], Discriminator(  # noqa: UP007 - a runtime tuple of members
        pick, custom_error_type="part_type", custom_error_message=f"Input tag should be {expected}",
        custom_error_context={"expected": expected})]


def _or_list(values: list[str]) -> str:
    quoted = [repr(v) for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def too_deep(obj: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `obj` nests dicts/lists more than `limit` levels (iterative: safe on any depth)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def check_depth(body: Any, vendor: str) -> None:
    if isinstance(body, dict | list) and too_deep(body):
        raise EmulatorError(vendor, 400, _DEEP.get(vendor, _DEEP["openai"]),
                            code="invalid_json" if vendor in ("openai", "deepseek") else None)


def check(shape: type[BaseModel], body: dict[str, Any], vendor: str, *, strict: bool = True) -> BaseModel:
    """Validate `body` against `shape`; raise the vendor's 400 (EmulatorError) on the first failure."""
    check_depth(body, vendor)
    # A top-level null is an absent field (proto3 JSON's rule, and the vendors' in practice): a required
    # one is then "missing", not "should be a valid integer".
    present = {k: v for k, v in body.items() if v is not None}
    try:
        return shape.model_validate(present, strict=strict)
    except ValidationError as exc:
        raise shape_error(exc, body, vendor, shape.__name__) from None


def explain(shape: type[BaseModel], body: Any, vendor: str, *, strict: bool = True) -> None:
    """After an unexpected failure on a path that skipped `check` (the vLLM hot path): raise the vendor's 400
    when the body is malformed; return when it is well-formed, so the caller re-raises its own error."""
    if isinstance(body, dict):
        check(shape, body, vendor, strict=strict)


# -- ValidationError -> the vendor's words -------------------------------------------------------------------
def shape_error(exc: ValidationError, body: dict[str, Any], vendor: str, title: str) -> EmulatorError:
    errors = [_part_type(e) for e in exc.errors(include_url=False)]
    located = [(_path(body, e), e) for e in errors]
    # The first failing field, and within it the deepest location: for `content: str | list[Part]` given
    # [5] that is content[0] ("expected an object"), not content ("expected a string").
    head = located[0][0][:1]
    group = [pe for pe in located if pe[0][:1] == head]
    deepest = max(len(p) for p, _ in group)
    path = next(p for p, _ in group if len(p) == deepest)
    same = [e for p, e in group if p == path]
    if vendor == "anthropic":
        return EmulatorError(vendor, 400, _anthropic_message(path, same[0]), type="invalid_request_error")
    if vendor == "gemini":
        return EmulatorError(vendor, 400, _gemini_message(path, same[0], title), type="INVALID_ARGUMENT")
    if vendor == "vllm":
        return EmulatorError(vendor, 400, str(exc), type="BadRequestError", param=_dotted(path) or None)
    if vendor == "deepseek":
        return EmulatorError(vendor, 422, _serde_message(path, same), type="invalid_request_error",
                             code="invalid_request_error")
    message, code = _openai_message(path, same)
    return EmulatorError(vendor, 400, message, type="invalid_request_error", param=_openai_path(path) or None,
                         code=code)


def _part_type(e: Any) -> Any:
    """A `by_type` union that could not pick a member, as the plain error it stands for."""
    if e["type"] != "part_type":
        return e
    value, loc = e["input"], (*e["loc"], "type")
    if not isinstance(value, dict):
        return {**e, "type": "model_type", "msg": "Input should be a valid dictionary", "ctx": {}}
    if "type" not in value:
        return {**e, "type": "missing", "loc": loc, "msg": "Field required", "ctx": {}}
    if not isinstance(value["type"], str):
        return {**e, "type": "string_type", "loc": loc, "input": value["type"], "msg": "Input should be a valid string",
                "ctx": {}}
    expected = e["ctx"]["expected"]
    return {**e, "type": "literal_error", "loc": loc, "input": value["type"], "msg": f"Input should be {expected}",
            "ctx": {"expected": expected}}


def _path(body: Any, error: Any) -> tuple[str | int, ...]:
    """The error's location in the body itself: pydantic's `loc` also names union members ("str",
    "list[ChatPart]", "type=text"), which index nothing in the body and are dropped."""
    loc: Sequence[str | int] = error["loc"]
    node, out = body, []
    for i, part in enumerate(loc):
        into_dict = isinstance(node, dict) and isinstance(part, str) and part in node
        if into_dict or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            node = node[part]
            out.append(part)
        elif error["type"] == "missing" and i == len(loc) - 1:
            out.append(part)
    return tuple(out)


def _openai_path(path: Sequence[str | int]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def _dotted(path: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in path)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


_EXPECTED = {"string_type": "a string", "int_type": "an integer", "float_type": "a decimal",
             "bool_type": "a boolean", "dict_type": "an object", "model_type": "an object",
             "model_attributes_type": "an object", "union_tag_not_found": "an object", "list_type": "an array"}
_BELOW = {"greater_than_equal": "ge", "greater_than": "gt"}
_ABOVE = {"less_than_equal": "le", "less_than": "lt"}


def _openai_message(path: Sequence[str | int], errors: list[Any]) -> tuple[str, str]:
    where = _openai_path(path)
    first = errors[0]
    kind, ctx, value = first["type"], first.get("ctx") or {}, first.get("input")
    if kind == "missing":
        return f"Missing required parameter: '{where}'.", "missing_required_parameter"
    expected = [_EXPECTED[e["type"]] for e in errors if e["type"] in _EXPECTED]
    if expected:
        wanted = expected[0] if len(expected) == 1 else "one of " + " or ".join(dict.fromkeys(expected))
        return f"Invalid type for '{where}': expected {wanted}, but got {_json_kind(value)} instead.", "invalid_type"
    number = "integer" if isinstance(value, int) and not isinstance(_bound(ctx), float) else "decimal"
    if kind in _BELOW:
        bound = _number(ctx.get(_BELOW[kind]))
        return (f"Invalid '{where}': {number} below minimum value. Expected a value >= {bound}, but got {value} "
                "instead.", f"{number}_below_min_value")
    if kind in _ABOVE:
        bound = _number(ctx.get(_ABOVE[kind]))
        return (f"Invalid '{where}': {number} above maximum value. Expected a value <= {bound}, but got {value} "
                "instead.", f"{number}_above_max_value")
    if kind == "too_short" and isinstance(value, list) and not value:
        return (f"Invalid '{where}': empty array. Expected an array with minimum length "
                f"{ctx.get('min_length', 1)}, but got an empty array instead.", "empty_array")
    if kind == "too_short":
        return (f"Invalid '{where}': array too short. Expected an array with minimum length "
                f"{ctx.get('min_length')}, but got an array with length {len(value)} instead.",
                "array_below_min_length")
    if kind == "too_long":
        return (f"Invalid '{where}': array too long. Expected an array with maximum length "
                f"{ctx.get('max_length')}, but got an array with length {len(value)} instead.",
                "array_above_max_length")
    if kind in ("literal_error", "union_tag_invalid"):
        got = ctx.get("tag", value)
        allowed = ctx.get("expected") or ctx.get("expected_tags") or ""
        return f"Invalid value: {_short(got)}. Supported values are: {allowed}.", "invalid_value"
    return f"Invalid value for '{where}': {first['msg']}.", "invalid_value"


def _bound(ctx: dict[str, Any]) -> Any:
    return next((ctx[k] for k in ("ge", "gt", "le", "lt") if k in ctx), None)


def _number(bound: Any) -> Any:
    return int(bound) if isinstance(bound, float) and bound.is_integer() else bound


def _short(value: Any) -> str:
    """OpenAI's quoting: 'text' for strings, JSON for the rest (at most 100 characters)."""
    return repr(value[:100]) if isinstance(value, str) else _json_text(value)


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()[:100]
    except TypeError:  # pragma: no cover - the input came from orjson.loads
        return repr(value)[:100]


_SERDE = {"string_type": "a string", "int_type": "i64", "float_type": "f64", "bool_type": "a boolean",
          "dict_type": "a map", "model_type": "struct", "list_type": "a sequence"}


def _serde_message(path: Sequence[str | int], errors: list[Any]) -> str:
    """DeepSeek's API is Rust (axum + serde): "Failed to deserialize the JSON body into the target type"."""
    first = errors[0]
    where = _dotted(path) or "body"
    if first["type"] == "missing":
        return f"Failed to deserialize the JSON body into the target type: missing field `{path[-1]}`"
    got = first.get("input")
    wanted = " or ".join(dict.fromkeys(_SERDE.get(e["type"], e["msg"]) for e in errors))
    return (f"Failed to deserialize the JSON body into the target type: {where}: invalid type: "
            f"{_json_kind(got).split(' ', 1)[-1]} {_json_text(got)}, expected {wanted}")


_ANTHROPIC_MSG = {"model_type": "Input should be a valid dictionary or object to extract fields from",
                  "model_attributes_type": "Input should be a valid dictionary or object to extract fields from"}


def _anthropic_message(path: Sequence[str | int], error: Any) -> str:
    message = _ANTHROPIC_MSG.get(error["type"], error["msg"])
    return f"{_dotted(path)}: {message}" if path else message


_PROTO = {"string_type": "TYPE_STRING", "int_type": "TYPE_INT32", "float_type": "TYPE_FLOAT",
          "bool_type": "TYPE_BOOL", "list_type": "TYPE_MESSAGE", "dict_type": "TYPE_MESSAGE"}
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _gemini_message(path: Sequence[str | int], error: Any, title: str) -> str:
    snake = ""
    for p in path:
        snake += f"[{p}]" if isinstance(p, int) else ("." if snake else "") + _CAMEL.sub(r"_\1", p).lower()
    kind = error["type"]
    if kind in _PROTO or kind == "model_type":
        proto = _PROTO.get(kind) or "type.googleapis.com/google.ai.generativelanguage.v1beta." + \
            str((error.get("ctx") or {}).get("class_name", "Message"))
        return f"Invalid value at '{snake}' ({proto}), {_json_text(error.get('input'))}"
    return f"* {title}.{snake}: {error['msg']}\n"
