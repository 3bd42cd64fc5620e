"""An import line naming another agent's row in a shared tier is refused, and refused whole.

The upsert refused such a line, but the import then wrote the line's vector over the owner's
row and recorded the line's ``sources`` as that row's, so a file could blind another agent's
memory to semantic recall, and hide it by hiding one of its own. Each test pairs the refused
line with a line the same import takes, which keeps its vector and its sources.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("offline_embedder")


def _ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _refused(result, count: int = 1) -> dict:
    """A run that refused ``count`` lines as another agent's: exit 2, said on stderr, the report on stdout."""
    assert result.exit_code == 2, result.output
    assert f"{count} line(s) in " in result.stderr and "another agent holds" in result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def pool_file(cli, tmp_path, arcana_home):
    """Pool ``team`` holding bob's note, and a file of carl's: a new note (with its vector), a note
    carrying it, and bob's note claimed by carl with other words and a reversed vector."""
    arcana_home.root.mkdir(parents=True, exist_ok=True)
    _ok(cli("pool", "create", "team", "--json"))
    for agent in ("bob", "carl"):
        _ok(cli("agent", "join", agent, "team", "--json"))
    bob = _ok(cli("remember", "The coffee machine is on floor three.", "--agent", "bob", "--pool", "team", "--json"))["id"]
    carl = _ok(cli("agent", "show", "carl", "--json"))["id"]
    _ok(cli("remember", "The printer jams on Mondays.", "--agent", "carl", "--pool", "team", "--json"))
    exported = tmp_path / "team.jsonl"
    _ok(cli("export", "--pool", "team", "-o", str(exported), "--with-vectors", "--json"))
    header, *records = (json.loads(line) for line in exported.read_text().splitlines())
    (theirs,) = [r for r in records if r["memory"]["id"] == bob]
    (mine,) = [r for r in records if r["memory"]["id"] != bob]
    new = {"memory": dict(mine["memory"], id="carl-new"), "vector": mine["vector"]}
    carrier = {"memory": dict(mine["memory"], id="carl-carrier", content="Printer notes."), "sources": ["carl-new"]}
    claimed = {
        "memory": dict(theirs["memory"], agent_id=carl, content="Carl's words now."),
        "vector": [-v for v in theirs["vector"]],
        "sources": ["carl-new"],
    }
    path = tmp_path / "carl.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (header, new, carrier, claimed)))
    return path, bob


def _semantic(cli, agent: str, query: str) -> list[str]:
    found = _ok(cli("recall", query, "--agent", agent, "--pool", "team", "--mode", "semantic", "--json"))
    return [r["id"] for r in found["results"]]


def test_a_refused_line_leaves_the_owners_vector_alone(cli, pool_file):
    path, bob = pool_file
    assert bob in _semantic(cli, "bob", "where is the coffee machine")
    report = _refused(cli("import", str(path), "--pool", "team", "--json"))
    assert report["ops"]["refused"] == 1
    assert report["vectors_kept"] == 1  # positive control: carl's new note kept the vector it came with
    assert bob in _semantic(cli, "bob", "where is the coffee machine")
    assert "carl-new" in _semantic(cli, "carl", "printer jams")
    shown = _ok(cli("memory", "show", bob, "--pool", "team", "--json"))
    assert shown["content"] == "The coffee machine is on floor three."


def test_a_refused_line_is_not_counted_among_the_imported(cli, pool_file):
    """Beside a bad line, the summary said "the other 3 were imported" of three good lines, one refused."""
    path, _ = pool_file
    path.write_text(path.read_text() + "not json\n")
    done = _refused(cli("import", str(path), "--pool", "team", "--json"))
    assert (done["read"], done["ops"]["refused"]) == (3, 1)
    assert "the other 2 were imported" in cli("import", str(path), "--pool", "team").stderr


def test_a_refused_line_never_makes_the_owners_row_a_carrier(cli, pool_file, tmp_path):
    path, bob = pool_file
    _refused(cli("import", str(path), "--pool", "team", "--json"))
    header, new, *_ = (json.loads(line) for line in path.read_text().splitlines())
    hidden = tmp_path / "hide.jsonl"
    hidden.write_text(json.dumps(header) + "\n" + json.dumps({"memory": dict(new["memory"], visibility="hidden")}) + "\n")
    report = _ok(cli("import", str(hidden), "--pool", "team", "--json"))
    assert report["carriers_withheld"] == 1  # positive control: carl's own carrier followed the hide
    assert _ok(cli("memory", "show", "carl-carrier", "--pool", "team", "--json"))["visibility"] == "hidden"
    shown = _ok(cli("memory", "show", bob, "--pool", "team", "--json"))
    assert (shown["visibility"], shown["archived"]) == ("visible", False)
    assert bob in _semantic(cli, "bob", "where is the coffee machine")


def test_a_refused_remember_from_line_leaves_what_carries_the_owners_row(cli, arcana_home, tmp_path):
    """`remember --from --pool` by carl naming bob's merged-away restatement by id archived bob's
    merged memory (the carrier), though the line itself was refused."""
    arcana_home.root.mkdir(parents=True, exist_ok=True)
    _ok(cli("pool", "create", "team", "--json"))
    for agent in ("bob", "carl"):
        _ok(cli("agent", "join", agent, "team", "--json"))
    said = tmp_path / "bob.jsonl"
    said.write_text('{"content": "I like tea", "id": "tea-a"}\n{"content": "I like tea with milk", "id": "tea-b"}\n')
    _ok(cli("remember", "--from", str(said), "--agent", "bob", "--pool", "team", "--no-reconcile", "--json"))
    assert _ok(cli("consolidate", "--pool", "team", "--json"))["tiers"][0]["merged"] == 1  # tea-b carries tea-a
    claim = tmp_path / "claim.jsonl"
    claim.write_text('{"content": "Tea is bad.", "id": "tea-a"}\n')
    report = _refused(cli("remember", "--from", str(claim), "--agent", "carl", "--pool", "team", "--json"))
    assert (report["carriers_withheld"], len(report["warnings"])) == (0, 1)
    assert (report["written"], report["held_by_others"], report["accepted"]) == (0, 1, {"pool:team": 0})
    assert _ok(cli("memory", "show", "tea-b", "--pool", "team", "--json"))["archived"] is False
    reword = tmp_path / "reword.jsonl"
    reword.write_text('{"content": "I like green tea", "id": "tea-a"}\n')
    report = _ok(cli("remember", "--from", str(reword), "--agent", "bob", "--pool", "team", "--json"))
    assert report["carriers_withheld"] == 1  # positive control: bob's own re-wording reaches his merged memory
    assert (report["written"], report["accepted"]) == (1, {"pool:team": 1})
    assert _ok(cli("memory", "show", "tea-b", "--pool", "team", "--json"))["archived"] is True
