"""Vault registration, incremental indexing, search and the CLI, over real folders and real SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import unicodedata
from datetime import UTC, datetime

import pytest
from runner import run_arcana as _cli

from memory.errors import InvalidRequestError, NotFoundError
from memory.graph.edges import EdgeStore
from memory.locks import exclusive
from memory.markdown.notes import note_id
from memory.types import MemoryQuery, MemoryScope, RetrievalMode
from memory.vaults.indexer import check_vault, index_vault, open_store
from memory.vaults.registry import VaultRegistry
from memory.vaults.search import search_vault
from memory.vaults.state import load_state

NOTES = {
    "Home.md": "---\ntags: [start]\n---\nWelcome. See [[Projects/Alpha]] and [[beta|the beta]] and ![[chart.png]].",
    "Projects/Alpha.md": "---\naliases: [A1]\n---\n# Goal\nMetric units everywhere. Back to [[Home#top]].",
    "Projects/Beta.md": "Beta uses [[A1]] and [[Nowhere]]. #status/active",
    "assets/chart.png": b"\x89PNG\r\n",
}


@pytest.fixture
def vault(make_vault, arcana_home):
    root = make_vault(NOTES, name="notes")
    arcana_home.ensure()
    return VaultRegistry(arcana_home).add(root, "notes")


async def stored(vault):
    store = open_store(vault)
    try:
        rows = await store.run(lambda raw: raw.execute("SELECT id, content FROM memories ORDER BY id").fetchall())
        ledger = await store.run(lambda raw: raw.execute("SELECT op FROM memory_ledger ORDER BY seq").fetchall())
        return {r[0]: r[1] for r in rows}, [r[0] for r in ledger]
    finally:
        await store.aclose()


def test_registry_validates_and_remove_never_touches_the_folder(vault, arcana_home, tree_digest, tmp_path):
    registry = VaultRegistry(arcana_home)
    assert [v.name for v in registry.list()] == ["notes"]
    with pytest.raises(InvalidRequestError):
        registry.add(vault.root, "bad name!")
    with pytest.raises(NotFoundError):
        registry.add(tmp_path / "missing", "x")
    with pytest.raises(ValueError):
        registry.add(vault.root, "notes")
    with pytest.raises(ValueError):
        registry.add(vault.root, "again")  # same folder twice
    with pytest.raises(ValueError):
        registry.add(vault.root, "both", agent="a", pool="p")
    before = tree_digest(vault.root)
    vault.db_path.parent.mkdir(parents=True, exist_ok=True)
    vault.db_path.write_bytes(b"")
    removed = registry.remove("notes")
    assert vault.db_path in removed and not vault.db_path.exists()
    assert tree_digest(vault.root) == before
    with pytest.raises(NotFoundError):
        registry.get("notes")


async def test_removal_waits_for_an_index_run_in_flight_and_no_later_run_recreates_the_index(vault, arcana_home):
    """The writer lock held (an index run in flight): removal waits for it, or gives up with the vault
    intact; once removed, a run that held the vault from before (a watch's) indexes nothing."""
    import threading

    from memory.deadline import LOCK_WAIT
    from memory.errors import LockHeldError

    await index_vault(vault, embed=False)  # control: a run makes the index
    assert vault.db_path.exists()
    registry = VaultRegistry(arcana_home)
    with exclusive(vault.lock_path, "index in flight"):
        token = LOCK_WAIT.set(0.3)  # the command's --lock-wait
        try:
            with pytest.raises(LockHeldError, match="try again"):
                registry.remove("notes")
        finally:
            LOCK_WAIT.reset(token)
        assert registry.get("notes").name == "notes" and vault.db_path.exists()  # nothing half-removed
        removal = threading.Thread(target=registry.remove, args=("notes",))  # no lock wait given: 30 s
        removal.start()
        time.sleep(0.5)
        assert removal.is_alive() and vault.db_path.exists()  # waiting for the run to finish
    removal.join(10)
    assert not removal.is_alive() and not vault.db_path.exists()
    with pytest.raises(NotFoundError, match="was removed"):
        await index_vault(vault, embed=False)
    assert not vault.db_path.exists()


async def test_a_window_reads_its_notes_when_it_comes_not_at_the_plan(make_vault, arcana_home):
    """A first index holds one window's parsed notes, not the folder's: a later window's notes are read
    when it comes, so an edit or a removal made meanwhile is what gets stored (the plan held every
    parsed note, ~4 KB each: 448 MiB for 50,000 notes)."""
    notes = {f"n{i:02}.md": f"note {i} " + "word " * i for i in range(40)}  # by size: three windows of 16
    root = make_vault(notes, name="big")
    arcana_home.ensure()
    vault = VaultRegistry(arcana_home).add(root, "big")
    edits = iter([0])

    def first_window_written(done, total):
        if next(edits, None) is None:
            return
        (root / "n39.md").write_text("---\naliases: [Late]\n---\nrewritten after the plan " + "word " * 39)
        (root / "n38.md").unlink()

    report = await index_vault(vault, embed=False, on_progress=first_window_written)
    rows, _ = await stored(vault)
    assert "rewritten after the plan" in rows[note_id("n39.md")]  # the plan's text was stale
    assert note_id("n38.md") not in rows and ("n38.md", "vanished") in report.skipped
    assert "note 0" in rows[note_id("n00.md")]  # control: the other notes, first window and last, are stored
    assert notes["n37.md"].strip() in rows[note_id("n37.md")] and len(rows) == 39
    again = await index_vault(vault, embed=False)  # the manifest recorded what was written
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 39)


async def test_a_note_made_hidden_leaves_the_index_as_soon_as_a_pass_reads_it(make_vault, arcana_home):
    """`visibility: hidden` seen by the plan removes the note before the first window is written, and
    seen only when a later window re-reads it, removes it then: both stayed searchable (the second
    until the next pass) though the report already listed them as withheld."""
    import sqlite3

    notes = {f"n{i:02}.md": f"note {i} " + "word " * i for i in range(40)}  # by size: three windows
    root = make_vault(notes, name="big")
    arcana_home.ensure()
    vault = VaultRegistry(arcana_home).add(root, "big")
    await index_vault(vault, embed=False)
    for i in range(1, 40):
        (root / f"n{i:02}.md").write_text(f"note {i} edited " + "word " * i)
    (root / "n00.md").write_text("---\nvisibility: hidden\n---\nnote 0 hidden")
    seen_in_first_window: list[list] = []

    def first_window_written(done, total):
        if seen_in_first_window:
            return
        with sqlite3.connect(vault.db_path) as raw:  # the row, and the record `vault links` and the UI graph name
            seen_in_first_window.append(raw.execute("SELECT id FROM memories WHERE id = ? UNION ALL SELECT id FROM "
                                                    "vault_files WHERE rel_path = 'n00.md'", (note_id("n00.md"),)).fetchall())
        (root / "n39.md").write_text("---\nvisibility: hidden\n---\nnote 39 hidden " + "word " * 39)

    report = await index_vault(vault, embed=False, on_progress=first_window_written)
    assert seen_in_first_window == [[]]
    assert {("n00.md", "withheld"), ("n39.md", "withheld")} <= set(report.skipped) and report.removed == 2
    rows, _ = await stored(vault)
    assert note_id("n00.md") not in rows and note_id("n39.md") not in rows
    hits = await search_vault(vault, MemoryQuery(text="note", retrieval_mode=RetrievalMode.keyword, limit=100))
    assert len(hits.entries) == 38 and all("edited" in e.content for e in hits.entries)  # control: the rest
    again = await index_vault(vault, embed=False)  # the manifest forgot both: nothing left to remove
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 38)


