"""`bench startup`: a fresh process per case, every start-up step measured, the semantic layer off when
no tenant uses it."""

from __future__ import annotations

from gateway_dev.bench.startup import run, table


def test_steps_without_the_semantic_layer() -> None:
    result = run(False)
    names = [s["step"] for s in result["steps"]]  # type: ignore[index]
    assert names[0] == "interpreter" and "create_app" in names and "start provider_cache" in names
    assert names[-1] == "background loads (semantic_cache: off)"
    assert all(s["rss_mib"] > 0 and s["seconds"] >= 0 for s in result["steps"])  # type: ignore[index]
    text = "\n".join(table(result, "off"))
    assert "| start semantic_cache |" in text and text.startswith("**off** (total ")
