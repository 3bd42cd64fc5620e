"""Pruning: one victim set from floor and cap, pinned never touched, archive
restorable, purge final, dry runs inert; the cron-safe CLI around it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from factories import entry

from memory.adapters.sqlite import SQLiteAdapter
from memory.types import Audience, MemoryQuery, PruneMode, PrunePolicy

# Keyword-only homes: these tests are about the store, not the embedding model.
pytestmark = pytest.mark.usefixtures("no_embedder")




@pytest.fixture
async def ten(store):
    """Importance 0.0 .. 0.9, plus one pinned entry at importance 0."""
    entries = [entry(f"prune probe {i}", importance=i / 10) for i in range(10)]
    pinned = entry("prune probe pinned", importance=0.0, pinned=True)
    await store.write_many([*entries, pinned])
    return entries, pinned


def importances(entries, ids) -> list[float]:
    by_id = {e.id: e.importance for e in entries}
    return sorted(by_id[i] for i in ids)


@pytest.mark.parametrize(
    "floor, cap, expected",
    [
        (0.3, None, [0.0, 0.1, 0.2]),
        (None, 7, [0.0, 0.1, 0.2, 0.3]),  # 11 live (pinned counts), keep 7
        (0.5, 9, [0.0, 0.1, 0.2, 0.3, 0.4]),  # cap's victims are inside the floor's
        (0.15, 6, [0.0, 0.1, 0.2, 0.3, 0.4]),  # cap reaches past the floor
        (1.0, None, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]),
        (None, 0, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]),
    ],
)
async def test_floor_and_cap_compose_into_one_victim_set(store, ten, floor, cap, expected):
    entries, pinned = ten
    report = await store.prune(PrunePolicy(min_importance=floor, max_entries=cap))
    assert pinned.id not in report.victim_ids
    assert importances(entries, report.victim_ids) == pytest.approx(expected)
    assert len(set(report.victim_ids)) == len(report.victim_ids) == report.archived
    assert report.scanned == 11
    assert (await store.get(pinned.id)).pinned  # untouched and still recalled


async def test_a_cap_removes_derived_memories_before_any_fact(store):
    """A summary outweighing the fact it repeats still goes first; a pinned summary stays (control)."""
    fact = entry("I prefer tea over coffee", importance=0.3)
    other = entry("The ferry leaves at nine", importance=0.2)
    summaries = [entry(f"Session summary {i}", importance=0.9, tags=["derived"]) for i in range(3)]
    pinned = entry("Session summary pinned", importance=0.0, tags=["derived"], pinned=True)
    await store.write_many([fact, other, *summaries, pinned])
    report = await store.prune(PrunePolicy(max_entries=3))
    assert set(report.victim_ids) == {s.id for s in summaries[:3]}
    report = await store.prune(PrunePolicy(max_entries=2))
    assert report.victim_ids == [other.id]  # with no derived memory left to take, the lowest fact goes


async def test_a_cap_keeps_what_recall_returns_and_what_carries_others(store):
    """Among equal importance, a memory recall keeps returning and a consolidated memory with
    sources outlive two never recalled, though both are older; the older of those goes first."""
    from datetime import UTC, datetime

    from memory.graph.edges import EdgeStore, MemoryEdge
    from memory.sqlite.consolidation import SOURCES

    day = lambda d: datetime(2024, 1, d, tzinfo=UTC)  # noqa: E731
    recalled = entry("harbour note kelp", importance=0.5, created_at=day(1), access_count=8, last_accessed_at=day(2))
    digest = entry("harbour note gull", importance=0.5, created_at=day(1))
    old, new = entry("harbour note tide", importance=0.5, created_at=day(5)), entry("harbour note buoy", importance=0.5, created_at=day(6))
    source = entry("harbour note source", importance=0.5, created_at=day(1), archived=True)
    await store.write_many([recalled, digest, old, new, source])
    await EdgeStore(store).upsert([MemoryEdge(digest.id, source.id, SOURCES, "consolidation")])
    report = await store.prune(PrunePolicy(max_entries=2, dry_run=True))
    assert set(report.victim_ids) == {old.id, new.id}
    report = await store.prune(PrunePolicy(max_entries=3, dry_run=True))
    assert report.victim_ids == [old.id]  # least recently used first among the rest


async def test_a_planned_prune_removes_no_more_than_it_planned(store, ten):
    """What operations/prune.py relies on: copies followed for the plan, then exactly the plan pruned;
    a row that became a victim since stays for the next prune."""
    entries, _ = ten
    planned = (await store.prune(PrunePolicy(min_importance=0.3, dry_run=True))).victim_ids
    late = entry("prune probe late", importance=0.05)
    await store.write(late)
    report = await store.prune(PrunePolicy(min_importance=0.3, within=frozenset(planned)))
    assert sorted(report.victim_ids) == sorted(planned) and report.archived == 3
    assert await store.get(late.id) is not None  # the late victim is still live
    assert [await store.get(i) for i in planned] == [None] * 3  # and the plan went
    assert PrunePolicy(min_importance=0.3, within=frozenset(planned)).model_dump() == PrunePolicy(min_importance=0.3).model_dump()
    assert late.id in (await store.prune(PrunePolicy(min_importance=0.3))).victim_ids


async def test_archive_hides_keeps_and_restores(store, ten):
    entries, _ = ten
    report = await store.prune(PrunePolicy(min_importance=0.3))
    victims = set(report.victim_ids)
    recalled = {e.id for e in await store.search(MemoryQuery(text="prune probe", limit=50))}
    assert recalled and not recalled & victims
    assert await store.count() == 11  # kept
    for victim in victims:
        kept = await store.get(victim, audience=Audience.OPERATOR, include_archived=True)
        assert kept.archived
    assert await store.restore(sorted(victims)) == 3
    recalled = {e.id for e in await store.search(MemoryQuery(text="prune probe", limit=50))}
    assert victims <= recalled


async def test_a_second_archive_prune_finds_nothing(store, ten):
    assert (await store.prune(PrunePolicy(min_importance=0.3))).archived == 3
    again = await store.prune(PrunePolicy(min_importance=0.3))
    assert (again.archived, again.victim_ids, again.scanned) == (0, [], 8)


async def test_purge_deletes_including_already_archived(store, ten):
    entries, pinned = ten
    await store.archive([entries[0].id])
    report = await store.prune(PrunePolicy(min_importance=0.3, mode=PruneMode.PURGE))
    assert report.purged == 3 and report.archived == 0
    assert await store.count() == 8
    for victim in report.victim_ids:
        assert await store.get(victim, audience=Audience.OPERATOR, include_archived=True) is None
        assert (await store.history(victim))[-1].op == "purge"  # the ledger keeps the story
    assert await store.get(pinned.id) is not None


def _file_state(path) -> tuple:
    return tuple(
        hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
        for p in (path, path.with_name(path.name + "-wal"))
    )


@pytest.mark.parametrize("mode", list(PruneMode))
async def test_dry_run_changes_nothing(tmp_path, mode):
    path = tmp_path / "dry.db"
    store = SQLiteAdapter(path)
    await store.write_many([entry(f"dry {i}", importance=i / 10) for i in range(10)])
    await store.aclose()
    before = _file_state(path)

    store = SQLiteAdapter(path)
    report = await store.prune(PrunePolicy(min_importance=0.5, max_entries=2, mode=mode, dry_run=True))
    await store.aclose()
    assert report.dry_run and len(report.victim_ids) == 8
    assert (report.archived if mode is PruneMode.ARCHIVE else report.purged) == 8
    assert _file_state(path) == before

    store = SQLiteAdapter(path)  # positive control: the same policy for real does change the file
    await store.prune(PrunePolicy(min_importance=0.5, max_entries=2, mode=mode))
    await store.aclose()
    assert _file_state(path) != before


# -- CLI ---------------------------------------------------------------------------


def _seed(cli, agent: str, importances: list[float]) -> None:
    for i, importance in enumerate(importances):
        result = cli("remember", f"{agent} memory {i}", "--agent", agent, "--importance", str(importance))
        assert result.exit_code == 0, result.stderr


def _live(cli, agent: str) -> int:
    return len(json.loads(cli("memory", "list", "--agent", agent, "--json").stdout))


def test_prune_one_agent_leaves_the_other(cli):
    _seed(cli, "ada", [0.1, 0.2, 0.9])
    _seed(cli, "bob", [0.1, 0.9])
    result = cli("prune", "--agent", "ada", "--min-importance", "0.5", "--json")
    assert result.exit_code == 0, result.stderr
    [report] = json.loads(result.stdout)["agents"]
    assert (report["agent"], report["archived"]) == ("ada", 2)
    assert (_live(cli, "ada"), _live(cli, "bob")) == (1, 2)


def test_prune_all_agents_and_purge_mode(cli):
    _seed(cli, "ada", [0.1, 0.9])
    _seed(cli, "bob", [0.1, 0.2, 0.9])
    result = cli("prune", "--all", "--min-importance", "0.5", "--mode", "purge", "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    reports = {r["agent"]: r["purged"] for r in json.loads(result.stdout)["agents"]}
    assert reports == {"ada": 1, "bob": 2}
    listed = json.loads(cli("memory", "list", "--agent", "bob", "--all", "--archived", "--json").stdout)
    assert len(listed) == 1


def test_prune_dry_run_via_cli(cli):
    _seed(cli, "ada", [0.1, 0.2, 0.9])
    result = cli("prune", "--agent", "ada", "--max-entries", "1", "--dry-run", "--json")
    assert json.loads(result.stdout)["agents"][0]["archived"] == 2
    assert "would remove 2" in result.stderr
    assert _live(cli, "ada") == 3


def test_nothing_to_do_is_exit_zero_and_quiet_is_silent(cli):
    _seed(cli, "ada", [0.9])
    result = cli("prune", "--agent", "ada", "--min-importance", "0.5")
    assert result.exit_code == 0 and "nothing to prune" in result.stderr
    quiet = cli("prune", "--all", "--min-importance", "0.95", "--quiet")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    assert _live(cli, "ada") == 0  # positive control: quiet still pruned


def test_prune_uses_config_defaults_and_rejects_no_rule(cli):
    _seed(cli, "ada", [0.05, 0.3, 0.9])
    default = cli("prune", "--agent", "ada", "--json")  # the built-in policy: archive below 0.1
    assert default.exit_code == 0, default.stderr
    assert json.loads(default.stdout)["policy"]["mode"] == "archive"
    assert json.loads(default.stdout)["agents"][0]["archived"] == 1 and _live(cli, "ada") == 2
    assert cli("config", "set", "prune.min_importance", "0.5").exit_code == 0
    result = cli("prune", "--agent", "ada", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["agents"][0]["archived"] == 1
    flags = cli("prune", "--agent", "ada", "--max-entries", "5", "--json")  # flags replace prune.* entirely
    assert json.loads(flags.stdout)["policy"]["min_importance"] is None and _live(cli, "ada") == 1
    assert cli("config", "set", "prune.min_importance", "null").exit_code == 0
    no_rule = cli("prune", "--agent", "ada")
    assert no_rule.exit_code == 2 and "no rule" in no_rule.stderr


def test_prune_needs_exactly_one_target(cli):
    _seed(cli, "ada", [0.1])
    assert cli("prune", "--min-importance", "0.5").exit_code == 2
    assert cli("prune", "--agent", "ada", "--all", "--min-importance", "0.5").exit_code == 2
    assert cli("prune", "--agent", "nobody", "--min-importance", "0.5").exit_code == 3


def test_lock_held_by_another_process_exits_75(cli, arcana_home):
    _seed(cli, "ada", [0.1])
    lock = arcana_home.locks_dir / "prune.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\n"
         "sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        result = cli("prune", "--agent", "ada", "--min-importance", "0.5", "--quiet")
        assert result.exit_code == 75
        assert "another prune is running" in result.stderr
        assert _live(cli, "ada") == 1
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert cli("prune", "--agent", "ada", "--min-importance", "0.5", "--quiet").exit_code == 0
    assert _live(cli, "ada") == 0


def test_prune_all_with_no_agents_is_nothing_to_do(cli):
    result = cli("prune", "--all", "--min-importance", "0.5")
    assert result.exit_code == 0 and "nothing to prune" in result.stderr


def test_prune_a_pool_and_the_global_tier_leaves_private_stores_alone(cli, no_embedder):
    assert cli("pool", "create", "team").exit_code == 0
    _seed(cli, "ada", [0.1])
    assert cli("agent", "join", "ada", "team").exit_code == 0
    for importance in ("0.1", "0.8"):
        written = cli("remember", f"team note {importance}", "--agent", "ada", "--pool", "team", "--importance", importance)
        assert written.exit_code == 0, written.stderr
    result = cli("prune", "--pool", "team", "--min-importance", "0.5", "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["agents"] == [] and [(t["tier"], t["archived"]) for t in payload["tiers"]] == [("pool:team", 1)]
    assert _live(cli, "ada") == 1  # the private store was not a target
    recalled = json.loads(cli("recall", "team note", "--agent", "ada", "--json").stdout)["results"]
    assert [r["content"] for r in recalled] == ["team note 0.8"]
    assert cli("prune", "--pool", "nope", "--min-importance", "0.5").exit_code == 3
    assert cli("prune", "--min-importance", "0.5").exit_code == 2  # no target named


def test_prune_the_global_tier(cli, arcana_home):
    assert cli("config", "set", "embedding.providers", "[]").exit_code == 0
    none_yet = cli("prune", "--global", "--min-importance", "0.5", "--json")  # nothing promoted: nothing to do
    assert none_yet.exit_code == 0 and json.loads(none_yet.stdout)["tiers"] == []
    _seed(cli, "ada", [0.95, 0.95])  # promoted: private and global copies
    result = cli("prune", "--global", "--max-entries", "1", "--json")
    assert result.exit_code == 0, result.stderr
    assert [(t["tier"], t["archived"]) for t in json.loads(result.stdout)["tiers"]] == [("global", 1)]
    assert _live(cli, "ada") == 2  # control: private copies untouched