async def test_a_targeted_pass_removes_a_hidden_note_whose_row_outlived_its_record(vault):
    """A pass killed between a window's rows and its records leaves rows no record names; a note of them
    made hidden, then seen by a watcher's pass at just that path, kept its row (a targeted pass removed
    only recorded notes) and stayed searchable until a full pass swept it."""
    import sqlite3

    await index_vault(vault, embed=False)
    with sqlite3.connect(vault.db_path) as raw:  # as a kill after the window's rows left it
        raw.execute("DELETE FROM vault_files WHERE rel_path = 'Projects/Beta.md'")
    (vault.root / "Projects" / "Beta.md").write_text("---\nvisibility: hidden\n---\nBeta uses [[A1]].")
    report = await index_vault(vault, embed=False, paths=["Projects/Beta.md", "Home.md"])
    assert report.mode == "targeted" and ("Projects/Beta.md", "withheld") in report.skipped
    rows, _ = await stored(vault)
    assert note_id("Projects/Beta.md") not in rows
    assert {note_id("Home.md"), note_id("Projects/Alpha.md")} <= set(rows)  # control: the others stay


async def test_notes_a_changed_ignore_excludes_leave_the_index_at_once(vault, arcana_home):
    """`config set vaults.NAME.ignore` drops the indexed notes it now keeps out: they answered every
    search (and recall) until the next `vault index`."""
    await index_vault(vault, embed=False)
    query = MemoryQuery(text="units beta welcome", retrieval_mode=RetrievalMode.keyword)
    assert len((await search_vault(vault, query, expand=False)).entries) == 3
    result = _cli("config", "set", "vaults.notes.ignore", '["Projects/Al*"]', home=arcana_home)
    assert result.returncode == 0, result.stderr
    rows, ledger = await stored(vault)
    assert note_id("Projects/Alpha.md") not in rows and ledger[-1] == "purge"
    hits = await search_vault(vault, query, expand=False)
    assert {hits.paths[e.id] for e in hits.entries} == {"Home.md", "Projects/Beta.md"}  # control: the rest answer
    vault = VaultRegistry(arcana_home).get("notes")
    again = await index_vault(vault, embed=False)  # the manifest forgot it too; its links are rebuilt
    assert (again.added, again.removed, again.unchanged) == (0, 0, 2) and again.links.dangling == 3
    assert _cli("config", "set", "vaults.notes.ignore", "[]", home=arcana_home).returncode == 0
    assert (await index_vault(VaultRegistry(arcana_home).get("notes"), embed=False)).added == 1  # back in


async def test_full_then_incremental_index_follows_every_kind_of_change(vault, tree_digest):
    digest = tree_digest(vault.root)
    report = await index_vault(vault, embed=False)
    assert (report.scanned, report.added, report.updated, report.removed, report.unchanged) == (3, 3, 0, 0, 0)
    links = report.links.counts()
    assert links == {
        "notes_scanned": 3, "links_found": 6, "resolved": 4, "attachments": 1, "self_links": 0,
        "dangling": 1, "ambiguous": 0, "edges_written": 4,
    }
    rows, ledger = await stored(vault)
    assert set(rows) == {note_id(p) for p in ("Home.md", "Projects/Alpha.md", "Projects/Beta.md")}
    assert ledger == ["insert"] * 3
    assert tree_digest(vault.root) == digest

    again = await index_vault(vault, embed=False)
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 3)

    os.utime(vault.root / "Home.md", ns=(10**18, 10**18))  # touched, same bytes: not rewritten
    touched = await index_vault(vault, embed=False)
    assert (touched.updated, touched.unchanged) == (0, 3)

    (vault.root / "Projects/Beta.md").write_text("Beta now links [[Home]] only.")
    (vault.root / "Gamma.md").write_text("new note about [[Nowhere]]")  # the dangling link's target appears
    (vault.root / "Nowhere.md").write_text("I exist now")
    (vault.root / "Projects/Alpha.md").rename(vault.root / "Projects/Alpha2.md")
    report = await index_vault(vault, embed=False)
    assert (report.added, report.updated, report.removed, report.unchanged) == (3, 1, 1, 1)
    rows, ledger = await stored(vault)
    assert note_id("Projects/Alpha.md") not in rows and note_id("Projects/Alpha2.md") in rows
    assert ledger.count("purge") == 1 and ledger.count("update") == 1
    assert report.links.dangling == 1  # Home's [[Projects/Alpha]] now dangles; [[Nowhere]] resolved
    store = open_store(vault)
    try:
        edges = EdgeStore(store)
        assert note_id("Home.md") in await edges.neighbors(note_id("Projects/Beta.md"))
        assert await edges.neighbors(note_id("Projects/Alpha.md")) == []
    finally:
        await store.aclose()

    (vault.root / "Gamma.md").unlink()
    report = await index_vault(vault, embed=False)
    assert (report.removed, report.unchanged) == (1, 4)
    state = load_state(vault.state_path)[0]
    assert state["last_index"]["removed"] == 1 and state["last_indexed_at"] > 0


async def test_hostile_vault_indexes_with_everything_counted(make_vault, arcana_home, tree_digest):
    root = make_vault(
        {
            "binary.md": b"\x00\x01\x02garbage",
            "empty.md": "",
            "huge.md": "y" * (1024 * 1024 + 1),
            "list-frontmatter.md": "---\n- a\n- b\n---\nbody",
            "a/Dup.md": "one",
            "b/Dup.md": "two",
            "links.md": "[[Dup]] [[empty]] `[[binary]]`\n```\n[[huge]]\n```\n[[über note]]",
            "über note.md": "ünïcödé",
            ".obsidian/app.md": "config",
        },
        name="hostile",
    )
    (root / "loop").symlink_to(root)
    arcana_home.ensure()
    vault = VaultRegistry(arcana_home).add(root, "hostile")
    digest = tree_digest(root)
    report = await index_vault(vault, embed=False)
    assert report.skipped_counts() == {"binary": 1, "hidden": 1, "symlink": 1, "too_large": 1}
    assert report.frontmatter_problems == ["list-frontmatter.md"]
    assert report.added == 6
    assert (report.links.resolved, report.links.ambiguous, report.links.dangling) == (2, 1, 0)
    plan, links = await check_vault(vault)
    assert [(p.target, p.candidates) for p in links.ambiguous_links] == [("Dup", ("a/Dup.md", "b/Dup.md"))]
    assert dict(plan.skipped)["huge.md"] == "too_large"
    assert tree_digest(root) == digest


