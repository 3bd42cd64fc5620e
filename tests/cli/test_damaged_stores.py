"""Damaged stores are found by `doctor`, fail `reindex` with exit 5, and can be repaired; never a silent "ok".

Each test damages a real store file the way an outside edit would, then runs
the real entry point in subprocesses. Bob's store, in the same home, is the
positive control: it stays healthy and keeps answering.
"""

from __future__ import annotations

import json
import shutil

import pytest

from memory.home import Home
from memory.sqlite.connection import dbapi, load_vec
from runner import keyword_only, run_arcana

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _edit(db, sql: str) -> None:
    """An outside edit of the SQLite file (sqlite-vec loaded, as a vec0 table needs)."""
    conn = dbapi().connect(str(db))
    try:
        load_vec(conn)
        conn.execute(sql)
        conn.commit()
    finally:
        conn.close()


def _agent_id(home, name: str) -> str:
    return json.loads(run_arcana("agent", "show", name, "--json", home=home).stdout)["id"]


def _failures(home) -> tuple[int, list[dict]]:
    done = run_arcana("doctor", "--json", home=home)
    return done.returncode, [c for c in json.loads(done.stdout)["checks"] if not c["ok"]]


@pytest.fixture(scope="module")
def _made(tmp_path_factory):
    """Homes with ada (two memories) and bob (one), made by the CLI once per file and kind."""
    made: dict[bool, Home] = {}

    def make(keyword: bool) -> Home:
        if keyword not in made:
            home = made[keyword] = Home(tmp_path_factory.mktemp("damaged") / "home")
            if keyword:
                keyword_only(home)
            for name, texts in (("ada", ["The user prefers metric units.", "Tea is served at four."]), ("bob", ["The kettle is blue."])):
                assert run_arcana("agent", "create", name, home=home).returncode == 0
                for text in texts:
                    assert run_arcana("remember", text, "-a", name, home=home).returncode == 0
        return made[keyword]
    return make


@pytest.fixture
def _home_with_two_agents(_made):
    """The made home copied as this test's home (keyword-only with ``keyword``)."""
    def copy(home, *, keyword: bool = False) -> None:
        shutil.copytree(_made(keyword).root, home.root)
    return copy


@pytest.mark.parametrize(
    "damage",
    [
        "DROP TABLE memory_vec_1_auxiliary",  # writes fail; a re-embed could not drop the old index
        "DELETE FROM memory_vec_1_chunks",  # silent: KNN finds nothing, reindex said all was well
        "DROP TABLE memory_vec_1_rowids",
    ],
)
def test_a_damaged_vector_index_is_reported_fails_reindex_and_is_rebuilt(arcana_home, _home_with_two_agents, damage):
    _home_with_two_agents(arcana_home)
    ada = _agent_id(arcana_home, "ada")
    _edit(arcana_home.agent_db(ada), damage)

    code, failures = _failures(arcana_home)
    assert code == 1
    [failure] = failures  # only ada's index: bob's store, the rest of the home still ok
    assert ada in failure["name"] or "ada" in failure["name"]
    assert "memory_vec_1" in failure["detail"] and "damaged" in failure["detail"]
    assert f"arcana reindex --agent ada --re-embed --model {MODEL}" in failure["detail"]

    done = run_arcana("reindex", "--all", "--json", home=arcana_home)
    assert done.returncode == 5, done.stderr  # a failed store, as cron and CI must see it
    agents = {a["agent"]: a for a in json.loads(done.stdout)["agents"]}
    assert "damaged" in agents["ada"]["error"] and "bob" in agents and "error" not in agents["bob"]  # bob still done
    [line] = [line for line in done.stderr.splitlines() if line.startswith("arcana: error: ada:")]
    assert "--re-embed" in line

    done = run_arcana("reindex", "--agent", "ada", "--re-embed", "--model", MODEL, home=arcana_home)
    assert done.returncode == 0, done.stderr
    assert _failures(arcana_home) == (0, [])

    done = run_arcana("recall", "units the user likes", "-a", "ada", "--json", home=arcana_home)
    assert done.returncode == 0 and "falling back" not in done.stderr, done.stderr
    assert "metric units" in done.stdout
    listed = json.loads(run_arcana("memory", "list", "-a", "ada", "--json", home=arcana_home).stdout)
    assert len(listed) == 2  # nothing lost
    assert run_arcana("remember", "Coffee at nine.", "-a", "ada", home=arcana_home).returncode == 0


def test_a_dropped_vector_index_is_backfilled_by_reindex(arcana_home, _home_with_two_agents):
    """Control: a whole pinned index dropped is rows without vectors, which a plain reindex refills."""
    _home_with_two_agents(arcana_home)
    ada = _agent_id(arcana_home, "ada")
    _edit(arcana_home.agent_db(ada), "DROP TABLE memory_vec_1")
    code, failures = _failures(arcana_home)
    assert code == 1 and [f["name"] for f in failures] == ["vectors"] and "ada: 2 of 2" in failures[0]["detail"]
    assert run_arcana("reindex", "--all", home=arcana_home).returncode == 0
    assert _failures(arcana_home) == (0, [])
@pytest.mark.parametrize("column, value", [("importance", 7.0), ("confidence", -2.0)])
def test_a_row_out_of_range_is_read_clamped_and_reported_with_its_id(arcana_home, _home_with_two_agents, column, value):
    _home_with_two_agents(arcana_home, keyword=True)
    ada = _agent_id(arcana_home, "ada")
    db = arcana_home.agent_db(ada)
    _edit(db, f"UPDATE memories SET {column} = {value} WHERE content LIKE '%metric%'")
    conn = dbapi().connect(str(db))
    bad_id = conn.execute("SELECT id FROM memories WHERE content LIKE '%metric%'").fetchone()[0]
    conn.close()

    done = run_arcana("memory", "list", "-a", "ada", "--json", home=arcana_home)
    assert done.returncode == 0, done.stderr
    rows = {r["id"]: r for r in json.loads(done.stdout)}
    assert len(rows) == 2 and rows[bad_id][column] == (1.0 if value > 1 else 0.0)  # clamped on read

    done = run_arcana("recall", "metric units", "-a", "ada", "--json", home=arcana_home)
    assert done.returncode == 0 and "degraded" not in done.stderr, done.stderr
    assert bad_id in done.stdout
    done = run_arcana("recall", "kettle", "-a", "bob", "--json", home=arcana_home)
    assert done.returncode == 0 and "kettle is blue" in done.stdout  # control: the other store

    code, failures = _failures(arcana_home)
    assert code == 1
    [failure] = failures
    fix_verb = "set" if column == "importance" else "revert"
    assert failure["name"] == f"rows agents/{ada}/memory.db"
    assert bad_id in failure["detail"] and column in failure["detail"] and f"arcana memory {fix_verb}" in failure["detail"]
    conn = dbapi().connect(str(db))  # reading never rewrote the row
    assert conn.execute(f"SELECT {column} FROM memories WHERE id = ?", (bad_id,)).fetchone()[0] == value
    conn.close()

    # The fix doctor names, by the CLI: importance is set; any other value restored from the ledger.
    fix = ["set", bad_id, "--importance", "0.5"] if column == "importance" else ["revert", bad_id, "--to", "1"]
    assert run_arcana("memory", *fix, "-a", "ada", home=arcana_home).returncode == 0
    assert _failures(arcana_home) == (0, [])
