"""A JSON value that validates against a JSON Schema, for tool arguments and structured outputs.

The vendors constrain decoding to the caller's schema, so what a structured-output client receives always
validates: this filler gives the emulators the same property for the schemas the vendors accept (OpenAI's
strict subset, Anthropic's JSON outputs, Gemini's `responseSchema` / `responseJsonSchema`):

- `type` (a word or a list; Gemini's OpenAPI words such as "STRING" too), `enum`, `const`;
- `$ref` to `#`, `#/$defs/...`, `#/definitions/...` (any local JSON pointer), recursion included;
- `anyOf` / `oneOf` (the first branch that is not null; null where recursion must stop), `allOf` (merged);
- objects: every property, required ones first; `additionalProperties` schemas (one entry when there are
  no properties); `minProperties`;
- arrays: `items`, `prefixItems`, `minItems` / `maxItems`, `uniqueItems`;
- strings: `format` (date-time, date, time, duration, email, hostname, uri, uuid, ipv4, ipv6),
  `minLength` / `maxLength`; numbers: `minimum` / `maximum` (exclusive too), `multipleOf`.

`pattern` is not followed (no vendor-accepted regex engine here); a schema that only a pattern restricts
gets a plain string. Depth is bounded: past MAX_DEPTH only required properties are filled, optional
branches become null, arrays empty where `minItems` allows, so recursive schemas end.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 8  # nesting levels filled in full; deeper levels get the smallest valid value
_HARD_LIMIT = 64  # refs followed or levels entered at most, whatever the schema says

_FORMATS = {
    "date-time": "2026-01-15T09:30:00Z", "date": "2026-01-15", "time": "09:30:00", "duration": "P1D",
    "email": "user@example.com", "hostname": "example.com", "uri": "https://example.com/", "url": "https://example.com/",
    "ipv4": "192.0.2.1", "ipv6": "2001:db8::1",
}
_OPENAPI_TYPES = {"STRING": "string", "NUMBER": "number", "INTEGER": "integer", "BOOLEAN": "boolean",
                  "ARRAY": "array", "OBJECT": "object", "NULL": "null"}

# A text for a string property: (property name, schema) -> str. Supplied by answers.py (topic words).
TextFor = Callable[[str, dict[str, Any]], str]


class SchemaFiller:
    def __init__(self, root: Any, text_for: TextFor, pick: Callable[[int], int] | None = None) -> None:
        self.root = root if isinstance(root, dict) else {}
        self.text_for = text_for
        self.pick = pick or (lambda n: 0)
        self._refs = 0

    # -- schema plumbing --------------------------------------------------------------------------------
    def resolve(self, schema: Any) -> dict[str, Any]:
        """`schema` with local `$ref`s followed (sibling keywords kept, as draft 2019+ reads them)."""
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < _HARD_LIMIT:
            target = self._pointer(schema["$ref"])
            seen += 1
            self._refs += 1
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **siblings} if siblings else target
        if schema is True or not isinstance(schema, dict):
            return {}
        return schema

    def _pointer(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return {}  # remote refs are refused by the vendors; read as "anything"
        node: Any = self.root
        for raw in ref[1:].lstrip("/").split("/") if ref != "#" else []:
            key = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                return {}
        return node

    def merged(self, schema: dict[str, Any]) -> dict[str, Any]:
        """allOf folded into one schema (properties and required joined)."""
        parts = schema.get("allOf")
        if not isinstance(parts, list) or not parts:
            return schema
        out = {k: v for k, v in schema.items() if k != "allOf"}
        props = dict(out.get("properties") or {})
        required = list(out.get("required") or [])
        for part in parts:
            p = self.merged(self.resolve(part))
            for k, v in p.items():
                if k == "properties" and isinstance(v, dict):
                    props.update(v)
                elif k == "required" and isinstance(v, list):
                    required += [r for r in v if r not in required]
                else:
                    out.setdefault(k, v)
        if props:
            out["properties"] = props
        if required:
            out["required"] = required
        return out

    @staticmethod
    def type_of(schema: dict[str, Any]) -> str | None:
        typ = schema.get("type")
        if isinstance(typ, list):
            words = [t for t in typ if isinstance(t, str)]
            typ = next((t for t in words if t.lower() != "null"), words[0] if words else None)
        if isinstance(typ, str):
            return _OPENAPI_TYPES.get(typ, typ.lower())
        if "properties" in schema or "additionalProperties" in schema:
            return "object"
        if "items" in schema or "prefixItems" in schema:
            return "array"
        return None

    # -- values ---------------------------------------------------------------------------------------
    def value(self, schema: Any, name: str = "", depth: int = 0) -> Any:
        s = self.merged(self.resolve(schema))
        shallow = depth >= MAX_DEPTH or self._refs >= _HARD_LIMIT
        if "const" in s:
            return s["const"]
        enum = s.get("enum")
        if isinstance(enum, list) and enum:
            return enum[0]
        for key in ("anyOf", "oneOf"):
            branches = s.get(key)
            if isinstance(branches, list) and branches:
                return self.value(self._branch(s, key, branches, shallow), name, depth + 1)
        typ = self.type_of(s)
        nullable = s.get("nullable") is True or (isinstance(s.get("type"), list) and "null" in s["type"])
        if typ == "null" or (shallow and nullable):
            return None
        if depth >= _HARD_LIMIT:
            return None if nullable else self._smallest(typ)
        if typ == "object":
            return self.object(s, depth, shallow)
        if typ == "array":
            return self.array(s, name, depth, shallow)
        if typ in ("integer", "number"):
            return self.number(s, typ == "integer")
        if typ == "boolean":
            return True
        return self.string(s, name)

    def _branch(self, s: dict[str, Any], key: str, branches: list[Any], shallow: bool) -> Any:
        """The branch to fill: the first that is not null (null when the depth bound wants the end)."""
        resolved = [self.merged(self.resolve(b)) for b in branches]
        nulls = [i for i, b in enumerate(resolved) if self.type_of(b) == "null"]
        if shallow and nulls:
            return branches[nulls[0]]
        pick = next((i for i in range(len(branches)) if i not in nulls), 0)
        rest = {k: v for k, v in s.items() if k != key}  # siblings of anyOf apply to every branch
        return {**rest, **resolved[pick]} if rest else branches[pick]

    @staticmethod
    def _smallest(typ: str | None) -> Any:
        return {"object": {}, "array": [], "integer": 0, "number": 0.0, "boolean": False}.get(typ or "", "")

    def object(self, s: dict[str, Any], depth: int, shallow: bool) -> dict[str, Any]:
        props = s.get("properties")
        props = props if isinstance(props, dict) else {}
        required = [r for r in s.get("required") or [] if isinstance(r, str)] \
            if isinstance(s.get("required"), list) else []
        names = required + ([n for n in props if n not in required] if not shallow else [])
        out = {n: self.value(props.get(n, {}), n, depth + 1) for n in names}
        extra = s.get("additionalProperties")
        wanted = s.get("minProperties") if isinstance(s.get("minProperties"), int) else 0
        if not props and not shallow:
            wanted = max(wanted, 1)  # a map type (dict[str, X]): show one entry
        if isinstance(extra, dict):
            i = 0
            while len(out) < wanted:
                out[f"key{i}" if i else "key"] = self.value(extra, "key", depth + 1)
                i += 1
        return out

    def array(self, s: dict[str, Any], name: str, depth: int, shallow: bool) -> list[Any]:
        low = s.get("minItems") if isinstance(s.get("minItems"), int) else 0
        high = s.get("maxItems") if isinstance(s.get("maxItems"), int) else None
        prefix = s.get("prefixItems") if isinstance(s.get("prefixItems"), list) else []
        count = max(low, len(prefix), 0 if shallow else 1)
        if high is not None:
            count = min(count, high)
        items = s.get("items") if isinstance(s.get("items"), dict | bool) else {}
        out: list[Any] = []
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else items
            v = self.value(sub, name, depth + 1)
            if s.get("uniqueItems") and v in out:
                v = _vary(v, i)
            out.append(v)
        return out

    def number(self, s: dict[str, Any], integer: bool) -> int | float:
        lo, lo_x = _limit(s, "minimum", "exclusiveMinimum", lower=True)
        hi, hi_x = _limit(s, "maximum", "exclusiveMaximum", lower=False)
        step = s.get("multipleOf")
        step = step if isinstance(step, int | float) and not isinstance(step, bool) and step > 0 else None

        def ok(v: float) -> bool:
            above = lo is None or v > lo or (v == lo and not lo_x)
            below = hi is None or v < hi or (v == hi and not hi_x)
            return above and below and (step is None or abs(v / step - round(v / step)) < 1e-9)

        candidates = [float(1 + self.pick(10))]
        if lo is not None:
            candidates += [lo, lo + 1]
        if hi is not None:
            candidates += [hi, hi - 1]
        if lo is not None and hi is not None:
            candidates.append((lo + hi) / 2)
        for c in candidates:
            if step is not None:
                c = math.ceil(c / step - 1e-9) * step
            if integer:
                c = math.ceil(c)
            if ok(c):
                return int(c) if integer else float(c)
        return int(candidates[0]) if integer else candidates[0]

    def string(self, s: dict[str, Any], name: str) -> str:
        fmt = s.get("format")
        if isinstance(fmt, str) and fmt.startswith("uuid"):  # uuid, and pydantic's uuid1..uuid7
            text = str(_uuid(name))
        elif isinstance(fmt, str) and fmt in _FORMATS:
            text = _FORMATS[fmt]
        else:
            text = self.text_for(name, s)
        low = s.get("minLength") if isinstance(s.get("minLength"), int) else 0
        high = s.get("maxLength") if isinstance(s.get("maxLength"), int) else None
        if len(text) < low:
            text = (text + " " + "x" * low)[:low] if text else "x" * low
        if high is not None and len(text) > high:
            text = text[:high]
        return text


def _limit(s: dict[str, Any], inclusive: str, exclusive: str, *, lower: bool) -> tuple[float | None, bool]:
    """The tighter of a bound and its exclusive form: (value, exclusive?). Draft 4's boolean
    `exclusiveMinimum` / `exclusiveMaximum` flags make the plain bound exclusive."""
    v = s.get(inclusive)
    v = v if isinstance(v, int | float) and not isinstance(v, bool) else None
    x = s.get(exclusive)
    if isinstance(x, bool):
        return v, x and v is not None
    if not isinstance(x, int | float):
        return v, False
    if v is None or (x >= v if lower else x <= v):
        return x, True
    return v, False


def _vary(value: Any, i: int) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + i
    if isinstance(value, str):
        return f"{value} {i}"
    return value


def _uuid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def fill(schema: Any, text_for: TextFor, pick: Callable[[int], int] | None = None) -> Any:
    """A value valid against `schema` (the whole schema is the root for `$ref`s)."""
    return SchemaFiller(schema, text_for, pick).value(schema)
