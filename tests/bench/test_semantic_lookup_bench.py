"""`bench semantic-lookup` end to end on a small store: a run slower than the target's rate reports its figures
and says the target was not checked (exit 0) instead of claiming or failing it."""

from __future__ import annotations

import pytest

from gateway_dev.bench import semantic_lookup


def test_a_slow_small_run_reports_and_does_not_claim_the_target(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = semantic_lookup.main(["--entries", "300", "--tenants", "2", "--clients", "2", "--lookups-per-client", "3",
                               "--distinct", "60", "--rate", "20", "--data-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "2 clients, paced 20/s" in out
    assert "not checked at --rate 20" in out
    assert "ran past" not in out  # at 20/s nothing waits long enough to fail open
