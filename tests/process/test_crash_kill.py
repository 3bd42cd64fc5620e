"""SIGKILL at a random point in real writer processes; what was acknowledged is stored (never fewer).

remember (a loop of CLI processes), a bulk library write, `vault index`,
`prune` and `reindex`: each killed once at a random moment (seeded, printed on
failure), then the store is checked for integrity and for every acknowledged
row, and the interrupted command is rerun to completion.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.sqlite.connection import dbapi
from memory.types import MemoryEntry

ROOT = Path(__file__).resolve().parents[2]
ARCANA = [sys.executable, "-m", "arcana_cli.main"]
SEED = int(os.environ.get("ARCANA_CRASH_SEED", time.time_ns() % 10_000))


@pytest.fixture
def rng():
    print(f"crash seed {SEED} (rerun with ARCANA_CRASH_SEED={SEED})")
    return random.Random(SEED)


def env_for(home) -> dict[str, str]:
    return {**os.environ, "ARCANA_HOME": str(home.root)}


def kill_after(proc: subprocess.Popen, seconds: float) -> None:
    """SIGKILL the process group (a shell loop and the arcana it is running) after ``seconds``."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def rows(db: Path) -> dict[str, int]:
    """id -> archived, read straight from the file after an integrity check."""
    conn = dbapi().connect(str(db), timeout=30)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return dict(conn.execute("SELECT id, archived FROM memories").fetchall())
    finally:
        conn.close()


def seed_store(home, name: str, count: int, importance: float = 0.05) -> tuple[str, Path]:
    card = AgentRegistry(home).create(name)

    async def go():
        store = SQLiteAdapter.for_agent(card.id, home=home)
        await store.write_many(
            [MemoryEntry(agent_id=card.id, content=f"note {i} on tides", importance=importance) for i in range(count)]
        )
        await store.aclose()

    asyncio.run(go())
    return card.id, home.agent_db(card.id)


def test_killed_remember_loop_loses_no_acknowledged_write(arcana_home, no_embedder, rng):
    loop = f"for i in $(seq 1 40); do {' '.join(ARCANA)} -q remember \"crash $i\" --agent ada --json >/dev/null && echo ACK $i; done"
    proc = subprocess.Popen(["bash", "-c", loop], stdout=subprocess.PIPE, text=True, env=env_for(arcana_home),
                            start_new_session=True)
    kill_after(proc, rng.uniform(3.0, 8.0))
    acked = {f"crash {line.split()[1]}" for line in proc.stdout.read().splitlines() if line.startswith("ACK")}
    db = arcana_home.agent_db(AgentRegistry(arcana_home).resolve("ada").id)
    conn = dbapi().connect(str(db), timeout=30)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in conn.execute("SELECT content FROM memories")}
    finally:
        conn.close()
    assert acked, "killed before the first write was acknowledged; the kill window is too early"
    assert acked <= stored  # stored may hold one more: written, killed before it could say so


def test_killed_bulk_write_loses_no_acknowledged_batch(tmp_path, rng):
    db = tmp_path / "bulk.db"
    script = textwrap.dedent(f"""
        import asyncio, sys
        from memory.adapters.sqlite import SQLiteAdapter
        from memory.types import MemoryEntry

        async def main():
            store = SQLiteAdapter({str(db)!r})
            for batch in range(1000):
                await store.write_many([MemoryEntry(agent_id="a", content=f"bulk {{batch}} {{i}}") for i in range(250)])
                print(batch, flush=True)

        asyncio.run(main())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    kill_after(proc, rng.uniform(1.5, 4.0))
    acked = [int(line) for line in proc.stdout.read().split()]
    assert acked, "killed before the first batch was acknowledged"
    assert len(rows(db)) >= 250 * len(acked)


def test_killed_vault_index_keeps_the_index_consistent_and_a_rerun_completes(cli, arcana_home, tmp_path, no_embedder, rng):
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(1500):
        (notes / f"n{i:04d}.md").write_text(f"# Note {i}\n\nSee [[n{(i + 1) % 1500:04d}]] about tides.\n")
    assert cli("vault", "add", str(notes), "--name", "v").exit_code == 0
    proc = subprocess.Popen([*ARCANA, "-q", "vault", "index", "v"], env=env_for(arcana_home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    kill_after(proc, rng.uniform(0.8, 3.0))
    db = arcana_home.vaults_dir / "v.db"
    if db.exists():
        rows(db)  # integrity after the kill
    rerun = cli("vault", "index", "v", "--json")
    assert rerun.exit_code == 0, rerun.stderr
    assert len(rows(db)) == 1500


def test_killed_prune_archives_or_not_but_loses_nothing(cli, arcana_home, no_embedder, rng):
    _, db = seed_store(arcana_home, "ada", 3000)
    proc = subprocess.Popen([*ARCANA, "prune", "--agent", "ada", "--min-importance", "0.5", "-q"],
                            env=env_for(arcana_home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    kill_after(proc, rng.uniform(0.8, 3.0))
    after_kill = rows(db)
    assert len(after_kill) == 3000 and set(after_kill.values()) <= {0, 1}
    assert len(set(after_kill.values())) == 1  # one transaction: all archived or none
    assert cli("prune", "--agent", "ada", "--min-importance", "0.5").exit_code == 0
    assert set(rows(db).values()) == {1} and len(rows(db)) == 3000


def test_killed_reindex_loses_nothing_and_a_rerun_completes(cli, arcana_home, rng):
    """With the real offline embedder: the rows were written without vectors, reindex backfills them."""
    _, db = seed_store(arcana_home, "ada", 200, importance=0.5)
    proc = subprocess.Popen([*ARCANA, "reindex", "--agent", "ada", "-q"], env=env_for(arcana_home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    kill_after(proc, rng.uniform(0.8, 3.0))
    assert len(rows(db)) == 200
    rerun = cli("reindex", "--agent", "ada")
    assert rerun.exit_code == 0, rerun.stderr
    found = cli("recall", "note 123 tides", "--agent", "ada", "--mode", "keyword", "--json")
    assert found.exit_code == 0 and "note 123 on tides" in found.stdout
    assert len(rows(db)) == 200
    conn = dbapi().connect(str(db), timeout=30)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'memory_vec%_rowids'")]
        assert len(tables) == 1  # one vector index, pinned once
    finally:
        conn.close()
    status = cli("embeddings", "status", "--json")
    assert status.exit_code == 0, status.stderr
    [ada] = [d for d in json.loads(status.stdout)["databases"] if d["agent"] == "ada"]
    assert (ada["rows"], ada["embedded"], ada["missing"]) == (200, 200, 0)