@pytest.mark.parametrize(
    "block",
    [
        "date: 2024-02-30\n",  # well-formed YAML, an impossible date: PyYAML raises ValueError
        "serial: 1" + "0" * 5000 + "\n",  # past Python's int-conversion limit: ValueError
        "x: " + "[" * 5000 + "]" * 5000 + "\n",  # nested deeper than the stack: RecursionError
    ],
    ids=["impossible-date", "huge-int", "deep-nesting"],
)
def test_frontmatter_that_pyyaml_cannot_construct_is_counted_not_fatal(make_vault, no_embedder, cli, tree_digest, block):
    """One note whose frontmatter PyYAML parses but cannot build must not stop the vault: it is read,
    counted as bad frontmatter, and every other note is indexed and found."""
    root = make_vault({"Typo.md": f"---\n{block}---\nThe heron nests by the pier.", "Good.md": "Herons fish at dawn."})
    digest = tree_digest(root)
    assert cli("vault", "add", str(root), "--name", "fm").exit_code == 0
    index = cli("vault", "index", "fm", "--json")
    assert index.exit_code == 0, index.output
    report = json.loads(index.stdout)
    assert report["added"] == 2 and report["frontmatter_problems"] == ["Typo.md"]
    check = cli("vault", "check", "fm", "--json")
    assert check.exit_code == 0, check.output
    assert json.loads(check.stdout)["frontmatter_problems"] == ["Typo.md"]
    found = cli("vault", "search", "fm", "pier", "--json")
    assert [r["path"] for r in json.loads(found.stdout)["results"]] == ["Typo.md"]  # its body is still a note
    control = cli("vault", "search", "fm", "dawn", "--json")
    assert [r["path"] for r in json.loads(control.stdout)["results"]] == ["Good.md"]
    assert tree_digest(root) == digest


@pytest.mark.parametrize("damage", ['{"last_indexed_at": 12', "[" * 100_000 + "]" * 100_000, "[1, 2]"])
def test_a_damaged_state_file_is_moved_aside_named_and_rebuilt(make_vault, no_embedder, cli, arcana_home, damage):
    """A vault's state file that could not be read was written over without a word: what it held was
    lost and nothing said it was damaged. Positive control: the rebuilt file is kept by the next pass."""
    root = make_vault({"Good.md": "Herons fish at dawn."})
    assert cli("vault", "add", str(root), "--name", "st").exit_code == 0
    state = arcana_home.vault_state("st")
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(damage)
    index = cli("vault", "index", "st")
    assert index.exit_code == 0, index.output
    aside = [p for p in state.parent.iterdir() if p.name.startswith("st.state.json.damaged-")]
    assert len(aside) == 1 and aside[0].read_text() == damage
    assert str(state) in index.stderr and str(aside[0]) in index.stderr, index.stderr
    assert load_state(state)[0]["last_index"]["added"] == 1
    again = cli("vault", "index", "st")
    assert again.exit_code == 0 and "damaged" not in again.stderr, again.stderr
    assert [p for p in state.parent.iterdir() if p.name.startswith("st.state.json.damaged-")] == aside
    assert load_state(state)[0]["last_index"]["unchanged"] == 1


