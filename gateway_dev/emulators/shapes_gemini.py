"""Request shapes of the Gemini API, in the wire's lowerCamelCase (gemini_wire.camel_keys normalizes snake_case).

Proto3 JSON also takes numbers as strings ("maxOutputTokens": "40"); these shapes want JSON numbers, which
is what every SDK sends (docs/emulators.md, guessed rules). Free-form JSON (function args, schemas) is
left untyped."""

from __future__ import annotations

from typing import Any

from gateway_dev.emulators.shapes import Shape


class Blob(Shape):
    mimeType: str | None = None
    data: str | None = None


class FileData(Shape):
    mimeType: str | None = None
    fileUri: str | None = None


class Part(Shape):
    text: str | None = None
    inlineData: Blob | None = None
    fileData: FileData | None = None
    functionCall: dict[str, Any] | None = None
    functionResponse: dict[str, Any] | None = None
    thought: bool | None = None
    thoughtSignature: str | None = None


class Content(Shape):
    role: str | None = None
    parts: list[Part] | None = None


class FunctionDeclaration(Shape):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    parametersJsonSchema: Any = None


class Tool(Shape):
    functionDeclarations: list[FunctionDeclaration] | None = None


class FunctionCallingConfig(Shape):
    mode: str | None = None
    allowedFunctionNames: list[str] | None = None


class ToolConfig(Shape):
    functionCallingConfig: FunctionCallingConfig | None = None


class ThinkingConfig(Shape):
    thinkingBudget: int | None = None
    includeThoughts: bool | None = None
    thinkingLevel: str | None = None


class GenerationConfig(Shape):
    maxOutputTokens: int | None = None
    stopSequences: list[str] | None = None
    temperature: float | None = None
    topP: float | None = None
    candidateCount: int | None = None
    seed: int | None = None
    responseMimeType: str | None = None
    responseSchema: dict[str, Any] | None = None
    responseJsonSchema: Any = None
    thinkingConfig: ThinkingConfig | None = None


class _Prompt(Shape):
    contents: list[Content] | None = None  # missing/empty: the endpoint's own words
    systemInstruction: Content | None = None
    tools: list[Tool] | None = None
    toolConfig: ToolConfig | None = None


class GenerateContentRequest(_Prompt):
    generationConfig: GenerationConfig | None = None
    cachedContent: str | None = None
    safetySettings: list[dict[str, Any]] | None = None


class CountTokensRequest(_Prompt):
    generateContentRequest: GenerateContentRequest | None = None


class CachedContent(_Prompt):
    """`cachedContents.create` and `.patch` (PATCH may carry only `ttl`/`expireTime`)."""

    model: str | None = None  # missing: the endpoint's own words
    displayName: str | None = None
    ttl: str | None = None
    expireTime: str | None = None
