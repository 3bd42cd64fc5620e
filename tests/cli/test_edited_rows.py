"""Rows an outside edit left unreadable (invalid JSON in tags, an unknown enum, a timestamp no
datetime holds) never take down their store: not quarantined, not failing every read; the file keeps
them as they are and `doctor` names them. Bob's store, in the same home, is the positive control.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memory.home import Home
from memory.sqlite.connection import dbapi
from runner import keyword_only, run_arcana


@pytest.fixture(scope="module")
def _made(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """ada (three memories) and bob (one), keyword-only, made once by the CLI; their ids by name."""
    home = Home(tmp_path_factory.mktemp("edited") / "home")
    keyword_only(home)
    for name, texts in (("ada", ["The user prefers metric units.", "Tea is served at four.", "The door code is 1234."]),
                        ("bob", ["The kettle is blue."])):
        assert run_arcana("agent", "create", name, home=home).returncode == 0
        for text in texts:
            assert run_arcana("remember", text, "-a", name, "--tag", "house", home=home).returncode == 0
    return home.root, {n: json.loads(run_arcana("agent", "show", n, "--json", home=home).stdout)["id"] for n in ("ada", "bob")}


@pytest.fixture
def _home(_made):
    """A copy of the made home as this test's home (each test edits its own); the ids by name."""
    def copy(home) -> dict[str, str]:
        shutil.copytree(_made[0], home.root)
        return dict(_made[1])
    return copy


def _edit(db, sql: str) -> str:
    """An outside edit of the row about tea; its id."""
    conn = dbapi().connect(str(db))
    try:
        conn.execute(f"UPDATE memories SET {sql} WHERE content LIKE 'Tea%'")
        conn.commit()
        return conn.execute("SELECT id FROM memories WHERE content LIKE 'Tea%'").fetchone()[0]
    finally:
        conn.close()


def _stored(db, bad_id: str) -> tuple:
    conn = dbapi().connect(str(db))
    try:
        return conn.execute("SELECT * FROM memories WHERE id = ?", (bad_id,)).fetchone()
    finally:
        conn.close()


def test_invalid_json_in_tags_does_not_quarantine_the_store(arcana_home, _home):
    """SQLite's 'malformed JSON' (json_each over one cell) read as a corrupt file: a prune moved ada's
    whole store to quarantine and started her on an empty one."""
    ids = _home(arcana_home)
    db = arcana_home.agent_db(ids["ada"])
    bad_id = _edit(db, "tags = '[not json'")
    before = _stored(db, bad_id)

    for args in (["prune", "-a", "ada", "--max-entries", "1", "--dry-run"], ["recall", "units", "-a", "ada", "--tag", "house"]):
        done = run_arcana(*args, home=arcana_home)
        assert done.returncode == 0, done.stderr
        assert "quarantine" not in done.stderr and "corrupt" not in done.stderr
    assert "metric units" in done.stdout  # a healthy row of the same store, by its tag
    assert not (arcana_home.root / "quarantine").exists()
    assert _stored(db, bad_id) == before  # the file keeps the row as it was

    done = run_arcana("recall", "kettle", "-a", "bob", "--tag", "house", home=arcana_home)
    assert done.returncode == 0 and "kettle is blue" in done.stdout  # control: the other store