def test_frontmatter_too_long_to_read_is_counted_and_not_parsed(make_vault, no_embedder, cli, tree_digest):
    """A note under the 1 MiB note limit whose frontmatter is a long YAML flow list took PyYAML 22 s,
    on every `vault index` that read it and every `vault check`. A block over 64 KiB is not parsed:
    the note is read (its body found), its properties are not applied, and it is counted."""
    from memory.markdown.notes import MAX_FRONTMATTER_CHARS

    padding = "ids: [" + ",".join("1" for _ in range(MAX_FRONTMATTER_CHARS // 2)) + "]\n"
    root = make_vault({
        "Long.md": f"---\ntags: [longtag]\n{padding}---\nThe heron nests by the pier.",
        "Short.md": f"---\ntags: [shorttag]\nids: [{','.join('1' for _ in range(1000))}]\n---\nHerons fish at dawn.",
    })
    digest = tree_digest(root)
    assert cli("vault", "add", str(root), "--name", "fm").exit_code == 0
    index = cli("vault", "index", "fm", "--json")
    assert index.exit_code == 0, index.output
    assert json.loads(index.stdout)["frontmatter_problems"] == ["Long.md"]
    check = cli("vault", "check", "fm", "--json")
    assert json.loads(check.stdout)["frontmatter_problems"] == ["Long.md"]
    found = cli("vault", "search", "fm", "pier", "--json")
    [hit] = json.loads(found.stdout)["results"]
    assert hit["path"] == "Long.md" and hit["tags"] == []  # its body is a note; its properties were not read
    control = cli("vault", "search", "fm", "dawn", "--json")
    [hit] = json.loads(control.stdout)["results"]
    assert hit["path"] == "Short.md" and hit["tags"] == ["shorttag"]  # a block under the limit is read
    assert tree_digest(root) == digest


def test_a_note_modified_in_the_year_2300_is_skipped_not_fatal(make_vault, no_embedder, cli, tree_digest):
    """One note whose modification time a memory cannot hold (`touch -d 2300-01-01`) failed the folder
    scan, `vault index` and `vault check` with exit 2 and a line naming no file, so no other note was
    found either. It is skipped with its reason; the note beside it is indexed and found."""
    root = make_vault({"Far.md": "The heron nests by the pier.", "Good.md": "Herons fish at dawn."})
    far = int(datetime(2300, 1, 1, tzinfo=UTC).timestamp()) * 10**9
    os.utime(root / "Far.md", ns=(far, far))
    digest = tree_digest(root)
    assert cli("vault", "add", str(root), "--name", "fm").exit_code == 0
    for phase in ("folder", "index"):
        if phase == "index":
            index = cli("vault", "index", "fm", "--json")
            assert index.exit_code == 0, index.output
            assert json.loads(index.stdout)["added"] == 1
        found = cli("vault", "search", "fm", "dawn", "--json")
        assert found.exit_code == 0, found.output
        assert [r["path"] for r in json.loads(found.stdout)["results"]] == ["Good.md"], phase
    check = cli("vault", "check", "fm", "--json")
    assert check.exit_code == 0, check.output
    assert {"path": "Far.md", "reason": "time_out_of_range"} in json.loads(check.stdout)["skipped"]
    assert tree_digest(root) == digest


async def test_a_missing_folder_fails_loudly_and_keeps_the_index(vault, tmp_path):
    await index_vault(vault, embed=False)
    moved = tmp_path / "elsewhere"
    vault.root.rename(moved)
    with pytest.raises(NotFoundError):
        await index_vault(vault, embed=False)
    rows, _ = await stored(vault)
    assert len(rows) == 3  # nothing was purged because the folder vanished
    moved.rename(vault.root)
    assert (await index_vault(vault, embed=False)).unchanged == 3


async def test_attaching_to_a_pool_restamps_every_entry(make_vault, arcana_home):
    root = make_vault({"a.md": "alpha"}, name="p")
    arcana_home.ensure()
    registry = VaultRegistry(arcana_home)
    vault = registry.add(root, "p")
    await index_vault(vault, embed=False)
    registry.remove("p")
    from memory.federation.pools import PoolRegistry

    await PoolRegistry(arcana_home).create("team")  # a vault attaches only to a pool that exists
    vault = registry.add(root, "p", pool="team")
    report = await index_vault(vault, embed=False)
    assert report.added == 1  # the index was removed with the vault
    store = open_store(vault)
    try:
        entry = await store.get(note_id("a.md"))
    finally:
        await store.aclose()
    assert (entry.agent_id, entry.scope, entry.pool_name) == ("vault:p", MemoryScope.SHARED, "team")


async def test_search_reads_the_folder_before_indexing_and_the_index_after(vault):
    notices: list[str] = []
    hits = await search_vault(vault, MemoryQuery(text="metric units"), notify=notices.append)
    assert hits.source == "folder" and len(notices) == 1
    assert [hits.paths[e.id] for e in hits.entries] == ["Projects/Alpha.md"]
    await index_vault(vault, embed=False)
    hits = await search_vault(vault, MemoryQuery(text="metric units", retrieval_mode=RetrievalMode.keyword))
    assert hits.source == "index"
    paths = [hits.paths[e.id] for e in hits.entries]
    assert paths[0] == "Projects/Alpha.md"
    assert {"Home.md", "Projects/Beta.md"} <= set(paths[1:])  # one wikilink away
    assert all(e.matched_by == ["graph"] for e in hits.entries[1:])
    assert all(e.tiers == ["vault:notes"] for e in hits.entries)
    plain = await search_vault(vault, MemoryQuery(text="metric units", retrieval_mode=RetrievalMode.keyword), expand=False)
    assert [plain.paths[e.id] for e in plain.entries] == ["Projects/Alpha.md"]


async def test_embedding_index_embeds_only_what_changed(vault):
    report = await index_vault(vault, embed=True)
    assert report.embedded == 3 and "MiniLM" in report.embedding
    (vault.root / "Projects/Beta.md").write_text("Beta is about baking sourdough loaves with a long fermentation.")
    report = await index_vault(vault, embed=True)
    assert (report.updated, report.embedded) == (1, 1)
    assert (await index_vault(vault, embed=True)).embedded == 0
    hits = await search_vault(
        vault, MemoryQuery(text="how to bake bread at home", retrieval_mode=RetrievalMode.semantic, limit=1), expand=False
    )
    assert [hits.paths[e.id] for e in hits.entries] == ["Projects/Beta.md"]


async def test_keyword_only_rows_are_backfilled_by_the_next_embedding_pass(vault):
    await index_vault(vault, embed=False)
    report = await index_vault(vault, embed=True)
    assert (report.updated, report.embedded) == (0, 3)


def test_indexers_wait_for_each_other_instead_of_failing(vault, arcana_home):
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    command = [sys.executable, "-m", "arcana_cli.main", "vault", "index", "notes", "--keyword-only", "--json"]
    with exclusive(vault.lock_path, "test"):
        procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
        time.sleep(1.5)
        assert all(p.poll() is None for p in procs)  # all waiting on the held lock, none failed
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [r[1] for r in results]
    reports = [json.loads(out) for out, _ in results]
    assert sorted(r["added"] for r in reports) == [0, 0, 3]  # one did the work, the others found nothing to do


def test_an_indexer_waiting_for_the_lock_says_what_it_waits_for(vault, arcana_home):
    """A `vault index` behind another run sat silent up to 5 minutes, as if hung; it now says so, once."""
    import select

    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    command = [sys.executable, "-m", "arcana_cli.main", "vault", "index", "notes", "--keyword-only", "--json"]
    with exclusive(vault.lock_path, "test"):
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert select.select([proc.stderr], [], [], 120)[0], "no word on stderr while waiting"
        line = proc.stderr.readline()
        assert line.startswith("warning: waiting for another index run of vault 'notes'") and str(vault.lock_path) in line
        assert proc.poll() is None  # still waiting
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and json.loads(out)["added"] == 3, err
    again = _cli("vault", "index", "notes", "--keyword-only", home=arcana_home)  # control: a free lock, no such line
    assert again.returncode == 0 and "waiting" not in again.stderr


def test_cli_commands_json_and_exit_codes(vault, arcana_home, tree_digest):
    digest = tree_digest(vault.root)
    index = _cli("vault", "index", "notes", "--keyword-only", "--json", home=arcana_home)
    assert index.returncode == 0, index.stderr
    assert json.loads(index.stdout)["added"] == 3
    listed = json.loads(_cli("vault", "list", "--json", home=arcana_home).stdout)
    assert [v["name"] for v in listed] == ["notes"]
    check = json.loads(_cli("vault", "check", "notes", "--json", home=arcana_home).stdout)
    assert check["dangling"] == [{"note": "Projects/Beta.md", "target": "Nowhere"}]
    links = json.loads(_cli("vault", "links", "alpha", "--json", home=arcana_home).stdout)
    assert links["note"] == "Projects/Alpha.md"
    assert links["outgoing"] == ["Home.md"] and links["backlinks"] == ["Home.md", "Projects/Beta.md"]
    found = _cli("vault", "search", "notes", "metric", "--mode", "keyword", "--json", home=arcana_home)
    assert json.loads(found.stdout)["results"][0]["path"] == "Projects/Alpha.md"
    status = json.loads(_cli("vault", "status", "notes", "--json", home=arcana_home).stdout)
    assert status["notes_indexed"] == 3 and status["watch"]["running"] is False and status["edges"] == 4
    missing = _cli("vault", "index", "nope", home=arcana_home)
    assert missing.returncode == 3 and missing.stderr.count("\n") == 1 and missing.stdout == ""
    unforced = _cli("vault", "remove", "notes", home=arcana_home)
    assert unforced.returncode == 2 and vault.db_path.exists()
    removed = _cli("vault", "remove", "notes", "--yes", home=arcana_home)
    assert removed.returncode == 0 and not vault.db_path.exists()
    assert tree_digest(vault.root) == digest


def test_vault_links_takes_a_link_as_written_and_refuses_an_ambiguous_note_in_one_line(make_vault, arcana_home):
    """An ambiguous note (two folders, two vaults) was a Python traceback and exit 1; a link copied
    with its heading or brackets was 'no indexed note matches'."""
    arcana_home.ensure()
    registry = VaultRegistry(arcana_home)
    registry.add(make_vault({"a/Dup.md": "a", "b/Dup.md": "b", "Home.md": "[[a/Dup#Top]] [[Todo]]", "Todo.md": "x"}, name="one"), "one")
    registry.add(make_vault({"Todo.md": "y"}, name="two"), "two")
    for name in ("one", "two"):
        assert _cli("vault", "index", name, "--keyword-only", home=arcana_home).returncode == 0
    for note, says in (("Dup", "give its path"), ("Todo", "pick one with --vault"), ("#Top", "names no note"), ("", "names no note")):
        refused = _cli("vault", "links", note, home=arcana_home)
        assert refused.returncode == 2 and refused.stdout == "", (note, refused.stderr)
        assert refused.stderr.startswith("arcana: error:") and refused.stderr.count("\n") == 1 and says in refused.stderr
    for note in ("a/Dup", "[[a/Dup#Top|shown]]", "a/Dup#^block"):  # the control: the path, however written, answers
        links = _cli("vault", "links", note, "--json", home=arcana_home)
        assert links.returncode == 0, links.stderr
        assert json.loads(links.stdout)["backlinks"] == ["Home.md"]
    assert json.loads(_cli("vault", "links", "Todo", "--vault", "one", "--json", home=arcana_home).stdout)["note"] == "Todo.md"


async def _snapshot(vault):
    store = open_store(vault)
    try:
        rows = await store.run(lambda raw: raw.execute("SELECT id, content, tags FROM memories ORDER BY id").fetchall())
        edges = await store.run(
            lambda raw: raw.execute("SELECT src_id, dst_id FROM memory_edges ORDER BY src_id, dst_id").fetchall()
        )
        return [tuple(r) for r in rows], [tuple(e) for e in edges]
    finally:
        await store.aclose()


async def test_a_targeted_pass_at_the_changed_paths_matches_a_full_pass(make_vault, arcana_home):
    files = dict(NOTES)
    arcana_home.ensure()
    registry = VaultRegistry(arcana_home)
    targeted = registry.add(make_vault(files, name="t"), "t")
    full = registry.add(make_vault(files, name="f"), "f")
    for vault in (targeted, full):
        await index_vault(vault, embed=False)
    edits = [
        ("Projects/Beta.md", "Beta now links [[Home]] and [[Gamma]]."),  # content edit, new dangling link
        ("Gamma.md", "---\naliases: [G]\n---\nnew, linking [[A1]]"),  # a new note resolves Beta's link
        ("Home.md", None),  # deleted: Alpha's backlink target goes
        (".obsidian/x.md", "hidden, ignored"),
    ]
    for vault in (targeted, full):
        for rel, text in edits:
            path = vault.root / rel
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    t_report = await index_vault(targeted, embed=False, paths=[rel for rel, _ in edits])
    f_report = await index_vault(full, embed=False)
    assert t_report.mode == "targeted" and f_report.mode == "full"
    assert (t_report.added, t_report.updated, t_report.removed) == (f_report.added, f_report.updated, f_report.removed) == (1, 1, 1)
    assert t_report.links.counts() == f_report.links.counts()
    assert await _snapshot(targeted) == await _snapshot(full)
    (targeted.root / "Projects/Beta.md").write_text("Beta, edited again: [[G]] [[Projects/Alpha]]")  # not structural
    (full.root / "Projects/Beta.md").write_text("Beta, edited again: [[G]] [[Projects/Alpha]]")
    t_report = await index_vault(targeted, embed=False, paths=["Projects/Beta.md"])
    f_report = await index_vault(full, embed=False)
    assert t_report.links.counts() == f_report.links.counts()
    assert (t_report.links.resolved, t_report.links.dangling) == (3, 1)  # Alpha still links the deleted Home
    assert await _snapshot(targeted) == await _snapshot(full)
    _, checked = await check_vault(targeted)
    assert checked.counts() == t_report.links.counts() | {"edges_written": 0}  # check reads, never writes


async def test_a_folder_named_like_a_note_moved_out_takes_its_notes_out_of_a_targeted_pass(make_vault, arcana_home, tmp_path):
    """A watcher reports a folder ``Proj.md/`` moved out of the vault as the one gone path ``Proj.md``,
    as it would a deleted note: the notes inside must go too, not answer with stale text for 10 minutes."""
    arcana_home.ensure()
    files = {"Proj.md/Wombat.md": "Wombat burrows.", "Proj.md-x/Keep.md": "Kept wombat text.", "Home.md": "Home."}
    vault = VaultRegistry(arcana_home).add(make_vault(files, name="v"), "v")
    await index_vault(vault, embed=False)
    (vault.root / "Home.md").write_text("Home, edited.")
    control = await index_vault(vault, embed=False, paths=["Home.md"])
    assert control.mode == "targeted" and control.updated == 1  # a note's own path stays a targeted pass
    (vault.root / "Proj.md").rename(tmp_path / "Proj.md")
    report = await index_vault(vault, embed=False, paths=["Proj.md"])
    assert report.removed == 1
    rows, _ = await stored(vault)
    assert sorted(rows.values()) == ["Home\n\nHome, edited.", "Keep\n\nKept wombat text."]
    hits = await search_vault(vault, MemoryQuery(text="wombat", retrieval_mode=RetrievalMode.keyword))
    assert [hits.paths[e.id] for e in hits.entries] == ["Proj.md-x/Keep.md"]


async def test_an_emptied_folder_does_not_empty_the_index(vault):
    await index_vault(vault, embed=False)
    for path in list(vault.root.rglob("*.md")):
        path.unlink()  # what an unmounted drive's mount point looks like
    with pytest.raises(NotFoundError, match="has no notes now"):
        await index_vault(vault, embed=False)
    rows, _ = await stored(vault)
    assert len(rows) == 3
    (vault.root / "one.md").write_text("one note back")  # positive control: a real deletion still purges
    report = await index_vault(vault, embed=False)
    assert (report.added, report.removed) == (1, 3)


def test_commands_that_do_not_embed_never_import_the_embedding_stack(vault, arcana_home):
    code = (
        "import sys; from arcana_cli.app import run\n"
        "for args in (['-q', 'vault', 'index', 'notes', '--keyword-only'], ['vault', 'search', 'notes', 'units', '--mode', 'keyword'],"
        " ['vault', 'check', 'notes'], ['vault', 'links', 'Home'], ['vault', 'status', 'notes'], ['vault', 'list']):\n"
        "    try:\n"
        "        run(args)\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), (args, exc.code)\n"
        "print('MODULES', sorted(m for m in ('fastembed', 'onnxruntime') if m in sys.modules), flush=True)\n"
        "try:\n"
        "    run(['-q', 'vault', 'index', 'notes'])\n"  # positive control: embedding does load it
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES', sorted(m for m in ('fastembed', 'onnxruntime') if m in sys.modules), flush=True)\n"
    )
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if line.startswith("MODULES")] == ["MODULES []", "MODULES ['fastembed', 'onnxruntime']"]


async def test_vault_adapter_is_a_read_only_memory_tier(vault):
    from memory.errors import MemoryWriteError
    from memory.protocols import MemoryAdapter
    from memory.types import MemoryEntry
    from memory.vaults.search import VaultAdapter

    tier = VaultAdapter(vault)
    assert isinstance(tier, MemoryAdapter)
    assert (await tier.health_check()).healthy
    before = await tier.search(MemoryQuery(text="metric units"))  # not indexed yet: the folder answers
    await index_vault(vault, embed=False)
    after = await tier.search(MemoryQuery(text="metric units", retrieval_mode=RetrievalMode.keyword))
    assert before[0].id == after[0].id == note_id("Projects/Alpha.md")  # same ids either way
    assert (await tier.get(note_id("Home.md"))).content.startswith("Home")
    with pytest.raises(MemoryWriteError):
        await tier.write(MemoryEntry(agent_id="x", content="no"))


def test_index_all_keeps_going_past_a_missing_folder_and_reports_it(vault, make_vault, arcana_home, tmp_path):
    other = VaultRegistry(arcana_home).add(make_vault({"x.md": "x"}, name="other"), "other")
    other.root.rename(tmp_path / "gone")
    result = _cli("vault", "index", "--all", "--keyword-only", "--json", home=arcana_home)
    assert result.returncode == 3  # the missing folder's exit code, after the others were indexed
    # The failed vault was left out of the JSON, and its stderr line said "vault 'other': vault 'other': …".
    notes, failed = sorted(json.loads(result.stdout), key=lambda r: r["vault"])
    assert (notes["vault"], notes["added"], "error" in notes) == ("notes", notes["scanned"], False)  # control
    assert notes["added"] > 0
    assert failed == {"vault": "other", "error": f"vault 'other': folder {other.root} is missing; the index was left as it was"}
    assert [line for line in result.stderr.splitlines() if "other" in line] == [f"arcana: error: {failed['error']}"]
    both = _cli("vault", "index", "notes", "--all", home=arcana_home)
    assert both.returncode == 2


def test_recall_through_an_attached_vault_reports_graph_expansion(make_vault, no_embedder, cli):
    folder = make_vault(
        {"Coffee.md": "The machine needs descaling monthly. See [[Tea]].", "Tea.md": "Green tea steeps two minutes."}
    )
    assert cli("agent", "create", "scout").exit_code == 0
    assert cli("vault", "add", str(folder), "--name", "notes", "--agent", "scout").exit_code == 0
    assert cli("vault", "index", "notes").exit_code == 0
    found = cli("recall", "descaling", "--agent", "scout", "--json")
    assert found.exit_code == 0, found.stderr
    payload = json.loads(found.stdout)
    by_note = {r["content"].split()[0]: r["matched_by"] for r in payload["results"]}
    assert by_note["Coffee"] == ["keyword"]  # the seed, found by its words
    assert by_note["Tea"] == ["graph"]  # one link away, found by expansion only
    assert payload["legs"] == ["keyword", "graph"]


async def test_obsidians_excluded_files_are_not_indexed_or_read(make_vault, arcana_home, tree_digest):
    app = {"userIgnoreFilters": ["Archive/", "Templates", "/^Daily/", "weird[1]*"]}
    root = make_vault(
        {
            ".obsidian/app.json": json.dumps(app),
            "Archive/old.md": "kettle plan from last year",
            "Archived ideas.md": "kettle ideas still live",  # "Archive/" is a folder prefix: not this
            "Templates/meeting.md": "kettle template",
            "Templates.md": "kettle template index",  # "Templates" is a bare prefix, as in Obsidian
            "Daily 2026-11-29.md": "kettle daily note",  # a regex filter: reported, not applied
            "weird[1]*notes.md": "kettle weird literal",  # brackets and star taken literally
            "weird1.md": "kettle weird other",
        },
        name="obs",
    )
    arcana_home.ensure()
    vault = VaultRegistry(arcana_home).add(root, "obs")
    digest = tree_digest(root)
    report = await index_vault(vault, embed=False)
    assert report.added == 3
    assert report.skipped_counts()["ignored"] == 4  # Archive/, Templates/, Templates.md, weird[1]*notes.md
    assert any("'/^Daily/' is not applied" in n for n in report.notices)
    hits = await search_vault(vault, MemoryQuery(text="kettle", retrieval_mode=RetrievalMode.keyword, limit=20))
    assert sorted(hits.paths[e.id] for e in hits.entries) == ["Archived ideas.md", "Daily 2026-11-29.md", "weird1.md"]
    assert tree_digest(root) == digest


async def test_exclusions_typed_in_nfc_keep_out_a_folder_named_in_nfd(make_vault, arcana_home):
    """macOS names a folder ``Privé`` in NFD; Obsidian's filter and a typed --ignore glob are NFC.
    Both must still keep its notes out, by full walk and by a watcher's targeted pass."""
    nfd = unicodedata.normalize("NFD", "Privé")
    root = make_vault(
        {
            ".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Privé/"]}),
            f"{nfd}/Salary.md": "kettle salary numbers",
            f"{unicodedata.normalize('NFD', 'Réunions')}/Plan.md": "kettle meeting plan",
            "Public.md": "kettle public note",  # the control: indexed and found
        },
        name="nfd",
    )
    arcana_home.ensure()
    vault = VaultRegistry(arcana_home).add(root, "nfd", ignore=["Réunions/*"])
    report = await index_vault(vault, embed=False)
    assert report.added == 1 and report.skipped_counts()["ignored"] == 2
    (root / nfd / "New.md").write_text("kettle new secret")
    report = await index_vault(vault, embed=False, paths=[f"{nfd}/New.md"])
    assert report.mode == "targeted" and report.added == 0
    hits = await search_vault(vault, MemoryQuery(text="kettle", retrieval_mode=RetrievalMode.keyword, limit=20))
    assert [hits.paths[e.id] for e in hits.entries] == ["Public.md"]


