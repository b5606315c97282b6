"""Load and validate a policy folder (or one file) into a `PolicySet`, or say everything wrong with it.

A folder holds one tenant per `*.yaml`/`*.yml` file plus an optional `_defaults.yaml` that is
deep-merged under every tenant (nested mappings merge; a tenant's lists and scalars replace the
default). Every problem in every file is collected, each as `file:line: field: message`; a value
inherited from `_defaults.yaml` is reported at its line in that file. Hidden files are skipped
(Kubernetes mounts a ConfigMap with `..data` links beside the real names).

An `env:VAR` key whose variable is unset or blank is a *warning*, not an error: that key cannot
authenticate anyone (fail-closed), the rest of the policy still loads, and `policy validate` can run
in CI where the secrets do not exist. A reload therefore never fails because a secret is missing.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gateway.policy.issues import PolicyError, PolicyIssue
from gateway.policy.models import TenantPolicy, _key_ref
from gateway.policy.policyset import PolicySet, key_digest, resolve_key_ref
from gateway.policy.yamlsource import Path_, Pos, format_path, parse_yaml

DEFAULTS_NAMES = ("_defaults.yaml", "_defaults.yml")
SUFFIXES = (".yaml", ".yml")
TENANT_ONLY = ("tenant", "api_keys")  # each tenant sets its own; refused in _defaults.yaml
_EMPTY_KEY_DIGEST = key_digest("")
_PLACEHOLDER_KEY = "sha256:" + "0" * 64  # stands in for api_keys when _defaults.yaml is validated alone


@dataclass
class _Tenant:
    file: str
    data: dict[str, Any]  # merged over the defaults, as written (checked even when validation failed)
    positions: dict[Path_, Pos]
    policy: TenantPolicy | None  # None when it did not validate


@dataclass
class LoadOutcome:
    """The result of checking a policy path: a set when there are no errors."""

    policy_set: PolicySet | None
    errors: list[PolicyIssue] = field(default_factory=list)
    warnings: list[PolicyIssue] = field(default_factory=list)
    source_digest: str = ""


def load_policies(path: str | Path, env: Mapping[str, str] | None = None) -> PolicySet:
    """Loads a folder or one file; raises `PolicyError` listing every issue when anything is wrong.
    `env` resolves `env:` key references (default: the process environment, read now)."""
    outcome = check_policies(path, env)
    if outcome.policy_set is None:
        raise PolicyError(outcome.errors, outcome.warnings)
    return outcome.policy_set


def policy_files(path: Path) -> tuple[Path | None, list[Path]]:
    """(`_defaults.yaml` or None, tenant files) for a folder or a single file, sorted by name."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir()
                       if p.suffix in SUFFIXES and not p.name.startswith(".") and p.is_file())
        defaults = [p for p in files if p.name in DEFAULTS_NAMES]
        return (defaults[0] if defaults else None), [p for p in files if p.name not in DEFAULTS_NAMES]
    if path.name in DEFAULTS_NAMES:
        return path, []
    # One tenant file: it still inherits the _defaults.yaml beside it, so it is checked as served.
    siblings = [path.parent / name for name in DEFAULTS_NAMES if (path.parent / name).is_file()]
    return (siblings[0] if siblings else None), [path]


def check_policies(path: str | Path, env: Mapping[str, str] | None = None) -> LoadOutcome:
    path = Path(path)
    env = os.environ if env is None else env
    out = LoadOutcome(None)
    if not path.exists():
        out.errors.append(PolicyIssue(str(path), 0, "", "no such file or directory"))
        return out
    defaults_file, tenant_files = policy_files(path)
    if path.is_dir():
        extra_defaults = [p for p in path.iterdir() if p.name in DEFAULTS_NAMES and p != defaults_file]
        for p in extra_defaults:
            out.errors.append(PolicyIssue(str(p), 0, "", f"both {' and '.join(DEFAULTS_NAMES)} exist; keep one"))
        if not tenant_files:
            out.errors.append(PolicyIssue(str(path), 0, "", "no tenant policy files (*.yaml, *.yml) in this folder"))

    digest = hashlib.sha256()
    defaults: dict[str, Any] = {}
    defaults_pos: dict[Any, Any] = {}
    if defaults_file is not None:
        defaults, defaults_pos = _load_defaults(defaults_file, digest, out.errors)

    tenants: list[_Tenant] = []
    for file in tenant_files:
        parsed = _read(file, digest, out.errors)
        if parsed is None:
            continue
        value, positions = parsed
        if value is None:
            out.errors.append(PolicyIssue(str(file), 1, "", "empty file: a tenant policy needs tenant and api_keys"))
            continue
        merged_pos: dict[Path_, Pos] = {(): positions.get((), Pos(str(file), 1))}
        merged = _merge(defaults, defaults_pos, value, positions, (), merged_pos)
        policy = _validate(merged, merged_pos, out.errors)
        tenants.append(_Tenant(str(file), merged, merged_pos, policy))

    tenant_keys = _cross_check(tenants, env, out)
    out.source_digest = digest.hexdigest()
    out.errors = _sorted(out.errors)
    out.warnings = _sorted(out.warnings)
    if not out.errors:
        out.policy_set = PolicySet.build(
            [t.policy for t in tenants if t.policy is not None], tenant_keys, source_digest=out.source_digest,
            warnings=out.warnings, files=[str(p) for p in ([defaults_file] if defaults_file else []) + tenant_files],
        )
    return out


