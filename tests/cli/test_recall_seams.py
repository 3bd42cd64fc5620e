"""Recall's seams: a semantic leg that fails, and a vault read before its first index.

A failed semantic leg must leave keyword answering (with a notice), not lose the
whole tier; an unindexed vault must answer ``--as-of`` as its index does.
"""

from __future__ import annotations

import json
import os

import pytest

from memory.sqlite.connection import dbapi, load_vec

DEPLOYS = "Deploys happen on Tuesdays at noon"
CAT = "The cat is named Biscuit"


def recalled(cli, query, *extra):
    result = cli("recall", query, "--agent", "ada", "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


@pytest.fixture
def store_file(cli, arcana_home):
    """Ada's store, written with the real offline model (so it holds a vector index)."""
    for text in (DEPLOYS, CAT):
        assert cli("remember", text, "--agent", "ada").exit_code == 0
    (agent,) = arcana_home.agents_dir.iterdir()
    return arcana_home.agent_db(agent.name)


def damage(path, statement: str) -> None:
    raw = dbapi().connect(str(path))
    load_vec(raw)
    raw.execute(statement)
    raw.commit()
    raw.close()


@pytest.mark.parametrize(
    "statement",
    ["DROP TABLE memory_vec_1", "DROP TABLE memory_vec_1_vector_chunks00"],
    ids=["index-missing", "index-damaged"],
)
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_failed_semantic_leg_leaves_keyword_answering(cli, store_file, statement, mode):
    """The private tier was reported degraded and every memory in it went missing."""
    before, _ = recalled(cli, "deploys", "--mode", mode)
    assert [r["content"] for r in before["results"]] == [DEPLOYS] and before["legs"][0] == "semantic"
    damage(store_file, statement)
    data, stderr = recalled(cli, "deploys", "--mode", mode)
    assert [r["content"] for r in data["results"]] == [DEPLOYS]
    assert data["legs"] == ["keyword"] and data["degraded"] == []
    assert "falling back to keyword" in stderr and "Traceback" not in stderr
    cat, _ = recalled(cli, "biscuit", "--mode", mode)  # control: the fallback still matches, not lists
    assert [r["content"] for r in cat["results"]] == [CAT]


@pytest.mark.usefixtures("no_embedder")
def test_an_unindexed_vault_answers_as_of_as_its_index_does(cli, tmp_path):
    """The folder scan ignored --as-of: a note written after that time was recalled until the vault was indexed."""
    notes = tmp_path / "notes"
    notes.mkdir()
    note = notes / "zeppelin.md"
    note.write_text("The zeppelin hangar opens at dawn\n")
    written = 1_748_736_000  # 2025-06-01T00:00:00Z
    os.utime(note, (written, written))
    assert cli("remember", "A placeholder memory", "--agent", "ada").exit_code == 0
    assert cli("vault", "add", str(notes), "--name", "notes", "--agent", "ada").exit_code == 0

    def found(as_of):
        data, _ = recalled(cli, "zeppelin hangar", "--as-of", as_of)
        return [r["content"].splitlines()[-1] for r in data["results"]]

    answers = {}
    for state in ("folder", "index"):
        if state == "index":
            assert cli("vault", "index", "notes").exit_code == 0
        answers[state] = [found(when) for when in ("2025-01-01", "2025-06-01T00:00:00Z", "2025-12-01")]
    assert answers["index"] == [[], ["The zeppelin hangar opens at dawn"], ["The zeppelin hangar opens at dawn"]]
    assert answers["folder"] == answers["index"]


@pytest.mark.usefixtures("no_embedder")
@pytest.mark.parametrize("query", ['"', "?!", "🎉", "*"])
def test_a_query_with_no_words_says_it_listed_not_which_legs_answered(cli, query):
    """Such a query lists the memories (no word to match); stderr said "answered by:  from private"."""
    for text in (DEPLOYS, CAT):
        assert cli("remember", text, "--agent", "ada").exit_code == 0
    data, stderr = recalled(cli, query)
    assert len(data["results"]) == 2 and data["legs"] == []
    assert "answered by" not in stderr and "no word to search" in stderr
    _, control = recalled(cli, "deploys")  # a query with words still names its leg
    assert "answered by: keyword from private" in control


@pytest.mark.parametrize("query", ["?!", "🎉"])
def test_a_hybrid_query_with_no_words_lists_as_keyword_mode_does(cli, store_file, query):
    """Hybrid (the default) answered nothing where keyword mode listed: the vector of "?!" sits near
    nothing. Both now list; a query with words is still searched by both legs (the control)."""
    hybrid, _ = recalled(cli, query, "--mode", "hybrid")
    keyword, _ = recalled(cli, query, "--mode", "keyword")
    assert [r["id"] for r in hybrid["results"]] == [r["id"] for r in keyword["results"]] and len(hybrid["results"]) == 2
    searched, stderr = recalled(cli, "biscuit", "--mode", "hybrid")
    assert searched["legs"] == ["semantic", "keyword"] and [r["content"] for r in searched["results"]] == [CAT]


def test_fusion_weights_too_large_to_add_still_weigh_as_their_ratio(cli, store_file):
    """Each weight is taken up to the largest float, but the two were added before dividing: 1e308
    and 1e308 summed to infinity, normalised to 0 and 0, and every tier of every hybrid recall
    failed ('fusion weights must be ... not both zero'), exit 0 with no memories."""
    found, _ = recalled(cli, "when do deploys happen")  # control: the default weights
    assert found["results"][0]["content"] == DEPLOYS
    for key in ("embedding.vector_weight", "embedding.keyword_weight"):
        assert cli("config", "set", key, "1e308").exit_code == 0
    found, stderr = recalled(cli, "when do deploys happen")
    assert not found["degraded"], stderr
    assert found["results"][0]["content"] == DEPLOYS


def test_recall_and_context_make_no_store_for_an_agent_with_no_memories(cli, arcana_home):
    """recall and context opened the agent's federation, which made its memory.db and vector/global.db:
    a read changed the home. Positive control: a fact another agent put in the global tier is found
    by the same reads, which still make no store of their own."""
    assert cli("agent", "create", "ada").exit_code == 0
    ada_db = arcana_home.agent_db(json.loads(cli("agent", "show", "ada", "--json").stdout)["id"])
    reads = (("recall", "deploys", "--agent", "ada", "--json"), ("context", "--agent", "ada", "--json"),
             ("context", "deploys", "--agent", "ada", "--json"))
    for args in reads:
        result = cli(*args)
        assert result.exit_code == 0, (args, result.output)
        assert not ada_db.exists() and not arcana_home.global_db.exists(), args
        assert not any(arcana_home.locks_dir.glob("agent-*")), args  # nor the agent's lock files
    assert cli("remember", DEPLOYS, "--agent", "bob", "--scope", "global").exit_code == 0
    found, _ = recalled(cli, "deploys")
    assert [r["content"] for r in found["results"]] == [DEPLOYS] and "global" in found["tiers"]
    assert DEPLOYS in json.loads(cli("context", "deploys", "--agent", "ada", "--json").stdout)["context"]
    assert not ada_db.exists()
