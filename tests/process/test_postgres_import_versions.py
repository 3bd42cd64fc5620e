"""An exported memory with earlier versions, imported into a pool on a PostgreSQL server, answers
`recall --as-of` as the same file imported into a SQLite pool does: every version arrives, each valid
when it was. Real server (the suite's), the real Typer app, real SQLite pool beside it."""

from __future__ import annotations

import json

import pytest
from runner import keyword_only

MOVES = [
    {"content": "I live in Berlin", "created_at": "2024-01-01T10:00:00Z"},
    {"content": "I live in Lisbon now", "created_at": "2024-03-01T10:00:00Z"},
    {"content": "I live in Porto now", "created_at": "2024-05-01T10:00:00Z"},
]
ASKED = {"2024-02-01": "I live in Berlin", "2024-04-01": "I live in Lisbon now", "2024-06-01": "I live in Porto now"}


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("others", [0, 250], ids=["one-by-one", "copied-in"])  # 200 rows or more: the COPY path
def test_an_imported_version_chain_answers_as_of_on_a_server_pool_as_on_sqlite(cli, arcana_home, pg_url, tmp_path, others):
    keyword_only(arcana_home)
    for args in (("agent", "create", "ada"), ("agent", "create", "bob"), ("pool", "create", "team", "--url", pg_url),
                 ("pool", "create", "local"), ("agent", "join", "bob", "team"), ("agent", "join", "bob", "local")):
        ok(cli(*args))
    moves = tmp_path / "moves.jsonl"
    moves.write_text("".join(json.dumps(line) + "\n" for line in MOVES))
    assert json.loads(ok(cli("remember", "--from", str(moves), "-a", "ada", "--json")))["decisions"]["update"] == 2
    if others:
        notes = tmp_path / "notes.jsonl"
        notes.write_text("".join(json.dumps({"content": f"kettle note {i}", "created_at": "2023-12-01T10:00:00Z"}) + "\n"
                                 for i in range(others)))
        ok(cli("remember", "--from", str(notes), "-a", "ada", "--no-reconcile"))
    exported = tmp_path / "ada.jsonl"
    ok(cli("export", "-a", "ada", "-o", str(exported)))
    for pool in ("team", "local"):
        ok(cli("import", str(exported), "--pool", pool, "--json"))

    def versions(pool: str) -> list[tuple]:
        rows = json.loads(ok(cli("memory", "list", "--pool", pool, "--all", "--json")))
        return sorted((r["content"], r["valid_to"] is None, r["superseded_by"] is not None) for r in rows
                      if "kettle" not in r["content"])

    def answers(pool: str) -> dict[str, list[str]]:
        found = {}
        for when in (*ASKED, None):
            at = ("--as-of", when) if when else ()
            got = json.loads(ok(cli("recall", "where do I live", "-a", "bob", "--pool", pool, *at, "--json")))
            found[when] = [r["content"] for r in got["results"] if r["content"] in {m["content"] for m in MOVES}]
        return found

    assert versions("team") == versions("local") == sorted(
        (m["content"], m is MOVES[-1], m is not MOVES[-1]) for m in MOVES)
    local = answers("local")
    assert local == {**{when: [said] for when, said in ASKED.items()}, None: ["I live in Porto now"]}  # the control
    assert answers("team") == local


def test_a_later_export_imported_again_ends_on_a_server_pool_what_its_source_replaced(cli, arcana_home, pg_url, tmp_path):
    keyword_only(arcana_home)
    for args in (("agent", "create", "ada"), ("pool", "create", "team", "--url", pg_url), ("pool", "create", "local")):
        ok(cli(*args))
    ok(cli("remember", "I live in Berlin", "-a", "ada"))
    ok(cli("remember", "I have a cat named Miso", "-a", "ada"))
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    ok(cli("export", "-a", "ada", "-o", str(before)))
    ok(cli("remember", "I moved to Lisbon, I live in Lisbon now", "-a", "ada"))
    ok(cli("export", "-a", "ada", "-o", str(after)))

    def current(pool: str) -> set[str]:
        rows = json.loads(ok(cli("memory", "list", "--pool", pool, "--all", "--json")))
        return {r["content"] for r in rows if r["valid_to"] is None and r["superseded_by"] is None}

    for pool in ("team", "local"):
        ok(cli("import", str(before), "--pool", pool))
        assert current(pool) == {"I live in Berlin", "I have a cat named Miso"}
        ok(cli("import", str(after), "--pool", pool))
        assert current(pool) == {"I moved to Lisbon, I live in Lisbon now", "I have a cat named Miso"}  # the cat: control
        ok(cli("import", str(before), "--pool", pool))  # the older file again: Berlin stays ended
        assert current(pool) == {"I moved to Lisbon, I live in Lisbon now", "I have a cat named Miso"}
