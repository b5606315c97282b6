"""SGLang's RadixAttention prefix cache, token by token (the default `page_size` 1).

What the emulated SGLang replica does with it (SGLang's `RadixCache` and scheduler):
- The tree's edges are token sequences; a prompt reuses the longest prefix of its tokens found in the tree,
  at token granularity (no 16-token blocks), at most `len(prompt) - 1` tokens: one token is always computed
  to get the next-token logits (`adjust_max_prefix_ids`).
- While a request runs, the nodes of its prefix are locked (never evicted). Its prompt is inserted at
  admission (others can share it at once); when it finishes, prompt + output are inserted and it unlocks.
- The KV pool holds `max_total_num_tokens` tokens; an admission that does not fit evicts unlocked leaves,
  least recently used first; if it still does not fit, the request waits in the queue.
- `num_used_tokens` = pool tokens that cannot be freed (locked tree tokens + running requests' output).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence


class Node:
    __slots__ = ("children", "key", "last", "lock", "parent")

    def __init__(self, key: tuple[int, ...] = (), parent: Node | None = None) -> None:
        self.key = key
        self.parent = parent
        self.children: dict[int, Node] = {}
        self.lock = 0
        self.last = 0


class RadixCache:
    def __init__(self, max_total_tokens: int) -> None:
        if max_total_tokens < 1:
            raise ValueError("max_total_tokens must be positive")
        self.capacity = max_total_tokens
        self.root = Node()
        self.root.lock = 1  # never evicted
        self.tree_tokens = 0  # tokens stored in the tree
        self.locked_tokens = 0  # tree tokens on some running request's path
        self.private = 0  # tokens held by running requests outside the tree (their output so far)
        self._tick = itertools.count(1)
        self.queries = 0  # prompt tokens (sglang:prompt_tokens_total)
        self.hits = 0  # cached prompt tokens (sglang:cached_tokens_total)
        self.evictions = 0  # tokens evicted

    # -- lookups --------------------------------------------------------------------------------------
    def match(self, tokens: Sequence[int]) -> tuple[int, Node]:
        """Longest cached prefix of `tokens[:-1]`: (length, the node where it ends), splitting an edge that
        matches only in part (as SGLang's `match_prefix` does)."""
        key = tuple(tokens[: max(0, len(tokens) - 1)])
        node, i, now = self.root, 0, next(self._tick)
        while i < len(key):
            child = node.children.get(key[i])
            if child is None:
                break
            n = _common(child.key, key, i)
            child.last = now
            if n < len(child.key):
                node = self._split(child, n)
                i += n
                break
            node, i = child, i + n
        return i, node

    def _split(self, child: Node, n: int) -> Node:
        parent = child.parent
        assert parent is not None
        mid = Node(child.key[:n], parent)
        mid.lock, mid.last = child.lock, child.last
        parent.children[mid.key[0]] = mid
        child.key = child.key[n:]
        child.parent = mid
        mid.children[child.key[0]] = child
        return mid

    def insert(self, tokens: Sequence[int]) -> Node:
        """Add `tokens` to the tree (the part not there yet); the node where they end."""
        key = tuple(tokens)
        node, i, now = self.root, 0, next(self._tick)
        while i < len(key):
            child = node.children.get(key[i])
            if child is None:
                leaf = Node(key[i:], node)
                leaf.last = now
                node.children[key[i]] = leaf
                self.tree_tokens += len(leaf.key)
                return leaf
            n = _common(child.key, key, i)
            child.last = now
            if n < len(child.key):
                child = self._split(child, n)
            node, i = child, i + n
        return node

    # -- locks ----------------------------------------------------------------------------------------
    def lock(self, node: Node) -> None:
        while node is not self.root and node is not None:
            if node.lock == 0:
                self.locked_tokens += len(node.key)
            node.lock += 1
            node = node.parent  # type: ignore[assignment]

    def unlock(self, node: Node) -> None:
        while node is not self.root and node is not None:
            node.lock -= 1
            if node.lock == 0:
                self.locked_tokens -= len(node.key)
            node = node.parent  # type: ignore[assignment]

    # -- capacity -------------------------------------------------------------------------------------
    @property
    def free(self) -> int:
        return self.capacity - self.tree_tokens - self.private

    @property
    def used(self) -> int:
        """SGLang's `num_used_tokens`: what no eviction can free."""
        return self.locked_tokens + self.private

    def evict(self, tokens: int) -> int:
        """Free at least `tokens` by dropping unlocked leaves, least recently used first; tokens freed."""
        heap = [(n.last, id(n), n) for n in self._leaves() if n.lock == 0]
        heapq.heapify(heap)
        freed = 0
        while heap and freed < tokens:
            _, _, leaf = heapq.heappop(heap)
            parent = leaf.parent
            if parent is None or leaf.children or leaf.lock:
                continue
            del parent.children[leaf.key[0]]
            freed += len(leaf.key)
            self.tree_tokens -= len(leaf.key)
            if parent is not self.root and not parent.children and parent.lock == 0:
                heapq.heappush(heap, (parent.last, id(parent), parent))
        self.evictions += freed
        return freed

    def _leaves(self) -> list[Node]:
        out, stack = [], [self.root]
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node is not self.root:
                out.append(node)
        return out

    # -- a request ------------------------------------------------------------------------------------
    def admit(self, prompt: Sequence[int], output_tokens: int) -> tuple[Node, int] | None:
        """Reserve room for `prompt` + `output_tokens`: (the prompt's node, cached tokens), or None when the
        pool cannot make room now (the request waits)."""
        matched, node = self.match(prompt)
        self.lock(node)
        need = len(prompt) - matched + output_tokens
        if self.free < need:
            self.evict(need - self.free)
        if self.free < need:
            self.unlock(node)
            return None
        self.unlock(node)
        end = self.insert(prompt)
        self.lock(end)
        self.private += output_tokens
        self.queries += len(prompt)
        self.hits += matched
        return end, matched

    def finish(self, node: Node, prompt: Sequence[int], output: Sequence[int], reserved: int) -> None:
        """The request is over: its output joins the tree (when it completed), its locks go."""
        self.private -= reserved
        if output:
            self.insert([*prompt, *output])
        self.unlock(node)

    def reset(self) -> None:
        self.__init__(self.capacity)  # type: ignore[misc]

    @property
    def usage(self) -> float:
        return self.used / self.capacity


def _common(edge: tuple[int, ...], key: tuple[int, ...], start: int) -> int:
    n = 0
    limit = min(len(edge), len(key) - start)
    while n < limit and edge[n] == key[start + n]:
        n += 1
    return n
