"""Fixtures for the emulator tests: one running EmulatorSet for the session (zero latency, frozen clock),
reset before every test, and `assert_sdk_object`, which checks that an object the official SDK parsed from
an emulator response has no field its type does not declare and re-validates it against the type."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from gateway_dev.emulators import EmulatorSet

LONG_SYSTEM = (
    "You are the support assistant of Acme Corp. Follow the handbook below exactly and cite the section. "
    + " ".join(f"Section {i}: customers may return items within {i + 10} days if the receipt is kept."
               for i in range(80))
)


@pytest.fixture(scope="session")
def emu() -> Iterator[EmulatorSet]:
    with EmulatorSet(vllm_replicas=2, latency="zero") as e:
        yield e


@pytest.fixture(autouse=True)
def _fresh(request: pytest.FixtureRequest) -> Iterator[None]:
    if "emu" in request.fixturenames:
        e: EmulatorSet = request.getfixturevalue("emu")
        e.reset(caches=True)
        e.latency.zero()
        e.state.valid_keys = None
        e.state.output_tokens = 40
    yield


def _walk(obj: Any, path: str) -> None:
    if isinstance(obj, pydantic.BaseModel):
        extra = getattr(obj, "model_extra", None) or {}
        assert not extra, f"{path} ({type(obj).__name__}) has fields its SDK type lacks: {sorted(extra)}"
        for name in type(obj).model_fields:
            _walk(getattr(obj, name), f"{path}.{name}")
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            _walk(item, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk(v, f"{path}.{k}")


def assert_sdk_object(obj: Any, *, allow_extra: bool = False) -> None:
    """`obj` was built by an SDK from emulator JSON: re-validate it strictly against its own type (required
    fields, literals) and, unless `allow_extra`, require that every field is declared by the type."""
    assert isinstance(obj, pydantic.BaseModel), type(obj)
    if not allow_extra:
        _walk(obj, type(obj).__name__)
    data = obj.to_dict() if hasattr(obj, "to_dict") else obj.model_dump(by_alias=True, exclude_none=True)
    type(obj).model_validate(data)


@pytest.fixture
def sdk_check() -> Any:
    return assert_sdk_object


@pytest.fixture
def long_system() -> str:
    """About 1,500 tokens: above OpenAI's and most Claude models' cache minimum, below Haiku 4.5's."""
    return LONG_SYSTEM