async def test_a_damaged_obsidian_config_is_reported_and_the_vault_still_indexes(make_vault, arcana_home):
    root = make_vault({".obsidian/app.json": "{not json", "a.md": "alpha note", "Archive/b.md": "beta note"}, name="dmg")
    arcana_home.ensure()
    vault = VaultRegistry(arcana_home).add(root, "dmg")
    report = await index_vault(vault, embed=False)
    assert report.added == 2  # nothing excluded: the filters could not be read
    assert any("app.json: unreadable" in n and "not applied" in n for n in report.notices)


@pytest.mark.parametrize("kind", ["fifo", "file-symlink", "folder-symlink"])
def test_obsidians_config_is_never_read_through_a_symlink_or_from_a_fifo(make_vault, no_embedder, tmp_path, kind):
    """`.obsidian/app.json` is the vault's, so it is read as a note is: a symlink out of the vault (to the
    file, or to the folder) is not followed, and a FIFO named app.json does not hang `vault index` forever."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.json").write_text(json.dumps({"userIgnoreFilters": ["Secret"]}))
    root = make_vault({"a.md": "alpha kettle", "Secret.md": "secret kettle"}, name="obs")
    (root / ".obsidian").mkdir()
    if kind == "fifo":
        os.mkfifo(root / ".obsidian" / "app.json")
    elif kind == "file-symlink":
        (root / ".obsidian" / "app.json").symlink_to(outside / "app.json")
    else:
        (root / ".obsidian").rmdir()
        (root / ".obsidian").symlink_to(outside, target_is_directory=True)
    assert _cli("vault", "add", str(root), "--name", "obs", timeout=60).returncode == 0
    index = _cli("vault", "index", "obs", "--json", timeout=60)
    assert index.returncode == 0, index.stderr
    report = json.loads(index.stdout)
    assert report["added"] == 2  # nothing was read from outside the vault, so nothing is excluded
    assert any("app.json: unreadable" in n and "not applied" in n for n in report["notices"]), report["notices"]
    # Positive control: the same filters in a real app.json inside the vault are honoured.
    if (root / ".obsidian").is_symlink():
        (root / ".obsidian").unlink()
    else:
        (root / ".obsidian" / "app.json").unlink()
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / ".obsidian" / "app.json").write_text((outside / "app.json").read_text())
    again = json.loads(_cli("vault", "index", "obs", "--json", timeout=60).stdout)
    assert (again["removed"], again["skipped"].get("ignored"), again["notices"]) == (1, 1, [])


async def test_the_index_and_the_extractor_write_the_same_wikilink_edges(vault, store):
    """One implementation: ``arcana vault index`` and the seed's WikilinkEdgeExtractor agree edge for edge."""
    from memory.adapters.markdown import MarkdownFolderAdapter
    from memory.graph.wikilinks import WIKILINK_SOURCE, WikilinkEdgeExtractor

    def wikilink_edges(raw):
        sql = "SELECT src_id, dst_id FROM memory_edges WHERE source = ? ORDER BY src_id, dst_id"
        return [tuple(r) for r in raw.execute(sql, (WIKILINK_SOURCE,))]

    indexed = await index_vault(vault, embed=False)
    index = open_store(vault)
    try:
        from_index = await index.run(wikilink_edges)
    finally:
        await index.aclose()
    report = await WikilinkEdgeExtractor(MarkdownFolderAdapter(vault.root, "agent"), EdgeStore(store)).reindex()
    from_extractor = await store.run(wikilink_edges)
    assert from_index == from_extractor
    assert len(from_index) == report.edges_written == indexed.links.edges_written == 4  # control: edges exist
    assert {k: v for k, v in report.counts().items() if k != "edges_written"} == {
        k: v for k, v in indexed.links.counts().items() if k != "edges_written"
    }


