"""The one table of built-in vendors, in the order model names are matched against their patterns.

Adding a vendor: declare its `VendorSpec` in a module of its own in this folder and add it here. The
vLLM pool and the config file's OpenAI-compatible upstreams are matched before these (`gateway/providers.py`).
"""

from __future__ import annotations

from gateway.accounting.normalize import register_reader
from gateway.vendors import anthropic, azure, bedrock, deepseek, gemini, mistral, openai, vertex, vllm
from gateway.vendors.spec import VendorSpec

BUILTIN: tuple[VendorSpec, ...] = (
    vllm.SPEC,
    anthropic.SPEC,
    gemini.SPEC,
    deepseek.SPEC,
    mistral.SPEC,
    openai.SPEC,
    azure.SPEC,
    vertex.SPEC,
    bedrock.SPEC,
)

VENDORS: dict[str, VendorSpec] = {spec.name: spec for spec in BUILTIN}

for _spec in BUILTIN:  # a vendor's own usage object is read by name for stored answers too
    if _spec.usage is not None:
        register_reader(_spec.usage.name, _spec.usage.read)


def get(name: str) -> VendorSpec | None:
    return VENDORS.get(name)


def owner_of_client(protocol: str) -> VendorSpec | None:
    """The vendor that serves every client of `protocol` whatever the model (native Messages, Gemini)."""
    return next((s for s in BUILTIN if protocol in s.owns_clients), None)


def by_model(model: str, protocol: str = "") -> VendorSpec | None:
    """The built-in vendor for a model name alone (no pool, no config): for offline tools."""
    owner = owner_of_client(protocol)
    if owner is not None:
        return owner
    return next((s for s in BUILTIN if not s.pooled and s.serves(model)), None)


def lint_hints(protocol: str) -> tuple[tuple[str, ...], str]:
    """(prefix fields, default model) of `protocol` from the vendor that declares it."""
    for spec in BUILTIN:
        if protocol in spec.lint.prefix_fields:
            return spec.lint.prefix_fields[protocol], spec.lint.default_model
    return (), ""


def error_shape_of_path(path: str) -> str:
    """The error dialect of a gateway path: the vendor whose surface it is, else OpenAI's."""
    return next((s.error_shape for s in BUILTIN if s.owns_path is not None and s.owns_path(path)), "openai")
