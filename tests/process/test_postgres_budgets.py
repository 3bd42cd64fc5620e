"""A server tier's budget in ``connections/memory-adapters.json`` bounds every command on it, not only
recall and remember: an operator's edit, export or prune waits on a locked pool as long as that budget
says, not the adapter's built-in 5 s. Real server (the suite's), real `arcana` processes; a psql
session holds the pool's table locked."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from runner import ARCANA, run_arcana
from test_postgres_server_trouble import Locker, team, waiting  # noqa: F401 - the server pool fixture, reused

from arcana_cli import exit_codes
from memory.adapters.opener import open_tier
from memory.config import ArcanaConfig, PoolSettings
from memory.store_kinds import StoreKind

BUDGET_MS = 1_000  # a fifth of the default statement timeout: which one ran out is plain from the time taken


def budgets(home, **tiers: dict) -> None:
    home.connections_path.parent.mkdir(exist_ok=True)
    home.connections_path.write_text(json.dumps(tiers))


def tight(ms: int) -> dict:
    return {"read_timeout_ms": ms, "semantic_timeout_ms": ms, "write_timeout_ms": ms}


async def test_a_server_tier_opens_with_its_configured_statement_timeout(arcana_home, pg_url):
    arcana_home.ensure()
    budgets(arcana_home, shared={"team": tight(1_500)}, **{"global": tight(2_500)})
    config = ArcanaConfig.model_validate(
        {"pools": {name: PoolSettings(url=pg_url) for name in ("team", "other")}, "memory": {"global_url": pg_url}})
    shown = {}
    for label, kind, name in (("team", StoreKind.POOL, "team"), ("other", StoreKind.POOL, "other"),
                              ("global", StoreKind.GLOBAL, None)):
        store = open_tier(arcana_home, kind, name, config=config, actor="test")
        try:
            shown[label] = await store._call(lambda conn: conn.fetchval("SHOW statement_timeout"))
        finally:
            await store.aclose()
    # "other" has no entry of its own: the default budget's largest timeout (5 s), the control.
    assert shown == {"team": "1500ms", "other": "5s", "global": "2500ms"}


@pytest.mark.parametrize("command", [("memory", "forget", "{id}", "--pool", "team"), ("export", "--pool", "team"),
                                     ("prune", "--pool", "team", "--max-entries", "0")],
                         ids=["forget", "export", "prune"])
def test_an_operator_command_on_a_locked_pool_gives_up_at_the_tiers_budget(team, arcana_home, pg_server, command):
    env = team
    listed = run_arcana("memory", "list", "--pool", "team", "--json", home=arcana_home, env=env)
    [blue] = [m["id"] for m in json.loads(listed.stdout)]
    args = [part.format(id=blue) for part in command]
    budgets(arcana_home, shared={"team": tight(BUDGET_MS)})
    locker = Locker(pg_server)
    try:
        proc = subprocess.Popen([*ARCANA, *args], env={**os.environ, "ARCANA_HOME": str(arcana_home.root), **env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not waiting(pg_server) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        started = time.monotonic()
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        locker.close()
    assert proc.returncode == exit_codes.STORAGE and err.count("\n") == 1, err
    assert "statement timeout" in err and "memory-adapters.json" in err, err
    assert took < 3.5, took  # the default budget would have waited 5 s
    again = run_arcana(*args, home=arcana_home, env=env)  # the control: the same budget, no lock
    assert again.returncode == 0, again.stderr


def test_migrate_up_keeps_its_hour_under_a_tight_budget(cli, arcana_home, pg_url, pg_server):
    """The upgrade is the one statement past the tier's budget: a second machine's upgrade holding the
    advisory lock longer than the budget is waited for, not cut off at it."""
    import asyncio
    import threading

    import asyncpg

    from memory.postgres.migrations import LOCK_KEY, MIGRATIONS, head_version, migrate

    async def old() -> None:
        conn = await asyncpg.connect(pg_url)
        try:
            await migrate(conn, "test", MIGRATIONS[:-1])
        finally:
            await conn.close()

    asyncio.run(old())
    arcana_home.ensure()
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}, "pools": {"team": {"url": pg_url}}}))
    budgets(arcana_home, shared={"team": tight(BUDGET_MS)})
    locker = Locker(pg_server, f"SELECT pg_advisory_xact_lock({LOCK_KEY})")
    release = threading.Timer(3 * BUDGET_MS / 1000, locker.close)  # three budgets on: the other upgrade is done
    release.start()
    try:
        done = cli("migrate", "up", "--json")
    finally:
        release.cancel()
        locker.close()
    assert done.exit_code == 0, done.output
    [team] = [r for r in json.loads(done.stdout) if r["database"].startswith("pool:team")]
    assert (team["from"], team["to"], team["state"]) == (head_version() - 1, head_version(), "migrated")
