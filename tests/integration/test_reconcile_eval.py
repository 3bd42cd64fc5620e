"""The knowledge-update evaluation's targets, on a subset fast enough for every run
(tests/eval/knowledge_update_eval.py runs all of it and prints the table)."""

from __future__ import annotations



import knowledge_update_eval as ku  # noqa: E402


def test_the_corpus_is_as_large_and_varied_as_promised():
    cases = ku.load_cases(ku.DATA)
    scenarios = {c.scenario for c in cases if c.kind != "control"}
    assert len(scenarios) >= 60 and len({c.scenario for c in cases if c.kind == "control"}) >= 30
    assert {c.category for c in cases if c.kind != "control"} >= {
        "residence", "work", "relations", "contact", "preferences", "possessions", "projects", "diet",
    }
    assert {c.kind for c in cases} == {"update", "restatement", "retraction", "control"}
    assert abs(sum(c.split == "holdout" for c in cases) / len(cases) - 1 / 3) < 0.02


async def test_reconciliation_meets_its_targets_on_a_subset(tmp_path, offline_embedder):
    cases = ku.all_cases()
    subset = [c for i, c in enumerate(cases) if (c.kind == "control" and i % 2 == 0) or i % 7 == 0]
    outcomes = await ku.evaluate(tmp_path, offline_embedder, subset)
    result = ku.metrics(outcomes)["all"]
    assert result["false_supersessions"] == 0, result
    assert result["update_precision"] >= 0.95 and result["update_recall"] >= 0.85, result
    assert result["noop_rate"] >= 0.85, result
    assert result["rank1_accuracy"] >= 0.9, result
