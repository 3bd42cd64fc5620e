"""Issue 20 item 8: a near-duplicate that adds or changes content words is stored, never dropped as a noop;
a true restatement stays a noop (the positive control). Real SQLite, real fastembed, and keyword-only."""

from __future__ import annotations


import pytest


import phrased_update_eval as pe  # noqa: E402

ADDS = [
    ("I like tea.", "I like tea with milk."),
    ("I like jazz", "I like jazz and blues"),
    ("I prefer trains", "I prefer night trains"),
    ("The primary cluster is in Frankfurt.", "The secondary cluster is in Frankfurt."),
]
RESTATES = [("I like tea with milk.", "I like tea."), ("I live in Berlin.", "I'm still living in Berlin.")]


def _cases(pairs, kind):
    return [dict(split="tuning", kind=kind, category="t", first=a, second=b, question=b, answer="") for a, b in pairs]


@pytest.mark.parametrize("vectors", [True, False], ids=["fastembed", "keyword-only"])
async def test_near_duplicates_that_add_words_are_stored_and_restatements_are_not(tmp_path, offline_embedder, vectors):
    outcomes = await pe.evaluate(tmp_path, offline_embedder if vectors else None, _cases(ADDS, "update") + _cases(RESTATES, "restatement"))
    added, restated = outcomes[: len(ADDS)], outcomes[len(ADDS):]
    assert [o["decision"] for o in added if o["decision"] == "noop"] == [], [(o["case"]["second"], o["decision"]) for o in added]
    assert all(o["decision"] == "noop" for o in restated), [(o["case"]["second"], o["decision"]) for o in restated]
