"""The semantic cache: Qdrant-backed, tenant-filtered, exact-context, guarded against one-slot edits.

- `stage.SemanticCacheStage`: the pipeline stage (lookup in `before`, write in `after`).
- `guard.decide`: the decision (cosine, then the lexical guard) used live and by `bench semantic`.
- `embedder.Embedder`: micro-batched, off-loop embeddings with an LRU.
- `store.VectorStore` with `edge.EdgeStore` (embedded default) and `client.ClientStore` (server).
"""

from gateway.semantic.guard import GuardParams, Verdict, decide
from gateway.semantic.stage import SemanticCacheStage, open_vector_store

__all__ = ["GuardParams", "SemanticCacheStage", "Verdict", "decide", "open_vector_store"]