def test_only_the_extractor_writes_wikilink_edges():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "memory"
    writing = re.compile(r"replace_(source|outgoing)\(\s*WIKILINK_SOURCE")
    writers = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py") if writing.search(p.read_text()))
    assert writers == ["graph/wikilinks.py"]  # the extractor itself is found: the pattern is live


async def test_a_vault_tier_keeps_one_folder_reader_and_one_index_open(vault):
    """The federation's vault tier re-parses only edited notes and opens its index once, until closed."""
    from memory.vaults.search import VaultAdapter

    tier = VaultAdapter(vault, expand=False)
    query = MemoryQuery(text="metric units", retrieval_mode=RetrievalMode.keyword)
    try:
        assert [e.id for e in await tier.search(query)] == [note_id("Projects/Alpha.md")]  # not indexed: folder
        parsed = dict(tier.reader.folder._cache)
        (vault.root / "Home.md").write_text("Welcome back. Metric units at home too.")
        found = await tier.search(query)
        assert {e.id for e in found} == {note_id("Projects/Alpha.md"), note_id("Home.md")}
        cache = tier.reader.folder._cache
        assert cache["Projects/Alpha.md"] is parsed["Projects/Alpha.md"]  # unchanged: not parsed again
        assert cache["Home.md"] is not parsed["Home.md"]  # control: the edited note was
        await index_vault(vault, embed=False)
        assert await tier.search(query)
        store = await tier.reader.index()
        assert store is not None and await tier.get(note_id("Home.md")) is not None
        assert await tier.reader.index() is store  # one index store for the tier's life
    finally:
        await tier.aclose()
    assert store._conn is None  # closed with the tier


