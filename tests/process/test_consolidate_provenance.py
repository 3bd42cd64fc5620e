"""Issue 24: a consolidated memory lists its sources in every result, and an operator's hide or
forget of a source reaches the consolidated memories that carry it (each beside a control)."""

from __future__ import annotations

import json

import pytest

from mcp_client import call, session
from runner import arcana

LINES = [  # two old sessions: each becomes one digest
    {"content": "Caroline: I went to an LGBTQ support group yesterday.", "type": "episodic", "session": "s1",
     "created_at": "2023-05-08T10:00:00Z"},
    {"content": "Caroline: I want to study counseling next year.", "type": "episodic", "session": "s1", "created_at": "2023-05-08T10:01:00Z"},
    {"content": "Melanie: I painted a sunrise over the lake.", "type": "episodic", "session": "s2", "created_at": "2023-06-01T10:00:00Z"},
    {"content": "Melanie: My kids loved the pottery class.", "type": "episodic", "session": "s2", "created_at": "2023-06-01T10:01:00Z"},
]


def recall(cli, query: str) -> list[dict]:
    done = cli("recall", query, "--agent", "ada", "--json")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)["results"]


def digests(cli) -> tuple[dict, dict]:
    """(the support-group digest, the painting digest), as recall returns them."""
    group = next(r for r in recall(cli, "support group counseling") if r.get("sources"))
    paint = next(r for r in recall(cli, "painted sunrise pottery") if r.get("sources"))
    return group, paint


def setup(cli, tmp_path) -> dict[str, str]:
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    assert cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile").exit_code == 0
    assert cli("remember", "I prefer tea over coffee", "--agent", "ada").exit_code == 0
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    assert cli("consolidate", "--agent", "ada").exit_code == 0
    return {m["content"]: m["id"] for m in listed}


def test_results_list_the_sources_they_carry_and_only_those(cli, tmp_path):
    ids = setup(cli, tmp_path)
    group, paint = digests(cli)
    assert group["sources"] == sorted([ids[LINES[0]["content"]], ids[LINES[1]["content"]]])
    assert paint["sources"] == sorted([ids[LINES[2]["content"]], ids[LINES[3]["content"]]])
    tea = next(r for r in recall(cli, "tea coffee") if "tea" in r["content"])
    assert "sources" not in tea  # control: a plain memory carries nothing
    shown = json.loads(cli("memory", "show", group["id"], "--agent", "ada", "--json").stdout)
    assert shown["sources"] == group["sources"]


async def test_mcp_recall_and_get_list_sources(tmp_path):
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    arcana("remember", "--from", str(path), "--agent", "ada", "--no-reconcile")
    arcana("consolidate", "--agent", "ada")
    found = json.loads(arcana("recall", "support group counseling", "--agent", "ada", "--json"))["results"]
    group = next(r for r in found if r.get("sources"))
    async with session("--agent", "ada") as client:
        failed, found = await call(client, "recall", query="support group counseling")
        assert not failed and any(r.get("sources") == group["sources"] for r in found["results"])
        failed, got = await call(client, "get", id=group["id"])
        assert not failed and got["sources"] == group["sources"]


def test_hiding_or_forgetting_a_source_reaches_its_digest_only(cli, tmp_path):
    ids = setup(cli, tmp_path)
    group, paint = digests(cli)
    hidden = cli("memory", "set", ids[LINES[0]["content"]], "--agent", "ada", "--visibility", "hidden", "--json")
    assert hidden.exit_code == 0, hidden.output
    assert [r["id"] for r in json.loads(hidden.stdout)["reached"]] == [group["id"]]
    assert group["id"] not in [r["id"] for r in recall(cli, "support group counseling")]
    assert paint["id"] in [r["id"] for r in recall(cli, "painted sunrise pottery")]  # control: the other digest
    shown = json.loads(cli("memory", "show", group["id"], "--agent", "ada", "--json").stdout)
    assert shown["visibility"] == "hidden"

    forgot = cli("memory", "forget", ids[LINES[2]["content"]], "--agent", "ada", "--json")
    assert forgot.exit_code == 0, forgot.output
    assert [r["id"] for r in json.loads(forgot.stdout)["reached"]] == [paint["id"]]
    assert paint["id"] not in [r["id"] for r in recall(cli, "painted sunrise pottery")]
    assert any("tea" in r["content"] for r in recall(cli, "tea coffee"))  # control: the rest still answers


