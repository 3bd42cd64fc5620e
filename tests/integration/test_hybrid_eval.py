"""Our retrieval-quality check: hybrid must not lose to either leg (tests/eval/retrieval_eval.py)."""

from __future__ import annotations



import retrieval_eval  # noqa: E402


def test_paraphrases_share_no_word_with_their_memory():
    assert retrieval_eval.overlapping_pairs() == []


async def test_hybrid_beats_both_legs_on_the_eval(tmp_path, offline_embedder):
    vectors, cases = await retrieval_eval.build(tmp_path / "eval.db", offline_embedder)
    try:
        results = await retrieval_eval.evaluate(vectors, cases)
    finally:
        await vectors.aclose()
    recall = {mode: table["all"][0] for mode, table in results.items()}
    mrr = {mode: table["all"][1] for mode, table in results.items()}
    assert recall["hybrid"] >= max(recall["keyword"], recall["semantic"]), results
    assert mrr["hybrid"] >= max(mrr["keyword"], mrr["semantic"]), results
    # no slice below what the default measured before confidence weighting (plain min-max 0.8 / 0.2:
    # paraphrase 0.917 / 0.786, mixed 1.000 / 0.865, keyword 1.000 / 1.000, identifier 1.000 / 0.991)
    floors = {"paraphrase": (0.917, 0.786), "mixed": (1.0, 0.865), "keyword": (1.0, 1.0), "identifier": (1.0, 0.991)}
    for kind, (r5, rr) in floors.items():
        got = results["hybrid"][kind]
        assert got[0] >= r5 - 1e-3 and got[1] >= rr - 1e-3, (kind, got)
    # each leg earns its place: keyword cannot answer paraphrases, semantic blurs identifiers
    assert results["keyword"]["paraphrase"][0] < 0.2 < results["semantic"]["paraphrase"][0]
    assert results["semantic"]["identifier"][1] < results["keyword"]["identifier"][1]
