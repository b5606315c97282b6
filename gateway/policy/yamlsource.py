"""YAML with line numbers: plain values plus a map from each value's path to where it was written.

PyYAML's `safe_load` forgets positions, so the file is composed into nodes (which keep marks) and
built here. Every path (`("response_cache", "ttl")`, `("api_keys", 1)`) gets the file and line of
its key (mapping entries) or of the item (sequence entries), which is what a pydantic error's `loc`
is mapped back to.

The resolver is YAML 1.2-like on purpose: only true/false are booleans (YAML 1.1 turns `off` into
False, which would make `prompt_cache_key: off` a type error) and dates stay strings (so
`version: 2026-11-01` is the string the user wrote).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gateway.policy.issues import PolicyIssue

Path_ = tuple[str | int, ...]
MAX_VALUES = 100_000  # alias bombs ("billion laughs") stop here instead of eating memory

_BOOL = "tag:yaml.org,2002:bool"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"


class _Loader(yaml.SafeLoader):
    pass


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


@dataclass(frozen=True, slots=True)
class Pos:
    file: str
    line: int


@dataclass
class Parsed:
    """One parsed file: `value` is None when the file could not be parsed at all."""

    file: str
    value: Any = None
    positions: dict[Path_, Pos] = field(default_factory=dict)
    issues: list[PolicyIssue] = field(default_factory=list)


def parse_yaml(text: str, file: str) -> Parsed:
    out = Parsed(file)
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return out  # empty document
        out.positions[()] = Pos(file, root.start_mark.line + 1)
        builder = _Builder(loader, out)
        out.value = builder.build(root, ())
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 0
        # Not str(e): it quotes the offending line, which may hold a key pasted in plain text.
        problem = " ".join(p for p in (e.context, e.problem) if p) or "invalid YAML"
        out.issues.append(PolicyIssue(file, line, "", f"YAML error: {problem}"))
        out.value = None
    except yaml.YAMLError as e:
        out.issues.append(PolicyIssue(file, 0, "", f"YAML error: {e}"))
        out.value = None
    except _TooBig:
        out.issues.append(PolicyIssue(file, 0, "", f"more than {MAX_VALUES} values (alias expansion?)"))
        out.value = None
    finally:
        loader.dispose()
    return out


class _TooBig(Exception):
    pass


class _Builder:
    def __init__(self, loader: _Loader, out: Parsed) -> None:
        self.loader = loader
        self.out = out
        self.count = 0
        self.stack: set[int] = set()  # node ids on the current path: a recursive alias is refused

    def _issue(self, node: Node, path: Path_, message: str) -> None:
        self.out.issues.append(PolicyIssue(self.out.file, node.start_mark.line + 1, format_path(path), message))

    def build(self, node: Node, path: Path_) -> Any:
        self.count += 1
        if self.count > MAX_VALUES:
            raise _TooBig
        if isinstance(node, ScalarNode):
            return self.loader.construct_object(node, deep=True)
        if id(node) in self.stack:
            self._issue(node, path, "a recursive YAML alias")
            return None
        self.stack.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                items = []
                for i, item in enumerate(node.value):
                    self.out.positions.setdefault((*path, i), Pos(self.out.file, item.start_mark.line + 1))
                    items.append(self.build(item, (*path, i)))
                return items
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
        finally:
            self.stack.discard(id(node))
        self._issue(node, path, "unsupported YAML node")
        return None

    def _mapping(self, node: MappingNode, path: Path_) -> dict[str, Any]:
        # Duplicate keys are checked among the keys written here; keys brought in by a `<<` merge
        # are meant to be overridden, so the check runs before flatten_mapping.
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE or not isinstance(key_node, ScalarNode):
                continue
            key = self.loader.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                self._issue(key_node, (*path, str(key)), f"duplicate key (first written at line {seen[key]})")
            else:
                seen[key] = line
        self.loader.flatten_mapping(node)
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                self._issue(key_node, path, "a mapping key must be a plain name")
                continue
            key = self.loader.construct_object(key_node)
            if not isinstance(key, str):
                key = str(key)  # `1: x` becomes field "1", which the model then calls unknown
            # A later entry (explicit key after a `<<` merge) wins, and so does its position.
            self.out.positions[(*path, key)] = Pos(self.out.file, key_node.start_mark.line + 1)
            result[key] = self.build(value_node, (*path, key))
        return result


def format_path(path: Path_) -> str:
    """`("semantic_cache", "exclusive_terms", 0, 1)` → `semantic_cache.exclusive_terms[0][1]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text
