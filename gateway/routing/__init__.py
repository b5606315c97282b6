"""Cache-aware routing over a pool of vLLM replicas (docs/routing.md)."""

from gateway.routing.pool import Replica, ReplicaPool
from gateway.routing.router import Router, RouteStage

__all__ = ["Replica", "ReplicaPool", "RouteStage", "Router"]
