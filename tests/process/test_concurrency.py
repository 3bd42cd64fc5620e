"""Real processes sharing one store: library writers, CLI `remember`s and a
cron-style `arcana prune` loop. Everyone succeeds, nobody sees "database is
locked", counts add up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from memory.agents import AgentRegistry

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_embedder")]

WRITES = 200

WRITER = """
import asyncio, sys
from memory.adapters.sqlite import SQLiteAdapter
from memory.types import MemoryEntry, MemoryQuery

async def main(agent_id, tag, count):
    store = SQLiteAdapter.for_agent(agent_id, actor=f"writer-{tag}")
    for i in range(count):
        await store.write(MemoryEntry(agent_id=agent_id, content=f"{tag} concurrent note {i}", importance=0.6))
        if i % 25 == 0:
            await store.search(MemoryQuery(agent_id=agent_id, text=f"{tag} note"))
    await store.aclose()
    print(f"{tag} wrote {count}", flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def test_two_writers_and_a_prune_loop_share_one_store(arcana_home):
    arcana_home.ensure()
    card = AgentRegistry(arcana_home).create("shared")
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    prune = [sys.executable, "-m", "arcana_cli.main", "prune", "--agent", "shared", "--min-importance", "0.3",
             "--quiet"]
    # Three identical seeds on purpose: --no-reconcile keeps them three rows, not one reinforced.
    seed = [sys.executable, "-m", "arcana_cli.main", "--quiet", "remember", "low value seed", "--agent", "shared",
            "--importance", "0.1", "--no-reconcile"]
    for _ in range(3):
        subprocess.run(seed, env=env, check=True, capture_output=True)

    started = time.monotonic()
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, card.id, tag, str(WRITES)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for tag in ("left", "right")
    ]
    prune_runs, remembers = [], []
    while any(w.poll() is None for w in writers) and time.monotonic() - started < 60:
        # The case: a `remember` while a cron `prune` runs, both from the CLI.
        remember = subprocess.Popen(
            [sys.executable, "-m", "arcana_cli.main", "remember", f"cli note {len(remembers)}", "--agent", "shared",
             "--importance", "0.6"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        prune_runs.append(subprocess.run(prune, env=env, capture_output=True, text=True, timeout=60))
        remembers.append((remember, *remember.communicate(timeout=60)))
    outputs = [w.communicate(timeout=60) for w in writers]

    for writer, (stdout, stderr) in zip(writers, outputs):
        assert writer.returncode == 0, stderr
        assert "locked" not in stderr.lower()
    assert sorted(o[0].strip() for o in outputs) == [f"left wrote {WRITES}", f"right wrote {WRITES}"]
    assert prune_runs, "the prune loop never ran alongside the writers"
    for process, stdout, stderr in remembers:
        assert process.returncode == 0 and len(stdout.strip()) == 36, stderr
        assert "locked" not in stderr.lower()
    for run in prune_runs:
        assert (run.returncode, run.stdout) == (0, ""), run.stderr
        assert "locked" not in run.stderr.lower()

    listed = subprocess.run(
        [sys.executable, "-m", "arcana_cli.main", "memory", "list", "--agent", "shared", "--all", "--archived",
         "--limit", "10000", "--json"],
        env=env, capture_output=True, text=True, check=True,
    )
    rows = json.loads(listed.stdout)
    assert len(rows) == 2 * WRITES + 3 + len(remembers)
    assert {r["content"] for r in rows if r["content"].startswith("cli note")} == {
        f"cli note {i}" for i in range(len(remembers))
    }
    assert sum(r["archived"] for r in rows) == 3  # the seeds, archived by the first prune
    for tag in ("left", "right"):
        assert {r["content"] for r in rows if r["content"].startswith(tag)} == {
            f"{tag} concurrent note {i}" for i in range(WRITES)
        }


def _open_fresh_stores(root: str, trials: int, barrier) -> list[str]:
    """Open ``root/<i>.db`` for each trial in step with the other processes."""
    import asyncio
    from pathlib import Path

    from memory.adapters.sqlite import SQLiteAdapter

    async def trial(path: Path) -> None:
        store = SQLiteAdapter(path)
        try:
            await store.connect()
        finally:
            await store.aclose()

    errors = []
    for i in range(trials):
        barrier.wait()
        try:
            asyncio.run(trial(Path(root) / f"{i}.db"))
        except Exception as exc:
            errors.append(f"trial {i}: {exc}")
    return errors


def test_processes_creating_one_store_at_once_never_see_locked(tmp_path):
    """The WAL switch on a brand-new file upgrades a read to a write, which SQLite
    fails at once instead of waiting; three processes racing to create the
    same store used to lose about one race in thirty."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    trials, workers = 150, 3
    root = tmp_path / "stores"
    root.mkdir()
    barrier = ctx.Manager().Barrier(workers)
    with ctx.Pool(workers) as pool:
        results = [pool.apply_async(_open_fresh_stores, (str(root), trials, barrier)) for _ in range(workers)]
        errors = [e for r in results for e in r.get(timeout=300)]
    assert errors == []
    assert len(list(root.glob("*.db"))) == trials  # positive control: every trial really created a store
