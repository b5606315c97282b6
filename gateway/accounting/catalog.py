"""litellm's price map, read as the file it ships in the package, without importing litellm.

Importing litellm costs ~150 MB of memory and seconds of start-up; the gateway needs only the map's
per-token prices. `read_cost_map()` reads the same bundled file litellm loads offline
(`model_prices_and_context_window_backup.json`, what `litellm.model_cost` holds with
`LITELLM_LOCAL_MODEL_COST_MAP=True`) and applies the same finishing steps litellm applies to it:
the reserved `fallback_generalizations` block is dropped, and alias rows are expanded (a row whose
`alias_of` names another row is served as that row; an `aliases` list on a row adds more names for it;
an alias that collides with a canonical entry or a claimed alias, or that points at nothing, is skipped).
Of each entry only the per-token price fields are kept (a few of its ~275 fields): the rest would be
held in memory for the life of the process and never read. The test suite checks the result against
`litellm.model_cost` itself.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("gateway.accounting.pricing")

FILE_NAME = "model_prices_and_context_window_backup.json"
_RESERVED = ("fallback_generalizations",)
# The fields the price book reads (`pricing._from_entry`), with any long-context tier suffix.
_PRICE_FIELD = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost"
    r"(?:_above_1hr|_above_12hr)?)(?:_above_\d+k_tokens)?$"
)


def bundled_path() -> Path | None:
    """The price map file inside the installed litellm package (found without importing it)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / FILE_NAME
    return path if path.is_file() else None


def _prices_only(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if _PRICE_FIELD.match(k)}


def expand_aliases(raw: dict[str, Any]) -> dict[str, Any]:
    """litellm's alias expansion (its `_expand_model_aliases`), on the raw rows: every name of a group
    maps to the same entry object."""
    pointers = {name: target for name, info in raw.items() if isinstance(target := info.get("alias_of"), str)}
    owners: dict[str, str] = {}
    for name, info in raw.items():
        aliases = info.get("aliases")
        if aliases is None or name in pointers or not isinstance(aliases, list):
            continue
        for alias in aliases:
            if (alias in raw and alias not in pointers) or alias in owners:
                continue
            owners[alias] = name
    for alias, target in pointers.items():
        if target in raw and target not in pointers and alias not in owners:
            owners[alias] = target
    for alias in pointers.keys() - owners.keys():
        raw.pop(alias)
    for alias, owner in owners.items():
        raw[alias] = raw[owner]
    return raw


def parse_cost_map(body: bytes) -> dict[str, Mapping[str, Any]]:
    raw = orjson.loads(body)
    if not isinstance(raw, dict):
        raise ValueError("litellm's price map is not a JSON object")
    for key in _RESERVED:
        raw.pop(key, None)
    rows = {name: info for name, info in raw.items() if isinstance(info, dict)}
    trimmed: dict[int, dict[str, Any]] = {}  # one trimmed entry per shared row object
    return {name: trimmed.setdefault(id(info), _prices_only(info)) for name, info in expand_aliases(rows).items()}


def read_cost_map(path: Path | None = None) -> dict[str, Mapping[str, Any]]:
    """The price map (blocking file read and parse, ~30 ms: call it off the event loop). Empty, with a
    warning, when litellm's file cannot be found or read: every model then costs 0 unless configured."""
    path = path or bundled_path()
    if path is None:
        log.warning("litellm's price map file was not found; costs are recorded as 0 unless configured")
        return {}
    try:
        return parse_cost_map(path.read_bytes())
    except (OSError, ValueError) as exc:
        log.warning("litellm's price map could not be read; costs are recorded as 0 unless configured",
                    extra={"path": str(path), "error": repr(exc)})
        return {}
