"""Gateway settings: defaults, then a `--config` YAML file, then the environment (which wins).

Environment names are the contract's (`GATEWAY_REDIS_URL`, `OPENAI_API_KEY`, ...). The YAML file
uses the field names below (`redis_url: ...`) and may also hold what has no environment form:
extra OpenAI-compatible upstreams, price overrides, routing and semantic-cache tuning.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from gateway.policy.models import Duration
from gateway.vendors.registry import BUILTIN

# Each built-in vendor with a key or a base URL has the settings fields `<name>_api_key` and
# `<name>_base_url` (config file) and the environment names its spec declares.
_VENDOR_FIELDS: dict[str, tuple[str, str]] = {}  # settings field → (vendor, "api_key" | "base_url")
_VENDOR_ENV: dict[str, str] = {}  # environment name → settings field
for _spec in BUILTIN:
    for _kind, _env in (("api_key", _spec.key_env), ("base_url", _spec.base_url_env)):
        if _env is not None:
            _VENDOR_FIELDS[_spec.settings_field(_kind)] = (_spec.name, _kind)
            _VENDOR_ENV[_env] = _spec.settings_field(_kind)
VENDOR_BASE_URLS = {s.name: s.default_base_url for s in BUILTIN if s.base_url_env is not None}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PriceOverride(_Section):
    """Per-token USD prices; any field left out comes from litellm's cost map."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None  # Anthropic 5m write / OpenAI write
    cache_write_1h: float | None = None  # Anthropic 1h write
    storage_per_token_hour: float | None = None  # Gemini explicit cache storage


class UpstreamConfig(_Section):
    """An OpenAI-compatible upstream declared in the config file (Qwen, Moonshot, ...)."""

    name: str
    base_url: str  # as the OpenAI SDK takes it, with /v1 where the vendor has it
    api_key: str | None = Field(default=None, description="env:VARNAME reference to the key")
    models: list[str]  # fnmatch patterns of model names served by it
    usage_dialect: Literal["openai", "deepseek"] = "openai"
    prices: dict[str, PriceOverride] = Field(default_factory=dict)


class RoutingConfig(_Section):
    policy: Literal["cache_aware", "round_robin", "least_loaded", "consistent_hash"] = "cache_aware"
    params: dict[str, Any] = Field(default_factory=dict)  # policy tuning; documented in docs/routing.md
    health_interval: Duration = 5.0
    metrics_interval: Duration = 2.0
    dns_interval: Duration = 30.0


class SemanticConfig(_Section):
    params: dict[str, Any] = Field(default_factory=dict)  # guard tuning; documented in docs/semantic-cache.md


class UsageConfig(_Section):
    flush_interval: Duration = 0.5
    max_records: int = 100_000  # newest records kept in the capped log


class Settings(_Section):
    host: str = "127.0.0.1"
    port: int = 8080
    redis_url: str | None = None
    qdrant_url: str | None = None
    data_dir: Path = Path(".gateway-data")
    policies: Path = Path("policies")
    admin_key: SecretStr | None = None
    embedding_model: str | None = None

    # per built-in vendor (gateway/vendors): `<vendor>_api_key` and `<vendor>_base_url` fold into these
    api_keys: dict[str, SecretStr] = Field(default_factory=dict)
    base_urls: dict[str, str] = Field(default_factory=dict)
    vllm_endpoints: list[str] = Field(default_factory=list)
    # Cloud platforms (gateway/vendors/azure.py, vertex.py, bedrock.py); their keys and base URLs are above.
    azure_openai_api_version: str = "2024-10-21"  # for deployment paths
    vertex_project: str | None = None  # unset: no Vertex AI upstream
    vertex_location: str = "us-central1"
    vertex_credentials: str | None = None  # a service-account key file; unset: Application Default Credentials
    bedrock_region: str | None = None  # unset: no Bedrock upstream (credentials: the standard AWS chain)

    connect_timeout: Duration = 5.0
    read_timeout: Duration = 600.0  # between bytes; long generations stream for minutes
    max_body_bytes: int = 16 * 1024 * 1024
    store_timeout: Duration = 0.1  # Redis/Qdrant calls on the request path
    # How often each process looks for changed policy files. The admin reload reaches only the
    # process that answers it; this makes every replica and worker converge on the mounted files.
    policy_check_interval: Duration = 10.0
    upstreams: list[UpstreamConfig] = Field(default_factory=list)
    prices: dict[str, PriceOverride] = Field(default_factory=dict)
    routing: RoutingConfig = RoutingConfig()
    semantic: SemanticConfig = SemanticConfig()
    usage: UsageConfig = UsageConfig()

    @model_validator(mode="before")
    @classmethod
    def _fold_vendor_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(k in _VENDOR_FIELDS for k in data):
            return data
        data = dict(data)
        keys, urls = dict(data.get("api_keys") or {}), dict(data.get("base_urls") or {})
        for name in [k for k in data if k in _VENDOR_FIELDS]:
            vendor, kind = _VENDOR_FIELDS[name]
            value = data.pop(name)
            if value is not None:
                (keys if kind == "api_key" else urls)[vendor] = value
        data["api_keys"], data["base_urls"] = keys, urls
        return data

    def vendor_key(self, provider: str) -> str | None:
        secret = self.api_keys.get(provider)
        return secret.get_secret_value() if secret else None

    def base_url(self, provider: str) -> str:
        return (self.base_urls.get(provider) or VENDOR_BASE_URLS.get(provider, "")).rstrip("/")

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any:
            # `settings.openai_base_url` and the like, as the config file spells them
            found = _VENDOR_FIELDS.get(name)
            if found is None:
                return super().__getattr__(name)
            vendor, kind = found
            if kind == "api_key":
                return self.api_keys.get(vendor)
            return self.base_urls.get(vendor) or VENDOR_BASE_URLS[vendor]

    @classmethod
    def load(cls, config_file: str | Path | None = None, env: dict[str, str] | None = None,
             **overrides: Any) -> Settings:
        data: dict[str, Any] = {}
        if config_file:
            loaded = yaml.safe_load(Path(config_file).read_text()) or {}
            if not isinstance(loaded, dict):
                raise ValueError(f"{config_file}: the config file must be a mapping")
            data.update(loaded)
        data.update(_from_env(os.environ if env is None else env))
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(data)


_ENV = {
    "GATEWAY_HOST": "host",
    "GATEWAY_PORT": "port",
    "GATEWAY_REDIS_URL": "redis_url",
    "GATEWAY_QDRANT_URL": "qdrant_url",
    "GATEWAY_DATA_DIR": "data_dir",
    "GATEWAY_POLICIES": "policies",
    "GATEWAY_ADMIN_KEY": "admin_key",
    "GATEWAY_EMBEDDING_MODEL": "embedding_model",
    "GATEWAY_VLLM_ENDPOINTS": "vllm_endpoints",
    "GATEWAY_AZURE_OPENAI_API_VERSION": "azure_openai_api_version",
    "GATEWAY_VERTEX_PROJECT": "vertex_project",
    "GATEWAY_VERTEX_LOCATION": "vertex_location",
    "GOOGLE_APPLICATION_CREDENTIALS": "vertex_credentials",
    "GATEWAY_BEDROCK_REGION": "bedrock_region",
    **_VENDOR_ENV,
}


def _from_env(env: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for var, name in _ENV.items():
        value = env.get(var)
        if value is None or value == "":
            continue
        if name == "vllm_endpoints":
            out[name] = [v.strip() for v in value.split(",") if v.strip()]
        else:
            out[name] = value
    return out
