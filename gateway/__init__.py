"""llm-cache-gateway: a caching reverse proxy for LLM vendor APIs and vLLM replicas."""

import os as _os

# litellm (prices, token counts) otherwise fetches its cost map from GitHub at import time; a VPC
# has no such egress, and the bundled map is what the gateway prices with.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

__version__ = "0.1.0"
