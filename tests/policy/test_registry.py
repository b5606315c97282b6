from __future__ import annotations

import asyncio
import json
import os

import pytest

from gateway.policy.issues import PolicyError
from gateway.policy.models import TenantPolicy
from gateway.policy.policyset import PolicySet
from gateway.policy.registry import PolicyRegistry

from ._helpers import Writer, digest_ref

GLOBEX_REF = digest_ref("globex-secret")


def files(ttl: str) -> dict[str, str]:
    """Two tenants whose ttl always moves together, so a torn read would show two different ttls."""
    return {
        "acme": f'tenant: acme\napi_keys: ["env:ACME_KEY"]\nresponse_cache: {{ttl: {ttl}}}\n',
        "globex": f'tenant: globex\napi_keys: ["{GLOBEX_REF}"]\nresponse_cache: {{ttl: {ttl}}}\n',
    }


BAD = {"globex": 'tenant: globex\napi_keys: ["plain-key"]\nresponse_cache: {ttl: 3h}\n'}


def test_construction_fails_loudly_on_a_bad_folder(policy_dir: Writer) -> None:
    folder = policy_dir(**{**files("1h"), **BAD})
    with pytest.raises(PolicyError) as e:
        PolicyRegistry(folder, {"ACME_KEY": "acme-secret"})
    assert [i.field for i in e.value.issues] == ["api_keys[0]"]


def test_a_bad_file_keeps_the_old_set_and_a_good_one_swaps(policy_dir: Writer) -> None:
    env = {"ACME_KEY": "acme-secret"}
    folder = policy_dir(**files("1h"))
    registry = PolicyRegistry(folder, env)
    old = registry.current

    policy_dir(**{**files("2h"), **BAD})
    result = registry.reload()
    assert not result.ok and not result.changed
    assert registry.current is old and result.version == old.version
    assert [str(i) for i in result.errors] == [
        f"{folder}/globex.yaml:2: api_keys[0]: must be 'sha256:<64 hex digits>' or 'env:VARNAME', never a plain key "
        "(digest: printf %s \"$KEY\" | sha256sum)"]
    assert registry.current.lookup("acme-secret").response_cache.ttl == 3600.0

    policy_dir(**files("2h"))
    result = registry.reload()
    assert result.ok and result.changed and result.previous_version == old.version
    assert result.version == registry.current.version != old.version
    assert registry.current.lookup("acme-secret").response_cache.ttl == 7200.0
    assert result.tenants == ("acme", "globex")

    again = registry.reload()
    assert again.ok and not again.changed


def test_reload_result_json_has_issues_and_no_key(policy_dir: Writer) -> None:
    folder = policy_dir(**files("1h"))
    registry = PolicyRegistry(folder, {"ACME_KEY": "acme-secret"})
    policy_dir(globex='tenant: globex\napi_keys: ["sk-PLAIN-SECRET-123"]\n')
    body = registry.reload().to_dict()
    text = json.dumps(body)
    assert body["ok"] is False and body["errors"][0]["field"] == "api_keys[0]" and body["errors"][0]["line"] == 2
    assert "PLAIN-SECRET" not in text and "acme-secret" not in text


def test_reload_reads_the_environment_again_and_a_missing_variable_does_not_fail_it(policy_dir: Writer) -> None:
    env = {"ACME_KEY": "old-key"}
    registry = PolicyRegistry(policy_dir(**files("1h")), env)
    env["ACME_KEY"] = "new-key"
    assert registry.reload().ok
    assert registry.current.lookup("new-key").tenant == "acme" and registry.current.lookup("old-key") is None
    del env["ACME_KEY"]
    result = registry.reload()
    assert result.ok and any("ACME_KEY" in w.message for w in result.warnings)
    assert registry.current.lookup("new-key") is None
    assert registry.current.lookup("globex-secret").tenant == "globex"


def test_removing_every_tenant_file_is_refused(policy_dir: Writer) -> None:
    folder = policy_dir(**files("1h"))
    registry = PolicyRegistry(folder, {"ACME_KEY": "k"})
    for f in folder.glob("*.yaml"):
        f.unlink()
    result = registry.reload()
    assert not result.ok and registry.current.tenants == ("acme", "globex")


def test_reload_if_changed(policy_dir: Writer) -> None:
    folder = policy_dir(**files("1h"))
    registry = PolicyRegistry(folder, {"ACME_KEY": "k"})
    assert registry.reload_if_changed() is None

    stat = (folder / "acme.yaml").stat()
    os.utime(folder / "acme.yaml", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert registry.reload_if_changed() is None  # touched, same bytes

    policy_dir(**files("2h"))
    result = registry.reload_if_changed()
    assert result is not None and result.ok and result.changed
    assert registry.reload_if_changed() is None

    policy_dir(**BAD)
    bad = registry.reload_if_changed()
    assert bad is not None and not bad.ok
    assert registry.reload_if_changed() is None  # the same bad bytes are not retried (nor logged) again

    (folder / "globex.yaml").unlink()
    gone = registry.reload_if_changed()
    assert gone is not None and gone.ok and registry.current.tenants == ("acme",)


def test_a_registry_from_a_set_built_in_code(tmp_path) -> None:
    policy = TenantPolicy.model_validate({"tenant": "t", "api_keys": [digest_ref("k")]})
    registry = PolicyRegistry.from_set(PolicySet.build([policy]), tmp_path / "missing")
    assert registry.current.lookup("k").tenant == "t"
    assert not registry.reload().ok and registry.current.lookup("k").tenant == "t"


async def test_atomic_swaps_under_concurrent_lookups(policy_dir: Writer) -> None:
    env = {"ACME_KEY": "acme-secret"}
    folder = policy_dir(**files("1h"))
    registry = PolicyRegistry(folder, env)
    stop = asyncio.Event()
    seen: set[float] = set()
    lookups = 0

    async def reader() -> None:
        nonlocal lookups
        while not stop.is_set():
            for _ in range(50):
                snapshot = registry.current  # one read of the reference per request, as authenticate does
                acme, globex = snapshot.lookup("acme-secret"), snapshot.lookup("globex-secret")
                assert acme is not None and globex is not None, "a key valid in every version failed"
                assert acme.response_cache.ttl == globex.response_cache.ttl, "a half-swapped set"
                seen.add(acme.response_cache.ttl)
                lookups += 1
            # a real loop idles between requests; one that never idles starves the reload thread of
            # the GIL (each file syscall then waits a whole switch interval to take it back)
            await asyncio.sleep(0.001)

    readers = [asyncio.create_task(reader()) for _ in range(4)]
    try:
        for i in range(15):
            ttl = "2h" if i % 2 == 0 else "1h"
            policy_dir(**files(ttl))
            assert (await registry.areload()).ok
            policy_dir(**{**files("5h"), **BAD})  # acme fine, globex bad: nothing of it may show
            assert not (await registry.areload()).ok
            # two reloads at once are serialised: both succeed and the result is the files' state
            policy_dir(**files(ttl))
            results = await asyncio.gather(registry.areload(), registry.areload())
            assert all(r.ok for r in results)
            assert registry.current.lookup("acme-secret").response_cache.ttl == (7200.0 if i % 2 == 0 else 3600.0)
    finally:
        stop.set()
        await asyncio.gather(*readers)
    assert seen == {3600.0, 7200.0}
    assert lookups > 1000