async def test_a_vault_tier_never_answers_from_the_index_of_a_removed_vault(vault, arcana_home):
    """A long-lived tier held the index open: after `vault remove` (its file unlinked) it still answered."""
    from memory.vaults.search import VaultAdapter

    await index_vault(vault, embed=False)
    tier = VaultAdapter(vault, expand=False)
    query = MemoryQuery(text="metric units", retrieval_mode=RetrievalMode.keyword)
    try:
        assert [e.id for e in await tier.search(query)] == [note_id("Projects/Alpha.md")]  # control: open, answering
        VaultRegistry(arcana_home).remove("notes")
        with pytest.raises(NotFoundError, match="was removed"):
            await tier.search(query)
    finally:
        await tier.aclose()


async def test_a_vault_tier_never_indexed_stops_scanning_its_folder_once_removed(vault, arcana_home):
    """A tier over a vault never indexed scans the folder; after `vault remove` it went on scanning it
    (the removed vault answered until something was indexed under its name)."""
    from memory.vaults.search import VaultAdapter

    tier = VaultAdapter(vault, expand=False)
    query = MemoryQuery(text="metric units", retrieval_mode=RetrievalMode.keyword)
    try:
        assert [e.id for e in await tier.search(query)] == [note_id("Projects/Alpha.md")]  # control: the scan answers
        VaultRegistry(arcana_home).remove("notes")
        with pytest.raises(NotFoundError, match="was removed"):
            await tier.search(query)
    finally:
        await tier.aclose()