PROMOTED = [  # ada's own old turns, important enough to be promoted: `consolidate --global` digests their copies
    {"content": "Ada: the launch code word is heliotrope.", "type": "episodic", "session": "g1",
     "created_at": "2023-05-08T10:00:00Z", "importance": 0.95},
    {"content": "Ada: my sister lives in Lisbon now.", "type": "episodic", "session": "g1",
     "created_at": "2023-05-08T10:01:00Z", "importance": 0.95},
    {"content": "Ada: I painted a sunrise over the lake.", "type": "episodic", "session": "g2",
     "created_at": "2023-06-01T10:00:00Z", "importance": 0.95},
    {"content": "Ada: my kids loved the pottery class.", "type": "episodic", "session": "g2",
     "created_at": "2023-06-01T10:01:00Z", "importance": 0.95},
]


def test_hiding_or_forgetting_a_source_reaches_the_global_digest_of_its_copy(cli, no_embedder, tmp_path):
    """A digest the global tier made of ada's promoted copies carries their content to every agent:
    ada's hide (or forget) of a source must reach it there too, not only withdraw the copy."""
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    path = tmp_path / "promoted.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in PROMOTED))
    stored = cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile", "--json")
    assert stored.exit_code == 0 and json.loads(stored.stdout)["accepted"]["global"] == 4, stored.output
    ids = {m["content"]: m["id"] for m in json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)}
    assert cli("consolidate", "--global").exit_code == 0

    def bob_recalls(query: str) -> list[str]:
        done = cli("recall", query, "--agent", "bob", "--mode", "keyword", "--json")
        assert done.exit_code == 0, done.output
        return [r["content"] for r in json.loads(done.stdout)["results"]]

    assert any("heliotrope" in c and c.startswith("On 8 May 2023") for c in bob_recalls("heliotrope"))  # the digest
    hidden = cli("memory", "set", ids[PROMOTED[0]["content"]], "--agent", "ada", "--visibility", "hidden", "--json")
    assert hidden.exit_code == 0, hidden.output
    assert not any("heliotrope" in c for c in bob_recalls("heliotrope"))
    assert any("pottery" in c for c in bob_recalls("pottery"))  # control: the other global digest still answers

    forgot = cli("memory", "forget", ids[PROMOTED[3]["content"]], "--agent", "ada", "--json")
    assert forgot.exit_code == 0, forgot.output
    assert not any("pottery" in c for c in bob_recalls("pottery"))
    listed = json.loads(cli("memory", "list", "--global", "--json").stdout)
    # nothing left that carries a withheld source; the copies of the other turns, live in ada's store,
    # answer as themselves again (they were digested with the withheld ones)
    assert sorted(m["content"] for m in listed) == sorted([PROMOTED[1]["content"], PROMOTED[2]["content"]]), listed
    assert any("sister lives in Lisbon" in c for c in bob_recalls("sister"))


def test_a_newer_fact_ends_the_global_digest_of_its_old_versions_copy(cli, no_embedder, tmp_path):
    """Superseding a promoted turn ended its global copy but not the digest `consolidate --global` made
    of that copy, so every agent (ada too) still recalled "my sister lives in Lisbon" after "she lives
    in Porto now", where a digest in ada's own store ends with it. `--current` brings it back."""
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    path = tmp_path / "promoted.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in PROMOTED))
    assert cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile").exit_code == 0
    assert cli("consolidate", "--global").exit_code == 0

    def recalls(agent: str) -> list[str]:
        done = cli("recall", "sister pottery", "--agent", agent, "--mode", "keyword", "--json")
        assert done.exit_code == 0, done.output
        return [r["content"] for r in json.loads(done.stdout)["results"]]

    assert any("sister lives in Lisbon" in c for c in recalls("bob"))  # the digest of the copy
    moved = cli("remember", "My sister lives in Porto now", "--agent", "ada", "--json")
    assert moved.exit_code == 0, moved.output
    (old,) = json.loads(moved.stdout)["supersedes"]
    for agent in ("bob", "ada"):
        assert not any("Lisbon" in c for c in recalls(agent)), agent
        assert any("pottery" in c for c in recalls(agent))  # control: the other global digest still answers
    # the other turn the ended digest carried, live in ada's store, answers every agent as itself
    heliotrope = cli("recall", "heliotrope", "--agent", "bob", "--mode", "keyword", "--json")
    assert [r["content"] for r in json.loads(heliotrope.stdout)["results"]] == [PROMOTED[0]["content"]]
    again = cli("memory", "set", old, "--agent", "ada", "--current")
    assert again.exit_code == 0, again.output
    assert "also made current again 1 consolidated memories" in again.stderr, again.stderr  # it said "withheld"
    assert any("sister lives in Lisbon" in c for c in recalls("bob"))


