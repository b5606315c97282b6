"""The exact response cache: key, stored entry, single-flight, the pipeline stage and purge."""

from gateway.cache.purge import purge
from gateway.cache.stage import ResponseCacheStage

__all__ = ["ResponseCacheStage", "purge"]
