from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from gateway.policy.cli import main, validate_command

from ._helpers import Writer

ROOT = Path(__file__).resolve().parents[2]


def run(path: Path | str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = validate_command(str(path), env={} if env is None else env, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_ok_prints_the_tenants_and_exits_0(policy_dir: Writer) -> None:
    folder = policy_dir(b='tenant: globex\napi_keys: ["env:G"]\n', a='tenant: acme\napi_keys: ["env:A"]\n')
    code, out, err = run(folder, {"A": "1", "G": "2"})
    assert (code, out, err) == (0, "OK: 2 tenants (acme, globex)\n", "")


def test_warnings_are_printed_but_do_not_fail(policy_dir: Writer) -> None:
    folder = policy_dir(a='tenant: acme\napi_keys: ["env:A"]\n')
    code, out, err = run(folder)
    assert code == 0 and out == "OK: 1 tenant (acme)\n"
    assert err == (f"{folder}/a.yaml:2: api_keys[0]: environment variable A is unset or empty; this key is ignored "
                   "(warning)\n"
                   f"{folder}/a.yaml:2: api_keys: tenant 'acme' has no usable key and cannot authenticate (warning)\n")


def test_errors_go_to_stderr_one_a_line_and_exit_1(policy_dir: Writer) -> None:
    folder = policy_dir(a='tenant: acme\napi_keys: ["env:A"]\nresponse_cache: {ttl: 1 day}\nbogus: 1\n')
    code, out, err = run(folder, {"A": "1"})
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"{folder}/a.yaml:3: response_cache.ttl: '1 day' is not a duration such as 30s, 5m, 1h or 7d",
        f"{folder}/a.yaml:4: bogus: unknown field (allowed: {', '.join(_top_fields())})",
        "FAILED: 2 errors",
    ]


def _top_fields() -> list[str]:
    from gateway.policy.models import TenantPolicy
    return list(TenantPolicy.model_fields)


def test_a_single_file_and_a_missing_path(policy_dir: Writer, tmp_path: Path) -> None:
    folder = policy_dir(a='tenant: acme\napi_keys: ["env:A"]\n')
    assert run(folder / "a.yaml", {"A": "1"})[:2] == (0, "OK: 1 tenant (acme)\n")
    code, _, err = run(tmp_path / "nope")
    assert code == 1 and "nope: no such file or directory" in err


def test_usage_error_is_exit_2() -> None:
    assert main(["check", "x"]) == 2


def test_the_module_runs_as_a_command_on_the_repo_examples() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run([sys.executable, "-m", "gateway.policy.cli", "validate", "policies"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "OK: 3 tenants (acme, globex, initech)\n"