def _read(file: Path, digest: Any, errors: list[PolicyIssue]) -> tuple[Any, dict[Path_, Pos]] | None:
    """Parses one file; None when it cannot be read or parsed (the issue is recorded); a value of None
    for an empty file. Anything that is neither None nor a mapping is an error here."""
    try:
        raw = file.read_bytes()
    except OSError as e:
        errors.append(PolicyIssue(str(file), 0, "", f"cannot read: {e.strerror or e}"))
        return None
    digest.update(file.name.encode() + b"\0" + hashlib.sha256(raw).digest())
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        errors.append(PolicyIssue(str(file), 0, "", f"not UTF-8 text (byte {e.start})"))
        return None
    parsed = parse_yaml(text, str(file))
    errors.extend(parsed.issues)
    if parsed.issues and parsed.value is None:
        return None
    if parsed.value is not None and not isinstance(parsed.value, dict):
        kind = "a list" if isinstance(parsed.value, list) else f"a {type(parsed.value).__name__}"
        line = parsed.positions.get((), Pos(str(file), 1)).line
        errors.append(PolicyIssue(str(file), line, "", f"the file must be a mapping of policy fields, not {kind}"))
        return None
    return parsed.value, parsed.positions


def _load_defaults(file: Path, digest: Any, errors: list[PolicyIssue]) -> tuple[dict[str, Any], dict[Path_, Pos]]:
    parsed = _read(file, digest, errors)
    if parsed is None or parsed[0] is None:
        return {}, {}
    value, positions = parsed
    for name in TENANT_ONLY:
        if name in value:
            errors.append(PolicyIssue(str(file), positions[(name,)].line, name,
                                      "not allowed in _defaults.yaml: every tenant file sets its own"))
            del value[name]
    # Validated once on its own so its errors show even with no tenant (and are not repeated per tenant:
    # the tenant checks report the same issue again, which _dedupe removes).
    _validate({**value, "tenant": "_defaults", "api_keys": [_PLACEHOLDER_KEY]}, positions, errors)
    return value, positions


def _merge(base: Any, base_pos: dict[Path_, Pos], over: Any, over_pos: dict[Path_, Pos],
           path: Path_, out_pos: dict[Path_, Pos]) -> Any:
    """Deep merge `over` (a tenant) onto `base` (defaults), carrying each value's position along."""
    if isinstance(base, dict) and isinstance(over, dict):
        if path in over_pos:
            out_pos[path] = over_pos[path]
        result: dict[str, Any] = {}
        for key, value in base.items():
            if key in over:
                result[key] = _merge(value, base_pos, over[key], over_pos, (*path, key), out_pos)
            else:
                result[key] = value
                _copy_pos(value, base_pos, (*path, key), out_pos)
        for key, value in over.items():
            if key not in base:
                result[key] = value
                _copy_pos(value, over_pos, (*path, key), out_pos)
        return result
    _copy_pos(over, over_pos, path, out_pos)
    return over


def _copy_pos(value: Any, src: dict[Path_, Pos], path: Path_, out: dict[Path_, Pos]) -> None:
    if path in src:
        out[path] = src[path]
    if isinstance(value, dict):
        for key, child in value.items():
            _copy_pos(child, src, (*path, key), out)
    elif isinstance(value, list):
        for i, child in enumerate(value):
            _copy_pos(child, src, (*path, i), out)