@pytest.mark.parametrize("damage, what", [
    ("type = 'gossip'", "unknown type"),
    ("tags = '[not json'", "tags not a JSON list"),
    ("tags = '{\"a\": 1}'", "tags not a JSON list"),
    ("created_at = 'yesterday'", "created_at not a time"),
    ("updated_at = 1e300", "updated_at not a time"),
    ("pinned = 9", "pinned neither 0 nor 1"),
])
def test_an_unreadable_row_is_left_out_of_reads_and_named_by_doctor(arcana_home, _home, damage, what):
    """One such row failed every read of its store: recall lost the tier ('degraded'), memory list and
    consolidate exited 5, and invalid tags or a text time were a traceback (memory list, prune)."""
    ids = _home(arcana_home)
    db = arcana_home.agent_db(ids["ada"])
    bad_id = _edit(db, damage)
    before = _stored(db, bad_id)

    done = run_arcana("memory", "list", "-a", "ada", "--json", home=arcana_home)
    assert done.returncode == 0, done.stderr
    assert sorted(r["content"] for r in json.loads(done.stdout)) == ["The door code is 1234.", "The user prefers metric units."]
    for text in ("metric units", "tea four"):
        done = run_arcana("recall", text, "-a", "ada", "--json", home=arcana_home)
        assert done.returncode == 0 and "degraded" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    done = run_arcana("recall", "metric units", "-a", "ada", "--json", home=arcana_home)
    assert "metric units" in done.stdout and bad_id not in done.stdout
    for args in (["consolidate", "-a", "ada", "--dry-run"], ["prune", "-a", "ada", "--max-entries", "1", "--dry-run"]):
        done = run_arcana(*args, home=arcana_home)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr

    done = run_arcana("memory", "show", bad_id, "-a", "ada", home=arcana_home)  # asked for by id: named, one line
    assert done.returncode == 5 and done.stderr.count("\n") == 1 and bad_id in done.stderr and "arcana doctor" in done.stderr

    done = run_arcana("doctor", "--json", home=arcana_home)
    assert done.returncode == 1
    [failure] = [c for c in json.loads(done.stdout)["checks"] if not c["ok"]]
    assert failure["name"] == f"rows agents/{ids['ada']}/memory.db" and f"{bad_id} ({what})" in failure["detail"]
    assert _stored(db, bad_id) == before  # nothing read or listed rewrote it

    done = run_arcana("recall", "kettle", "-a", "bob", "--json", home=arcana_home)
    assert done.returncode == 0 and "kettle is blue" in done.stdout  # control: the other store


def test_export_writes_every_other_row_and_names_the_unreadable_one(arcana_home, _home, tmp_path):
    """An export stopped at the first unreadable row: nothing of the store could be exported."""
    ids = _home(arcana_home)
    bad_id = _edit(arcana_home.agent_db(ids["ada"]), "type = 'gossip'")
    target = tmp_path / "ada.jsonl"

    done = run_arcana("export", "-a", "ada", "-o", str(target), home=arcana_home)
    assert done.returncode == 5
    assert f"warning: not exported: memory {bad_id} cannot be read" in done.stderr
    assert done.stderr.splitlines()[-1].startswith("arcana: error: 1 stored row could not be read")
    records = [json.loads(line) for line in target.read_text().splitlines()[1:]]
    assert sorted(r["memory"]["content"] for r in records) == ["The door code is 1234.", "The user prefers metric units."]

    done = run_arcana("export", "-a", "bob", "-o", str(tmp_path / "bob.jsonl"), home=arcana_home)
    assert done.returncode == 0 and "warning" not in done.stderr  # control: a healthy store


def test_an_unreadable_ledger_row_is_one_line_and_named_by_doctor(arcana_home, _home, tmp_path):
    """The ledger refuses updates and deletes, not an outside INSERT: a row whose image is not JSON was a
    traceback in memory history, memory revert and export --with-history, and doctor said all was well."""
    ids = _home(arcana_home)
    db = arcana_home.agent_db(ids["ada"])
    tea = _edit(db, "importance = importance")  # no change: the tea row's id
    conn = dbapi().connect(str(db))
    conn.execute("INSERT INTO memory_ledger (memory_id, op, actor, at, before, after) VALUES (?, 'update', 'x', 1.7e9, '{bad', '[1]')", (tea,))
    conn.commit()
    seq = conn.execute("SELECT max(seq) FROM memory_ledger").fetchone()[0]
    conn.close()

    for args in (["memory", "history", tea, "-a", "ada"], ["memory", "revert", tea, "--to", "1", "-a", "ada"]):
        done = run_arcana(*args, home=arcana_home)
        assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
        assert f"ledger row {seq} of memory {tea} cannot be read" in done.stderr
    target = tmp_path / "ada.jsonl"
    done = run_arcana("export", "-a", "ada", "--with-history", "-o", str(target), home=arcana_home)
    assert done.returncode == 5 and f"not exported: ledger row {seq}" in done.stderr, done.stderr
    assert len(target.read_text().splitlines()) == 1 + 3  # every memory, with the rest of its history

    done = run_arcana("doctor", "--json", home=arcana_home)
    [failure] = [c for c in json.loads(done.stdout)["checks"] if not c["ok"]]
    assert failure["name"] == f"ledger agents/{ids['ada']}/memory.db" and f"{seq} (memory {tea})" in failure["detail"]

    done = run_arcana("recall", "tea four", "-a", "ada", "--json", home=arcana_home)
    assert done.returncode == 0 and tea in done.stdout  # control: the memory itself still answers
    [other] = json.loads(run_arcana("recall", "metric", "-a", "ada", "--json", home=arcana_home).stdout)["results"]
    done = run_arcana("memory", "history", other["id"], "-a", "ada", home=arcana_home)
    assert done.returncode == 0, done.stderr  # control: another memory's history


