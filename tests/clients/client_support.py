"""What the client tests ask for: the structured-output types, the tool, and the checks on what comes back."""

from __future__ import annotations

import json
from typing import Any

import pydantic


class Address(pydantic.BaseModel):
    city: str
    postcode: str | None = None


class Trip(pydantic.BaseModel):
    """Nested models, an Optional field, an enum-like Literal and nested arrays: what broke before."""

    destination: str
    days: int
    travel: str = pydantic.Field(json_schema_extra={"enum": ["train", "plane"]})
    stops: list[Address]
    grid: list[list[int]]
    hotel: Address | None = None


WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                  "required": ["city"], "additionalProperties": False}


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"18C and sunny in {city}"


def tool_result_for(arguments: Any) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
    return get_weather(str(args.get("city") or "Paris"))


def trip_from(text: str) -> Trip:
    return Trip.model_validate_json(text)
