"""The schema filler: every value it makes validates against its schema (checked with `jsonschema`), for the
shapes pydantic, zod and the vendors' own examples produce, and for generated schemas."""

from __future__ import annotations

import enum
from typing import Any, Literal

import jsonschema
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway_dev.emulators.schema_values import fill


def _text(name: str, schema: dict[str, Any]) -> str:
    return f"text for {name or 'value'}"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Node(pydantic.BaseModel):
    label: str
    children: list[Node] = []


class Item(pydantic.BaseModel):
    sku: str = pydantic.Field(min_length=12, max_length=20)
    qty: int = pydantic.Field(gt=0, le=5)
    price: float = pydantic.Field(ge=0.5, lt=0.75)
    step: int = pydantic.Field(multiple_of=7, ge=10)


class Order(pydantic.BaseModel):
    id: pydantic.UUID4
    placed: pydantic.AwareDatetime
    email: str | None = pydantic.Field(None, json_schema_extra={"format": "email"})
    color: Color
    kind: Literal["online", "store"]
    items: list[Item] = pydantic.Field(min_length=2)
    matrix: list[list[float]]
    tags: dict[str, int]
    tree: Node
    either: int | str
    maybe: Item | None


@pytest.mark.parametrize("model", [Order, Node, Item])
def test_pydantic_schemas_validate_and_parse(model: type[pydantic.BaseModel]) -> None:
    schema = model.model_json_schema()
    value = fill(schema, _text)
    jsonschema.validate(value, schema)
    model.model_validate(value)


SCHEMAS: list[dict[str, Any]] = [
    {"$ref": "#/$defs/a", "$defs": {"a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}},
                                          "required": ["b"], "additionalProperties": False},
                                    "b": {"type": "array", "items": {"type": "integer"}, "minItems": 3,
                                          "uniqueItems": True}}},
    {"definitions": {"x": {"type": "string", "enum": ["p", "q"]}}, "type": "object",
     "properties": {"x": {"$ref": "#/definitions/x"}}, "required": ["x"]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
               {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]},
    {"type": "object", "properties": {"v": {"oneOf": [{"type": "null"}, {"type": "number", "exclusiveMinimum": 3}]}},
     "required": ["v"]},
    {"type": ["null", "string"], "format": "date"},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
    {"type": "array", "items": {"type": "string"}, "maxItems": 0},
    {"const": {"fixed": [1, 2]}},
    {"type": "object", "properties": {"a": {"type": "string", "format": "ipv6"}, "b": {"format": "uri"}},
     "required": ["a", "b"], "minProperties": 2},
    {"type": "integer", "minimum": 2, "maximum": 2},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5},
    {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "boolean"}}, "minProperties": 2},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_hand_written_schemas(schema: dict[str, Any]) -> None:
    jsonschema.validate(fill(schema, _text), schema)


def test_gemini_openapi_type_words() -> None:
    schema = {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}, "s": {"type": "ARRAY",
                                                                                "items": {"type": "STRING"}}},
              "required": ["n", "s"]}
    value = fill(schema, _text)
    assert isinstance(value["n"], int) and isinstance(value["s"], list) and isinstance(value["s"][0], str)


def test_recursion_ends() -> None:
    schema = {"type": "object", "properties": {"next": {"$ref": "#"}, "v": {"type": "integer"}}, "required": ["v"]}
    value = fill(schema, _text)
    jsonschema.validate(value, schema)
    depth, node = 0, value
    while "next" in node:
        node, depth = node["next"], depth + 1
    assert 0 < depth < 20


def _schemas() -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.one_of(
        st.just({"type": "string"}), st.just({"type": "boolean"}), st.just({"type": "null"}),
        st.builds(lambda lo, w: {"type": "integer", "minimum": lo, "maximum": lo + w},
                  st.integers(-50, 50), st.integers(0, 20)),
        st.builds(lambda v: {"enum": v}, st.lists(st.one_of(st.integers(), st.text(max_size=5)), min_size=1,
                                                  max_size=3, unique=True)),
        st.builds(lambda f: {"type": "string", "format": f}, st.sampled_from(["date-time", "date", "email", "uuid"])),
    )

    def extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        return st.one_of(
            st.builds(lambda i, lo: {"type": "array", "items": i, "minItems": lo}, children, st.integers(0, 3)),
            st.builds(lambda props: {"type": "object", "properties": props, "required": sorted(props)[:1],
                                     "additionalProperties": False},
                      st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), children, max_size=4)),
            st.builds(lambda a, b: {"anyOf": [a, b]}, children, children),
        )

    return st.recursive(leaf, extend, max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_schemas())
def test_generated_schemas(schema: dict[str, Any]) -> None:
    jsonschema.validate(fill(schema, _text), schema)
