"""The live policy set, reloaded atomically.

`current` is one reference to an immutable `PolicySet`; a reload validates every file first and
only then replaces the reference, so a request sees either the whole old set or the whole new one,
and a bad file leaves the old set serving. Reloads are serialised by a lock held across read and
swap, so a slow reload of older files can never overwrite a newer one. Readers take no lock.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.policy.issues import PolicyIssue
from gateway.policy.loader import check_policies, load_policies, policy_files, source_digest
from gateway.policy.policyset import PolicySet

log = logging.getLogger("gateway.policy")


@dataclass(frozen=True)
class ReloadResult:
    ok: bool  # False: some file is bad and the old set is still serving
    changed: bool  # the serving set's version changed
    version: str  # the version now serving
    previous_version: str
    tenants: tuple[str, ...]  # now serving
    errors: tuple[PolicyIssue, ...] = ()
    warnings: tuple[PolicyIssue, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The admin endpoint's JSON body (no key material: issues name entries, never values)."""
        return {
            "ok": self.ok, "changed": self.changed, "version": self.version,
            "previous_version": self.previous_version, "tenants": list(self.tenants),
            "errors": [i.to_dict() for i in self.errors], "warnings": [i.to_dict() for i in self.warnings],
        }


class PolicyRegistry:
    """Holds the serving `PolicySet` for a policy folder (or file).

    The constructor loads synchronously and raises `PolicyError` when the folder is bad: a gateway
    must not start without valid policies. `env` resolves `env:` keys; None reads the process
    environment afresh at every reload, so a rotated secret is picked up by the next reload.
    """

    def __init__(self, path: str | Path, env: Mapping[str, str] | None = None,
                 *, policy_set: PolicySet | None = None) -> None:
        self.path = Path(path)
        self._env = env
        self._lock = threading.Lock()
        self._current = policy_set if policy_set is not None else load_policies(self.path, env)
        self._stat = self._stat_signature()
        self._log_loaded(self._current)

    @classmethod
    def from_set(cls, policy_set: PolicySet, path: str | Path = "policies") -> PolicyRegistry:
        """A registry serving a set built in code (tests, embedding); reload reads `path`."""
        return cls(path, policy_set=policy_set)

    @property
    def current(self) -> PolicySet:
        return self._current

    def reload(self) -> ReloadResult:
        """Blocking: reads and validates every file, swaps only if all are valid."""
        with self._lock:
            return self._reload_locked()

    async def areload(self) -> ReloadResult:
        """`reload` off the event loop (file reads and YAML parsing are blocking work)."""
        return await asyncio.to_thread(self.reload)

    def reload_if_changed(self) -> ReloadResult | None:
        """Reloads when the files' bytes differ from those serving; None when nothing changed.
        Cheap when nothing changed: names, sizes and mtimes are compared before any file is read."""
        with self._lock:
            stat = self._stat_signature()
            if stat == self._stat:
                return None
            self._stat = stat
            if self._current.source_digest and source_digest(self.path) == self._current.source_digest:
                return None  # touched, not changed (a ConfigMap remount, `touch`)
            return self._reload_locked()

    async def areload_if_changed(self) -> ReloadResult | None:
        return await asyncio.to_thread(self.reload_if_changed)

    def _reload_locked(self) -> ReloadResult:
        old = self._current
        self._stat = self._stat_signature()
        outcome = check_policies(self.path, self._env)
        new = outcome.policy_set
        if new is None:
            log.error("policy reload refused, %d error(s); still serving version %s:\n%s",
                      len(outcome.errors), old.version, "\n".join(f"  {i}" for i in outcome.errors))
            return ReloadResult(False, False, old.version, old.version, old.tenants,
                                tuple(outcome.errors), tuple(outcome.warnings))
        self._current = new  # the swap: one reference assignment, atomic for every reader
        self._log_loaded(new)
        return ReloadResult(True, new.version != old.version, new.version, old.version, new.tenants,
                            (), tuple(outcome.warnings))

    def _stat_signature(self) -> tuple[tuple[str, int, int], ...]:
        try:
            defaults, tenants = policy_files(self.path)
        except OSError:
            return ()
        out = []
        for file in ([defaults] if defaults else []) + tenants:
            try:
                st = file.stat()  # follows symlinks: a ConfigMap update swaps the link target
            except OSError:
                continue
            out.append((file.name, st.st_mtime_ns, st.st_size))
        return tuple(out)

    @staticmethod
    def _log_loaded(policy_set: PolicySet) -> None:
        log.info("policies version %s: %d tenant(s) %s", policy_set.version, len(policy_set),
                 ", ".join(policy_set.tenants))
        for warning in policy_set.warnings:
            log.warning("policy: %s", warning)
