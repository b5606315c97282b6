"""The official SDKs reading bytes the gateway rendered.

Each helper gives an SDK client whose HTTP transport (`httpx2.MockTransport`) answers every
request with the given bytes: what is tested is the SDK's parsing of our output, the same code
that parses a live vendor answer. The requests the SDK sent are kept in `sent`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import anthropic
import httpx2
import openai
import pydantic
from google import genai
from google.genai import types as genai_types


@dataclass
class Served:
    body: bytes
    status: int = 200
    content_type: str = "application/json"
    piece: int = 0  # > 0: the body is delivered in pieces of this many bytes
    sent: list[httpx2.Request] = field(default_factory=list)

    def _content(self) -> bytes | Iterator[bytes]:
        if self.piece <= 0:
            return self.body
        return (self.body[i:i + self.piece] for i in range(0, len(self.body), self.piece))

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(request)
        return httpx2.Response(self.status, content=self._content(),
                               headers={"content-type": self.content_type, "x-should-retry": "false"})

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))


def sse(body: bytes, piece: int = 0) -> Served:
    return Served(body, content_type="text/event-stream", piece=piece)


def openai_client(served: Served) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url="http://gateway.test/v1", http_client=served.client(),
                         max_retries=0)


def anthropic_client(served: Served) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url="http://gateway.test", http_client=served.client(),
                               max_retries=0)


def genai_client(served: Served) -> genai.Client:
    return genai.Client(api_key="AIza-test", http_options=genai_types.HttpOptions(
        base_url="http://gateway.test", httpx_client=served.client()))


def _walk(obj: object, path: str, found: list[str]) -> None:
    if isinstance(obj, pydantic.BaseModel):
        extra = getattr(obj, "model_extra", None) or {}
        found.extend(f"{path}.{k}" for k in sorted(extra))
        for name in type(obj).model_fields:
            _walk(getattr(obj, name), f"{path}.{name}", found)
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            _walk(item, f"{path}[{i}]", found)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk(v, f"{path}.{k}", found)


def assert_declared(*objs: object) -> None:
    """Every field of these SDK-parsed objects is declared by its SDK type (nothing we rendered is
    unknown to the SDK), as the emulator tests require of the emulators."""
    found: list[str] = []
    for obj in objs:
        _walk(obj, type(obj).__name__, found)
    assert not found, f"fields the SDK types do not declare: {found}"