@pytest.mark.parametrize("damage", ["type = 'gossip'", "tags = '[not json'", "created_at = 'yesterday'"])
def test_revert_repairs_an_unreadable_row_from_its_ledger(arcana_home, _home, damage):
    """No command could repair a row an outside edit left unreadable: `memory history` and `memory revert`
    read the row first and failed on it, so doctor's only advice was a restore from a backup, losing
    everything written since. A revert now takes the ledger row's image for what cannot be read."""
    ids = _home(arcana_home)
    db = arcana_home.agent_db(ids["ada"])
    bad_id = _edit(db, damage)
    assert bad_id not in run_arcana("recall", "tea four", "-a", "ada", "--json", home=arcana_home).stdout

    done = run_arcana("doctor", "--json", home=arcana_home)
    [failure] = [c for c in json.loads(done.stdout)["checks"] if not c["ok"]]
    assert f"arcana memory revert {bad_id} --to SEQ" in failure["detail"] and "backup" not in failure["detail"]
    done = run_arcana("memory", "history", bad_id, "-a", "ada", "--json", home=arcana_home)
    assert done.returncode == 0, done.stderr
    [created] = json.loads(done.stdout)
    done = run_arcana("memory", "revert", bad_id, "--to", str(created["seq"]), "-a", "ada", home=arcana_home)
    assert done.returncode == 0 and "can be read again" in done.stderr, done.stderr

    done = run_arcana("recall", "tea four", "-a", "ada", "--json", home=arcana_home)
    assert done.returncode == 0 and bad_id in done.stdout, done.stderr
    shown = json.loads(run_arcana("memory", "show", bad_id, "-a", "ada", "--json", home=arcana_home).stdout)
    assert shown["type"] == created["after"]["type"] and shown["tags"] == ["house"]
    history = json.loads(run_arcana("memory", "history", bad_id, "-a", "ada", "--json", home=arcana_home).stdout)
    assert [r["op"] for r in history] == ["insert", "revert"] and history[-1]["actor"] == "cli"
    assert run_arcana("doctor", home=arcana_home).returncode == 0

    done = run_arcana("memory", "revert", bad_id, "--to", str(created["seq"]), "-a", "ada", home=arcana_home)
    assert done.returncode == 0 and "was already as ledger row" in done.stderr, done.stderr  # control: a readable row
    done = run_arcana("recall", "metric units", "-a", "ada", "--json", home=arcana_home)
    assert done.returncode == 0 and "metric units" in done.stdout  # control: a healthy row of the same store


@pytest.mark.parametrize("damage", ["type = 'gossip'", "tags = '[not json'", "created_at = 'yesterday'"])
@pytest.mark.parametrize("args", [["--min-importance", "0.99"], ["--max-entries", "0"], ["--max-entries", "0", "--mode", "purge", "-y"]])
def test_prune_leaves_an_unreadable_row_as_it_is(arcana_home, _home, damage, args):
    """Prune skipped only a row whose time was text: a row with an unknown type or bad tags was archived
    (or purged) by a prune that cannot read it, while consolidation and every read leave it be."""
    ids = _home(arcana_home)
    db = arcana_home.agent_db(ids["ada"])
    bad_id = _edit(db, damage)
    before = _stored(db, bad_id)

    done = run_arcana("prune", "-a", "ada", *args, "--json", home=arcana_home)
    assert done.returncode == 0, done.stderr
    assert _stored(db, bad_id) == before
    conn = dbapi().connect(str(db))
    try:
        assert conn.execute("SELECT op FROM memory_ledger WHERE memory_id = ? ORDER BY seq", (bad_id,)).fetchall() == [("insert",)]
        others = conn.execute("SELECT count(*) FROM memories WHERE id != ? AND archived = 0", (bad_id,)).fetchone()[0]
    finally:
        conn.close()
    assert others == 0  # control: the readable rows of the same store went
