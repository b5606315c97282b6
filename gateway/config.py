"""Gateway settings: defaults, then a `--config` YAML file, then the environment (which wins).

Environment names are the contract's (`GATEWAY_REDIS_URL`, `OPENAI_API_KEY`, ...). The YAML file
uses the field names below (`redis_url: ...`) and may also hold what has no environment form:
extra OpenAI-compatible upstreams, price overrides, routing and semantic-cache tuning.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from gateway.policy.models import Duration

VENDOR_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "deepseek": "https://api.deepseek.com",
}


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

    openai_api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None
    gemini_api_key: SecretStr | None = None
    deepseek_api_key: SecretStr | None = None
    openai_base_url: str = VENDOR_BASE_URLS["openai"]
    anthropic_base_url: str = VENDOR_BASE_URLS["anthropic"]
    gemini_base_url: str = VENDOR_BASE_URLS["gemini"]
    deepseek_base_url: str = VENDOR_BASE_URLS["deepseek"]
    vllm_endpoints: list[str] = Field(default_factory=list)

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

    def vendor_key(self, provider: str) -> str | None:
        secret = getattr(self, f"{provider}_api_key", None)
        return secret.get_secret_value() if secret else None

    def base_url(self, provider: str) -> str:
        return str(getattr(self, f"{provider}_base_url")).rstrip("/")

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
    "OPENAI_API_KEY": "openai_api_key",
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "GEMINI_API_KEY": "gemini_api_key",
    "DEEPSEEK_API_KEY": "deepseek_api_key",
    "GATEWAY_OPENAI_BASE_URL": "openai_base_url",
    "GATEWAY_ANTHROPIC_BASE_URL": "anthropic_base_url",
    "GATEWAY_GEMINI_BASE_URL": "gemini_base_url",
    "GATEWAY_DEEPSEEK_BASE_URL": "deepseek_base_url",
    "GATEWAY_VLLM_ENDPOINTS": "vllm_endpoints",
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