PAGED = {  # path order traps: '-' and '.' sort before '/', so "a-c.md" and "a.md" come before "a/b.md"
    "a.md": "[[a/b]] and [[zeta]]", "a/b.md": "---\naliases: [Bee]\n---\nback to [[a]]", "a-c.md": "[[Bee]]",
    "a0.md": "plain", "a/b/c.md": "deep [[a-c]]", "é.md": "accented [[a0]]", "A/z.md": "upper", "ab.md": "[[gone]]",
    "gone.md": "soon removed", "same.md": "touched, never changed", **{f"d{i}/n{i}.md": f"note {i} [[a]]" for i in range(6)},
}


def _mutate_paged(root):
    (root / "a-c.md").write_text("edited: [[a/b/c]]")
    (root / "gone.md").unlink()
    (root / "a/new.md").write_text("---\naliases: [Fresh]\n---\nnew note [[é]]")
    os.utime(root / "same.md", ns=(1, 1))  # same bytes, new mtime: re-stamped only


async def test_the_manifest_merged_a_record_at_a_time_plans_and_indexes_exactly_as_in_one_page(
    make_vault, arcana_home, monkeypatch
):
    """The plan merges the sorted walk with the manifest read by keyset, a page at a time (a no-change pass
    of 50,000 notes held the whole listing, manifest and id set: 116 MB); one-record pages give the same
    plan, the same report and the same rows and edges as one page for all."""
    from dataclasses import asdict

    from memory.markdown.notes import NoteIdentity
    from memory.vaults.indexer import plan_index

    arcana_home.ensure()
    registry = VaultRegistry(arcana_home)
    paged, whole = registry.add(make_vault(PAGED, name="p"), "p"), registry.add(make_vault(PAGED, name="w"), "w")
    for vault in (paged, whole):
        await index_vault(vault, embed=False)
        _mutate_paged(vault.root)
    store = open_store(paged)
    try:  # a row whose record a killed pass never wrote: a full pass sweeps it
        await store.run(lambda raw: raw.execute("DELETE FROM vault_files WHERE rel_path = 'd5/n5.md'") and raw.commit())
        (paged.root / "d5/n5.md").unlink()
        who = NoteIdentity(*paged.identity())
        plans = [asdict(await store.run(lambda raw, p=p: plan_index(raw, paged, who, page=p))) for p in (1, 2, 10_000)]
    finally:
        await store.aclose()
    assert plans[0] == plans[1] == plans[2]
    plan = plans[0]  # control: every kind of change is in it, so a merge that dropped rows would differ
    assert [r["rel_path"] for r in plan["changed"]] == ["a-c.md", "a/new.md"] and plan["added"] == 1
    assert [r["rel_path"] for r in plan["touched"]] == ["same.md"] and plan["removed_paths"] == ["gone.md"]
    assert plan["removed_ids"] == sorted([note_id("gone.md"), note_id("d5/n5.md")])
    assert (plan["notes"], plan["recorded"], plan["scanned"]) == (15, 15, 15)
    (whole.root / "d5/n5.md").unlink()
    monkeypatch.setattr("memory.vaults.manifest.PAGE_ROWS", 1)
    one = (await index_vault(paged, embed=False)).as_dict()
    monkeypatch.undo()
    many = (await index_vault(whole, embed=False)).as_dict()
    assert {**one, "vault": "", "seconds": 0} == {**many, "vault": "", "seconds": 0}
    assert (one["added"], one["updated"], one["removed"], one["unchanged"]) == (1, 1, 2, 13)
    assert await _snapshot(paged) == await _snapshot(whole)
    again = await index_vault(paged, embed=False)
    assert (again.changed, again.unchanged) == (0, 15)


async def test_a_no_change_pass_holds_a_page_of_the_manifest_not_the_vault(make_vault, arcana_home):
    """What a no-change plan holds does not grow with the vault (it held ~1.1 KB a note: 53 MB traced at 50,000)."""
    import tracemalloc

    from memory.markdown.notes import NoteIdentity
    from memory.vaults.indexer import plan_index

    arcana_home.ensure()
    registry = VaultRegistry(arcana_home)
    peaks = {}
    for n in (200, 2000):
        vault = registry.add(make_vault({f"d{i // 50}/n{i}.md": f"note {i} [[n{i + 1}]]" for i in range(n)}, name=f"v{n}"), f"v{n}")
        await index_vault(vault, embed=False)
        store = open_store(vault)
        try:
            who = NoteIdentity(*vault.identity())

            def plan(raw, vault=vault, who=who):
                tracemalloc.start()
                try:
                    found = plan_index(raw, vault, who, page=50)
                    return found, tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()

            found, peaks[n] = await store.run(plan)
        finally:
            await store.aclose()
        assert (found.notes, found.changed, found.structural) == (n, [], False)  # control: a real no-change plan
    assert peaks[2000] < 2 * peaks[200], peaks


async def test_vault_links_reads_a_big_manifest_a_page_at_a_time(make_vault, arcana_home):
    """`vault links NOTE` loaded every note's record, aliases and link targets to resolve one note:
    a vault of 100,000 notes held them all. It now keeps only the notes its few links could name,
    read from the manifest a page at a time, and answers as before (the control: the same links)."""
    import tracemalloc

    from memory.vaults import manifest
    from memory.vaults.links import note_links

    arcana_home.ensure()
    vault = VaultRegistry(arcana_home).add(make_vault({
        "Home.md": "[[Alpha]] [[Nowhere]] [[./Sub/Beta]] [[Gamma]]",
        "Alpha.md": "---\naliases: [First]\n---\nback to [[Home]]",
        "Sub/Beta.md": "[[home]] and [[First]]",
    }), "big")
    await index_vault(vault, embed=False)
    peaks = []
    for fillers in (2_000, 40_000):
        records = [manifest.FileRecord(f"filler-{i:06d}", f"filler/{i:06d}/Note {i}.md", 1, 1, "h",
                                       tuple(f"alias {i} {k}" for k in range(4)), ("Home", f"Other {i}"))
                   for i in range(fillers)]
        records.append(manifest.FileRecord("gamma", "zz/Gamma.md", 1, 1, "h"))  # on the last page: still found
        store = open_store(vault)
        try:
            await store.run(manifest.save, records, [], {}, {})
            tracemalloc.start()
            links = await note_links([vault], "home")
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        finally:
            await store.aclose()
        assert (links.note, links.outgoing, links.unresolved) == ("Home.md", ["Alpha.md", "Sub/Beta.md"], ["Nowhere"])
        assert links.backlinks == ["Alpha.md", "Sub/Beta.md"]
    assert peaks[1] < peaks[0] + 1_000_000, f"peak {peaks[0]} B beside 2,000 notes, {peaks[1]} B beside 40,000"