SESSION = [  # one old session: one digest of four turns, the last repeating the first's words
    {"content": "Ada: I live in Berlin.", "type": "episodic", "session": "b1", "created_at": "2023-05-08T10:00:00Z"},
    {"content": "Bob: My dog is called Rex.", "type": "episodic", "session": "b1", "created_at": "2023-05-08T10:01:00Z"},
    {"content": "Ada: I play the cello every weekend.", "type": "episodic", "session": "b1",
     "created_at": "2023-05-08T10:02:00Z"},
    {"content": "Bob: So you live in Berlin!", "type": "episodic", "session": "b1", "created_at": "2023-05-08T10:03:00Z"},
]


@pytest.mark.parametrize("withhold", [("forget",), ("set", "--visibility", "hidden"), ("set", "--content", "I live.")])
def test_the_other_turns_of_a_digest_a_withheld_turn_reached_answer_as_themselves(cli, no_embedder, tmp_path, withhold):
    """Forgetting (hiding, re-wording) one turn withholds the digest carrying it, and the other turns it
    archived answered nowhere: "My dog is called Rex" was lost to recall for a turn about Berlin. They
    answer as themselves again, as after a purge; a turn repeating the withheld one's words stays withheld."""
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in SESSION))
    assert cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile").exit_code == 0
    ids = {m["content"]: m["id"] for m in json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)}
    assert cli("consolidate", "--agent", "ada").exit_code == 0

    def answers(query: str) -> list[str]:
        done = cli("recall", query, "--agent", "ada", "--mode", "keyword", "--json")
        assert done.exit_code == 0, done.output
        return [r["id"] for r in json.loads(done.stdout)["results"]]

    (digest,) = answers("Rex")
    assert answers("Berlin") == [digest] and answers("cello") == [digest]
    done = cli("memory", *withhold[:1], ids[SESSION[0]["content"]], *withhold[1:], "--agent", "ada", "--json")
    assert done.exit_code == 0, done.output
    assert [r["id"] for r in json.loads(done.stdout)["reached"]] == [digest]
    assert answers("Rex")[0] == ids[SESSION[1]["content"]] and answers("cello")[0] == ids[SESSION[2]["content"]]
    assert answers("Berlin") == []  # the repeating turn stays archived into the withheld digest


def test_restoring_a_forgotten_digest_brings_back_the_global_copies_of_its_turns(cli, no_embedder, tmp_path):
    """Consolidation leaves the global copies of the promoted turns it digests live; forgetting the
    digest withholds them, and restoring it left them withheld: bob never read "heliotrope" again.
    Control: the other session's digest and its turns' copies are untouched throughout."""
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    path = tmp_path / "promoted.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in PROMOTED))
    assert cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile").exit_code == 0
    assert cli("consolidate", "--agent", "ada").exit_code == 0

    def bob_recalls() -> set[str]:
        done = cli("recall", "heliotrope pottery", "--agent", "bob", "--mode", "keyword", "--json")
        assert done.exit_code == 0, done.output
        return {w for w in ("heliotrope", "pottery") if any(w in r["content"] for r in json.loads(done.stdout)["results"])}

    (digest,) = [m["id"] for m in json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
                 if "heliotrope" in m["content"]]
    assert bob_recalls() == {"heliotrope", "pottery"}
    assert cli("memory", "forget", digest, "--agent", "ada").exit_code == 0
    assert bob_recalls() == {"pottery"}
    restored = cli("memory", "restore", digest, "--agent", "ada", "--json")
    assert restored.exit_code == 0, restored.output
    assert bob_recalls() == {"heliotrope", "pottery"}
