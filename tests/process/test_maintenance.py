"""Maintenance through the core API (issue 10, items 1-2): prune and reindex of a home hold
their lock against another process, write their audit line, and a prune reaches the
promoted copies in the global tier. Real homes, real SQLite files, real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from factories import entry
from federation_faults import corrupt_file, write_locked

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.config import ArcanaConfig
from memory.errors import LockHeldError, NotFoundError
from memory.operations.prune import prune_home
from memory.operations.reindex import reindex_home
from memory.operator.edits import LiveCopyError
from memory.operator.targets import Selection
from memory.promotion import global_copy
from memory.types import Audience, MemoryQuery, PruneMode, PrunePolicy

KEYWORD_ONLY = ArcanaConfig.model_validate({"embedding": {"providers": []}})


async def _write(path, entries) -> None:
    store = SQLiteAdapter(path, actor="test")
    try:
        await store.write_many(entries)
    finally:
        await store.aclose()


async def _get(path, entry_id: str):
    store = SQLiteAdapter(path, actor="test")
    try:
        return await store.get(entry_id, audience=Audience.OPERATOR, include_archived=True)
    finally:
        await store.aclose()


async def _recall(path, text: str) -> set[str]:
    store = SQLiteAdapter(path, actor="test")
    try:
        return {e.content for e in await store.search(MemoryQuery(text=text, limit=50))}
    finally:
        await store.aclose()


async def _promoted(home, agent: str, importances: list[float], word: str) -> tuple[str, list]:
    """An agent whose memories (importance as given) are all promoted, as remember leaves them."""
    card = AgentRegistry(home).create(agent)
    memories = [entry(f"{word} fact {i}", agent_id=card.id, importance=imp) for i, imp in enumerate(importances)]
    await _write(home.agent_db(card.id), memories)
    await _write(home.global_db, [global_copy(m) for m in memories])
    return card.id, memories


def _audit(home) -> list[dict]:
    if not home.audit_log.exists():
        return []
    return [json.loads(line) for line in home.audit_log.read_text().splitlines()]


@pytest.fixture
def fake_embedding(embed_server) -> ArcanaConfig:
    """A config whose one embedder is a loopback Ollama server serving 16-dim hashed vectors."""
    from embed_server import hashed_vectors

    server = embed_server({"fake-embed": hashed_vectors(16)})
    return ArcanaConfig.model_validate(
        {"embedding": {"providers": ["ollama"], "ollama_model": "fake-embed", "ollama_url": server.url}}
    )


@pytest.fixture
def lock_holder(arcana_home):
    """hold("prune") -> a real process holding <home>/locks/prune.lock until the test ends."""
    holders = []

    def hold(what: str):
        arcana_home.locks_dir.mkdir(parents=True, exist_ok=True)
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import fcntl, os, sys\n"
             "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
             "fcntl.flock(fd, fcntl.LOCK_EX)\n"
             "print('locked', flush=True)\n"
             "sys.stdin.read()\n", str(arcana_home.locks_dir / f"{what}.lock")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        holders.append(holder)
        assert holder.stdout.readline().strip() == "locked"
        return holder

    yield hold
    for holder in holders:
        holder.stdin.close()
        holder.wait(timeout=10)


def _release(holder) -> None:
    holder.stdin.close()
    holder.wait(timeout=10)


async def test_prune_home_fails_fast_while_another_process_holds_the_lock(arcana_home, lock_holder):
    ada, memories = await _promoted(arcana_home, "ada", [0.1, 0.5], "lock")
    policy = PrunePolicy(min_importance=0.3)
    holder = lock_holder("prune")
    started = time.monotonic()
    with pytest.raises(LockHeldError, match="another prune is running"):
        await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), policy)
    assert time.monotonic() - started < 2  # never waits for the holder
    assert not (await _get(arcana_home.agent_db(ada), memories[0].id)).archived  # nothing changed
    assert [r for r in _audit(arcana_home) if r["event"] == "prune"] == []
    _release(holder)
    # positive control: with the lock free, the same call prunes and audits
    run = await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), policy)
    assert run.removed == 1 and (await _get(arcana_home.agent_db(ada), memories[0].id)).archived


async def test_reindex_home_fails_fast_while_another_process_holds_the_lock(arcana_home, lock_holder, fake_embedding):
    await _promoted(arcana_home, "ada", [0.5], "reindexlock")
    holder = lock_holder("reindex")
    with pytest.raises(LockHeldError, match="another reindex is running"):
        await reindex_home(arcana_home, fake_embedding, Selection(agent="ada"))
    _release(holder)
    run = await reindex_home(arcana_home, fake_embedding, Selection(agent="ada"))  # positive control
    assert [(s.report.keyword_rows, s.report.vectors.embedded) for s in run.stores] == [(1, 1)] and not run.failed


async def test_prune_home_audits_each_store_that_lost_memories(arcana_home):
    ada, _ = await _promoted(arcana_home, "ada", [0.1, 0.2, 0.95], "audit")
    bob, _ = await _promoted(arcana_home, "bob", [0.95], "audit")
    run = await prune_home(arcana_home, KEYWORD_ONLY, Selection(all=True), PrunePolicy(min_importance=0.5), actor="cron")
    assert {s.target.fields["agent"]: s.report.archived for s in run.stores} == {"ada": 2, "bob": 0}
    [line] = [r for r in _audit(arcana_home) if r["event"] == "prune"]  # bob lost nothing: no line
    assert (line["store"], line["archived"], line["purged"], line["scanned"]) == (f"agent:{ada}", 2, 0, 3)
    assert "victim_ids" not in line
    dry = await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="bob"), PrunePolicy(max_entries=0, dry_run=True))
    assert dry.removed == 1
    assert len([r for r in _audit(arcana_home) if r["event"] == "prune"]) == 1  # a dry run leaves no line


async def test_reindex_home_audits_a_reembed(arcana_home, fake_embedding):
    config = fake_embedding
    await _promoted(arcana_home, "ada", [0.5, 0.6], "reembed")
    await _promoted(arcana_home, "bob", [0.5], "reembed")
    plain = await reindex_home(arcana_home, config, Selection(agent="bob"))  # control: a backfill is not a re-pin
    assert plain.stores[0].report.vectors.embedded == 1 and not plain.stores[0].report.repinned
    assert [r for r in _audit(arcana_home) if r["event"] == "reembed"] == []
    run = await reindex_home(arcana_home, config, Selection(agent="ada"), model="ollama:fake-embed", keyword=False)
    [done] = run.stores
    assert done.report.repinned and done.report.vectors.embedded == 2 and done.report.keyword_rows is None
    [line] = [r for r in _audit(arcana_home) if r["event"] == "reembed"]
    assert (line["store"], line["model"]) == ("ada", "fake-embed")


@pytest.mark.parametrize("mode", list(PruneMode))
async def test_pruning_an_agent_reaches_its_promoted_copies_only(arcana_home, mode):
    ada, (low, mid, top) = await _promoted(arcana_home, "ada", [0.91, 0.93, 0.99], "heron")
    bob, (bobs,) = await _promoted(arcana_home, "bob", [0.91], "heron")
    assert await _recall(arcana_home.global_db, "heron") == {low.content, mid.content, top.content, bobs.content}

    run = await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), PrunePolicy(max_entries=1, mode=mode))
    [done] = run.stores
    assert sorted(done.report.victim_ids) == sorted([low.id, mid.id])
    assert done.as_dict()["copies"] == {"tier": "global", "op": mode.value, "changed": True, "count": 2}
    # gone from every other agent's recall; the kept memory and bob's copy still answer (positive controls)
    assert await _recall(arcana_home.global_db, "heron") == {top.content, bobs.content}
    for victim in (low, mid):
        copy = await _get(arcana_home.global_db, victim.id)
        assert (copy is None) if mode is PruneMode.PURGE else copy.archived
    assert not (await _get(arcana_home.global_db, top.id)).archived
    [line] = [r for r in _audit(arcana_home) if r["event"] == "prune"]
    assert line["copies"]["count"] == 2


@pytest.mark.parametrize("mode", list(PruneMode))
async def test_a_dry_run_prune_counts_the_copies_it_leaves(arcana_home, mode):
    """A dry run reports the copies the real run then takes (a script trusts it), and touches none."""
    ada, (low, mid, top) = await _promoted(arcana_home, "ada", [0.91, 0.93, 0.99], "dry")
    copies = SQLiteAdapter(arcana_home.global_db, actor="test")
    try:
        await copies.archive([mid.id])  # an archived copy: archived again by nothing, purged all the same
    finally:
        await copies.aclose()
    expected = 2 if mode is PruneMode.PURGE else 1
    policy = PrunePolicy(max_entries=1, mode=mode)
    dry = await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), policy.model_copy(update={"dry_run": True}))
    assert dry.removed == 2
    assert dry.stores[0].as_dict()["copies"] == {"tier": "global", "op": mode.value, "changed": True, "count": expected}
    assert await _recall(arcana_home.global_db, "dry") == {low.content, top.content}  # nothing touched
    assert not (await _get(arcana_home.agent_db(ada), low.id)).archived
    real = await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), policy)
    assert real.stores[0].as_dict()["copies"] == dry.stores[0].as_dict()["copies"]
    assert await _recall(arcana_home.global_db, "dry") == {top.content}


async def test_an_unreachable_global_tier_fails_the_prune_before_the_agent_changes(arcana_home):
    """A global tier held by another writer (another connection's write lock): the prune fails loudly and the agent's memories stay,
    so running it again (once the tier is free) still finds them and reaches their copies."""
    arcana_home.connections_path.parent.mkdir(parents=True, exist_ok=True)
    arcana_home.connections_path.write_text(json.dumps({"global": {"write_timeout_ms": 800}}))
    ada, (low, top) = await _promoted(arcana_home, "ada", [0.91, 0.99], "locked")
    policy = PrunePolicy(max_entries=1)
    with write_locked(arcana_home.global_db):
        with pytest.raises(LiveCopyError, match="run the same command again"):
            await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), policy)
    assert not (await _get(arcana_home.agent_db(ada), low.id)).archived
    run = await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), policy)  # the retry
    assert run.stores[0].report.victim_ids == [low.id]
    assert await _recall(arcana_home.global_db, "locked") == {top.content}


async def test_a_global_tier_out_of_reach_fails_only_a_prune_that_could_leave_a_copy(arcana_home):
    """Unreadable global tier: an agent none of whose memories was ever promotable prunes as usual;
    one with promoted memories fails before its store changes, and prunes once the tier is back."""
    ada, (low, top) = await _promoted(arcana_home, "ada", [0.91, 0.99], "reach")
    cal = AgentRegistry(arcana_home).create("cal")
    plain = [entry(f"plain fact {i}", agent_id=cal.id, importance=imp) for i, imp in enumerate([0.2, 0.5])]
    await _write(arcana_home.agent_db(cal.id), plain)
    assert not arcana_home.global_db.with_name("global.db-wal").exists()
    intact = arcana_home.global_db.read_bytes()
    corrupt_file(arcana_home.global_db)
    policy = PrunePolicy(max_entries=1)
    run = await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="cal"), policy)
    assert run.stores[0].report.victim_ids == [plain[0].id] and run.stores[0].copies is None
    with pytest.raises(LiveCopyError, match="run the same command again"):
        await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), policy)
    assert not (await _get(arcana_home.agent_db(ada), low.id)).archived
    arcana_home.global_db.write_bytes(intact)
    run = await prune_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada"), policy)
    assert run.stores[0].report.victim_ids == [low.id]
    assert await _recall(arcana_home.global_db, "reach") == {top.content}


async def test_selection_names_what_it_works_on(arcana_home):
    await _promoted(arcana_home, "ada", [0.5], "select")
    with pytest.raises(ValueError, match="nothing to prune"):
        await prune_home(arcana_home, KEYWORD_ONLY, Selection(), PrunePolicy(min_importance=0.1))
    with pytest.raises(ValueError, match="not both"):
        await reindex_home(arcana_home, KEYWORD_ONLY, Selection(agent="ada", all=True))
    with pytest.raises(NotFoundError):
        await prune_home(arcana_home, KEYWORD_ONLY, Selection(pools=["nope"]), PrunePolicy(min_importance=0.1))
    run = await prune_home(arcana_home, KEYWORD_ONLY, Selection(global_=True), PrunePolicy(min_importance=0.9))
    assert [s.target.label for s in run.stores] == ["global"] and run.stores[0].report.archived == 1


_AGED_OUT = [  # an old session of episodes: what consolidate digests
    {"content": f"Caroline: I went to the {place} on Monday.", "type": "episodic", "session": "s1",
     "created_at": f"2023-05-08T10:0{i}:00Z", "importance": 0.05}
    for i, place in enumerate(("museum", "harbour", "library"))
]


def _files(root) -> dict:
    """Every file under ``root``: size, mtime, mode and bytes (folders by what they hold: SQLite makes and
    removes a -wal and -shm beside a WAL store it opens, which moves the folder's own mtime)."""
    import hashlib
    import os

    return {os.path.relpath(p, root): (st.st_size, st.st_mtime_ns, st.st_mode, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file() and (st := p.stat())}


@pytest.mark.parametrize("command", [["prune", "--all", "--max-entries", "1"], ["consolidate", "--all"]])
def test_a_dry_run_leaves_the_home_as_it_was(arcana_home, tmp_path, command):
    """A dry run changed the home: it made its lock file (and wrote its pid in it each time) and a prune's
    dry run appended an audit line. Now every file stays as it was; the real run changes it (control)."""
    from runner import arcana, keyword_only

    keyword_only(arcana_home)
    lines = tmp_path / "old.jsonl"
    lines.write_text("".join(json.dumps(line) + "\n" for line in _AGED_OUT))
    arcana("remember", "--from", str(lines), "--agent", "ada", "--no-reconcile")
    arcana("pool", "create", "team")
    arcana("agent", "join", "ada", "team")
    arcana("remember", "team memory", "--agent", "ada", "--pool", "team")
    before = _files(arcana_home.root)
    dry = json.loads(arcana(*command, "--dry-run", "--json"))
    assert sum(s["archived"] for s in dry["agents"]) == (3 if command[0] == "consolidate" else 2)
    assert _files(arcana_home.root) == before
    arcana(*command)
    assert _files(arcana_home.root) != before  # control: the real run changes what the dry run would


def test_consolidate_all_json_names_a_store_it_found_corrupt_and_quarantined(arcana_home, tmp_path):
    """bob's store is garbage: `consolidate --all` moved it aside, consolidated the fresh empty store in its
    place and exited 5, while its --json showed bob as a clean store (scanned 0, nothing else). Now bob's entry
    names the folder it was moved to; ada beside it (the control) is consolidated as before."""
    from runner import arcana, keyword_only, run_arcana

    keyword_only(arcana_home)
    lines = tmp_path / "old.jsonl"
    lines.write_text("".join(json.dumps(line) + "\n" for line in _AGED_OUT))
    arcana("remember", "--from", str(lines), "--agent", "ada", "--no-reconcile")
    arcana("remember", "bob's memory before the damage", "--agent", "bob")
    corrupt_file(arcana_home.agent_db(json.loads(arcana("agent", "show", "bob", "--json"))["id"]))
    done = run_arcana("consolidate", "--all", "--json")
    assert done.returncode == 5, done.stderr
    agents = {a["agent"]: a for a in json.loads(done.stdout)["agents"]}
    assert agents["ada"]["archived"] == 3 and "quarantined" not in agents["ada"]
    [folder] = arcana_home.quarantine_dir.iterdir()
    assert agents["bob"]["quarantined"] == str(folder) and agents["bob"]["scanned"] == 0, agents["bob"]
    assert [line for line in done.stderr.splitlines() if "arcana: error:" in line and str(folder) in line]
