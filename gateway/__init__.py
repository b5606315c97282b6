"""llm-cache-gateway: a caching reverse proxy for LLM vendor APIs and vLLM replicas."""

__version__ = "0.1.0"
