"""A global copy an operator's edit makes or re-words is embedded then, as a promotion at write time
is: `memory set --importance` promoted a memory with no vector in the global tier (and, in a home
where nothing was promoted yet, made no copy at all), so another agent's semantic recall missed it
and `doctor` failed until an `arcana reindex`. Real CLI, real fastembed, real SQLite files."""

from __future__ import annotations

import json


def ok(result) -> dict | list:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def semantic(cli, agent: str, query: str) -> list[tuple[str, str]]:
    found = ok(cli("recall", query, "--agent", agent, "--mode", "semantic", "--json"))
    return [(r["content"], r["scope"]) for r in found["results"]]


def test_a_copy_an_operator_promotes_or_rewords_is_found_by_meaning(cli, arcana_home):
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    cat = ok(cli("remember", "The cat is named Miso", "--agent", "ada", "--json"))
    assert cat["accepted"] == ["private"]  # not promoted at write: a fresh home has no global tier yet
    assert not arcana_home.global_db.exists()

    promoted = ok(cli("memory", "set", cat["id"], "--agent", "ada", "--importance", "0.95", "--json"))
    assert [(c["tier"], c["op"], c["changed"]) for c in promoted["copies"]] == [("global", "promote", True)]
    # Control: a fact promoted at write time, by the federation, is found by meaning as before.
    dog = ok(cli("remember", "The dog is named Rex", "--agent", "ada", "--importance", "0.95", "--json"))
    assert dog["accepted"] == ["private", "global"]
    found = semantic(cli, "bob", "what is the pet called")
    assert ("The cat is named Miso", "global") in found and ("The dog is named Rex", "global") in found

    ok(cli("memory", "set", cat["id"], "--agent", "ada", "--content", "The cat is named Tofu", "--json"))
    found = semantic(cli, "bob", "what is the pet called")
    assert ("The cat is named Tofu", "global") in found and not any("Miso" in c for c, _ in found)
    assert ("The cat is named Tofu", "private") in semantic(cli, "ada", "what is the pet called")  # her own row too
    doctor = ok(cli("doctor", "--json"))
    vectors = [c for c in doctor["checks"] if c["name"] == "vectors"]
    assert vectors and vectors[0]["ok"], vectors