def _validate(data: dict[str, Any], positions: dict[Path_, Pos], errors: list[PolicyIssue]) -> TenantPolicy | None:
    try:
        return TenantPolicy.model_validate(data)
    except ValidationError as e:
        root = positions.get((), Pos("?", 0))
        for err in e.errors(include_url=False, include_input=False):
            loc = tuple(err["loc"])
            pos = _locate(loc, positions, root)
            errors.append(PolicyIssue(pos.file, pos.line, format_path(loc), _message(err, loc)))
        return None


def _locate(loc: Path_, positions: dict[Path_, Pos], root: Pos) -> Pos:
    """The position of the deepest part of `loc` that was written somewhere (a missing field points at
    the mapping that lacks it)."""
    for i in range(len(loc), -1, -1):
        pos = positions.get(loc[:i])
        if pos is not None:
            return pos
    return root


def _message(err: Any, loc: Path_) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        hint = ""
        if model is not None and isinstance(loc[-1], str):
            close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(model.model_fields)})"
        return f"unknown field{hint}"
    if kind == "missing":
        return "required field is missing"
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def _model_at(loc: Path_) -> type[BaseModel] | None:
    model: type[BaseModel] = TenantPolicy
    for part in loc:
        info = model.model_fields.get(part) if isinstance(part, str) else None
        annotation = info.annotation if info is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _cross_check(tenants: list[_Tenant], env: Mapping[str, str], out: LoadOutcome) -> dict[bytes, str]:
    """Duplicate tenant names and keys claimed twice; returns the key index (digest → tenant).

    Runs on the written data, not only on tenants that validated, so one pass reports a duplicate
    even beside other errors. Entries that are not valid references were reported by validation."""
    names: dict[str, Pos] = {}
    keys: dict[bytes, tuple[str, Pos]] = {}
    for t in tenants:
        name = t.data.get("tenant")
        tenant_pos = t.positions.get(("tenant",), Pos(t.file, 1))
        if isinstance(name, str):
            if name in names:
                first = names[name]
                out.errors.append(PolicyIssue(tenant_pos.file, tenant_pos.line, "tenant",
                                              f"tenant '{name}' is already defined in {first.file}:{first.line}"))
                continue
            names[name] = tenant_pos
        refs = t.data.get("api_keys")
        if not isinstance(refs, list):
            continue
        usable = 0
        for i, ref in enumerate(refs):
            try:
                ref = _key_ref(ref) if isinstance(ref, str) else None
            except ValueError:
                ref = None
            if ref is None:
                continue
            pos = t.positions.get(("api_keys", i), tenant_pos)
            where = format_path(("api_keys", i))
            digest = resolve_key_ref(ref, env)
            if digest is None:
                message = f"environment variable {ref[4:]} is unset or empty; this key is ignored"
                out.warnings.append(PolicyIssue(pos.file, pos.line, where, message))
                continue
            if digest == _EMPTY_KEY_DIGEST:
                out.errors.append(PolicyIssue(pos.file, pos.line, where, "this is the digest of an empty key"))
                continue
            owner = keys.get(digest)
            if owner is not None and owner[0] != name:
                out.errors.append(PolicyIssue(
                    pos.file, pos.line, where,
                    f"this key is already a key of tenant '{owner[0]}' ({owner[1].file}:{owner[1].line})"))
                continue
            keys.setdefault(digest, (str(name), pos))
            usable += 1
        if usable == 0 and t.policy is not None:
            pos = t.positions.get(("api_keys",), tenant_pos)
            out.warnings.append(PolicyIssue(pos.file, pos.line, "api_keys",
                                            f"tenant '{name}' has no usable key and cannot authenticate"))
    return {digest: tenant for digest, (tenant, _) in keys.items()}


def _sorted(issues: list[PolicyIssue]) -> list[PolicyIssue]:
    """Without repeats (an error in _defaults.yaml is found again in every tenant), by file and line."""
    return sorted(dict.fromkeys(issues), key=lambda i: (i.file, i.line))


def source_digest(path: str | Path) -> str:
    """The hash `check_policies` records for these files' bytes; cheap to recompute for change checks."""
    defaults_file, tenant_files = policy_files(Path(path))
    digest = hashlib.sha256()
    for file in ([defaults_file] if defaults_file else []) + tenant_files:
        try:
            raw = file.read_bytes()
        except OSError:
            raw = b"\0unreadable"
        digest.update(file.name.encode() + b"\0" + hashlib.sha256(raw).digest())
    return digest.hexdigest()
