"""`arcana backup` / `arcana restore` with real processes writing during the backup."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from runner import keyword_only as keyword_home
from runner import run_arcana as arcana

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.home import Home
from memory.types import MemoryEntry

WRITER = textwrap.dedent(
    """
    import asyncio, sys, time
    from memory.adapters.sqlite import SQLiteAdapter
    from memory.agents import AgentRegistry
    from memory.home import Home
    from memory.types import MemoryEntry

    async def main(name, stop_file):
        home = Home.resolve()
        card = AgentRegistry(home).resolve(name)
        store = SQLiteAdapter.for_agent(card.id, home=home, actor="writer")
        n = 0
        while True:
            await store.write_many([MemoryEntry(agent_id=card.id, content=f"{name} note {n + i}") for i in range(5)])
            n += 5
            if n == 50:
                print("warm", flush=True)
            if Path(stop_file).exists():
                break
            await asyncio.sleep(0.005)  # steady writes, not a CPU hog on a shared machine
        await store.aclose()

    from pathlib import Path
    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def rows(db: Path) -> tuple[int, int, str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        ledger = conn.execute("SELECT count(*) FROM memory_ledger").fetchone()[0]
        return count, ledger, conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


@pytest.fixture(autouse=True)
def keyword_only(arcana_home):
    """No embedder: each CLI process starts in well under a second."""
    keyword_home(arcana_home)


@pytest.fixture
def busy_home(arcana_home, tmp_path):
    """Three agents, each with its own writer process running; call the fixture's value to stop them."""
    for name in NAMES:
        card = AgentRegistry(arcana_home).create(name)
        asyncio.run(_first(arcana_home, card.id, f"{name} was here first"))
    stop = tmp_path / "stop"
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, name, str(stop)], env=env, stdout=subprocess.PIPE,
                                text=True) for name in NAMES]
    for writer in writers:
        assert writer.stdout.readline().strip() == "warm"

    def halt() -> None:
        stop.touch()
        for writer in writers:
            assert writer.wait(timeout=60) == 0

    yield halt
    if not stop.exists():
        halt()


NAMES = ["ada", "bob", "cy"]


async def _first(home: Home, agent_id: str, text: str) -> None:
    store = SQLiteAdapter.for_agent(agent_id, home=home)
    await store.write(MemoryEntry(agent_id=agent_id, content=text))
    await store.aclose()


def test_backup_while_processes_write_restores_consistently(arcana_home, busy_home, tmp_path):
    before = {db: rows(db)[0] for db in arcana_home.databases()}
    made = arcana("backup", str(tmp_path / "backups"), "--json", home=arcana_home.root)
    assert made.returncode == 0, made.stderr
    busy_home()  # the writers ran throughout the backup; stop them before checking
    after = {db: rows(db)[0] for db in arcana_home.databases()}
    folder = Path(json.loads(made.stdout)["path"])
    assert folder.name.startswith("arcana-backup-") and (folder / "manifest.json").is_file()
    manifest = json.loads((folder / "manifest.json").read_text())
    dbs = [f for f in manifest["files"] if f["kind"] == "database"]
    assert len(dbs) == 3 and all(f["schema_version"] >= 1 and len(f["sha256"]) == 64 for f in dbs)
    assert {"config.json"} <= {f["path"] for f in manifest["files"]}
    assert not list(folder.rglob("*-wal")) and not list(folder.rglob("*-shm"))

    verified = arcana("backup", "--verify", str(folder), home=arcana_home.root)
    assert verified.returncode == 0, verified.stderr

    fresh = Home(tmp_path / "restored")
    restored = arcana("restore", str(tmp_path / "backups"), "--json", home=fresh.root)
    assert restored.returncode == 0, restored.stderr
    for entry in dbs:
        snapshot, back = rows(folder / entry["path"]), rows(fresh.root / entry["path"])
        assert back == snapshot and back[2] == "ok"
        live = arcana_home.root / entry["path"]
        assert before[live] <= back[0] <= after[live]  # nothing written before the backup is missing
        assert back[0] % 5 == 1  # whole write batches only: each transaction is in or out
    doctor = arcana("doctor", home=fresh.root)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    recalled = arcana("recall", "here first", "--agent", "bob", "--json", home=fresh.root)
    assert "bob was here first" in recalled.stdout


def remember(home: Home, name: str, text: str) -> None:
    registry = AgentRegistry(home)
    card = registry.resolve(name) if registry.exists(name) else registry.create(name)
    asyncio.run(_first(home, card.id, text))


def contents(home: Home, name: str) -> list[str]:
    async def read():
        store = SQLiteAdapter.for_agent(AgentRegistry(home).resolve(name).id, home=home)
        found = await store.run(lambda raw: raw.execute("SELECT content FROM memories ORDER BY seq").fetchall())
        await store.aclose()
        return [r[0] for r in found]

    return asyncio.run(read())


def test_verify_catches_a_changed_or_missing_file(arcana_home, tmp_path):
    remember(arcana_home, "ada", "keep me safe")
    made = arcana("backup", str(tmp_path / "b"), "--json", home=arcana_home.root)
    folder = Path(json.loads(made.stdout)["path"])
    assert arcana("backup", "--verify", str(folder), home=arcana_home.root).returncode == 0  # positive control
    db = next(folder.rglob("memory.db"))
    data = bytearray(db.read_bytes())
    data[5000] ^= 0xFF
    db.write_bytes(bytes(data))
    bad = arcana("backup", "--verify", str(folder), "--json", home=arcana_home.root)
    assert bad.returncode == 1
    problems = json.loads(bad.stdout)["problems"]
    assert problems == [f"{db.relative_to(folder).as_posix()}: checksum differs from the manifest"]
    refused = arcana("restore", str(folder), home=tmp_path / "elsewhere")
    assert refused.returncode == 1 and "fails verification" in refused.stderr
    assert not (tmp_path / "elsewhere" / "agents").exists()


def test_restore_over_a_live_home_needs_force_and_keeps_the_old_one_in_the_trash(arcana_home, tmp_path):
    remember(arcana_home, "ada", "from the backup")
    folder = Path(json.loads(arcana("backup", str(tmp_path / "b"), "--json", home=arcana_home.root).stdout)["path"])
    remember(arcana_home, "ada", "written after the backup")

    refused = arcana("restore", str(folder), home=arcana_home.root)
    assert refused.returncode == 2 and "--force" in refused.stderr
    forced = arcana("restore", str(folder), "--force", "--json", home=arcana_home.root)
    assert forced.returncode == 0, forced.stderr
    trash = Path(json.loads(forced.stdout)["moved_to_trash"])
    assert trash.parent == arcana_home.trash_dir and list(trash.glob("agents/*/memory.db"))
    assert contents(arcana_home, "ada") == ["from the backup"]


CLAIMER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memory.operations.restore_swap import claim
    held = [claim(Path(p)) for p in sys.argv[1:]]
    print("held", flush=True)
    sys.stdin.read()
    """
)


def test_a_backup_in_the_same_second_as_another_takes_the_next_name(arcana_home, tmp_path):
    """Every second of the next two minutes already has a backup: a finished one (even seconds) or
    one still being written by a running process (odd); a backup now still succeeds, beside them."""
    import time
    from datetime import UTC, datetime, timedelta

    keyword_home(arcana_home)
    assert arcana("remember", "Backups run nightly.", "-a", "ada", home=arcana_home).returncode == 0
    dest = tmp_path / "backups"
    start = datetime.fromtimestamp(int(time.time()), UTC)
    names = [f"arcana-backup-{(start + timedelta(seconds=s)):%Y%m%dT%H%M%SZ}" for s in range(120)]
    for name in names[::2]:
        (dest / name).mkdir(parents=True)
        (dest / name / "mine.txt").write_text("someone else's backup")
    holder = subprocess.Popen([sys.executable, "-c", CLAIMER, *(str(dest / f"{n}.partial") for n in names[1::2])],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        done = arcana("backup", str(dest), "--json", home=arcana_home)
        assert done.returncode == 0, done.stderr
        made = Path(json.loads(done.stdout)["path"])
        assert made.name.rsplit("-", 1)[0] in names and made.name.endswith("-2"), made.name
        assert all((dest / n / "mine.txt").read_text() == "someone else's backup" for n in names[::2])
        assert all((dest / f"{n}.partial").is_dir() for n in names[1::2])  # their writers still run: kept
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    checked = arcana("backup", "--verify", str(dest), "--json", home=arcana_home)  # the newest: this one
    assert checked.returncode == 0 and json.loads(checked.stdout)["path"] == str(made), checked.stdout + checked.stderr


def test_the_tenth_backup_of_a_second_is_the_newest(arcana_home, tmp_path):
    """Names -2 to -9 of every second of the next minute already hold a backup of 'old' (the first
    backup's, linked): the backup of 'new' takes -10, which sorted as text before -2, so restore and
    --verify of DEST took a backup of 'old' for the newest. (The names of the seconds after it are
    removed once it is made: they are later by name.)"""
    import shutil
    import time
    from datetime import UTC, datetime, timedelta

    keyword_home(arcana_home)
    assert arcana("remember", "old", "-a", "ada", home=arcana_home).returncode == 0
    first = arcana("backup", str(tmp_path / "first"), "--json", home=arcana_home)
    older = Path(json.loads(first.stdout)["path"])
    dest = tmp_path / "backups"
    start = datetime.fromtimestamp(int(time.time()), UTC)
    for s in range(60):
        stamp = f"arcana-backup-{(start + timedelta(seconds=s)):%Y%m%dT%H%M%SZ}"
        for name in [stamp, *(f"{stamp}-{n}" for n in range(2, 10))]:
            shutil.copytree(older, dest / name, copy_function=os.link)
    assert arcana("remember", "new", "-a", "ada", home=arcana_home).returncode == 0
    done = arcana("backup", str(dest), "--json", home=arcana_home)
    made = Path(json.loads(done.stdout)["path"])
    assert made.name.endswith("-10"), made.name
    second = made.name.removesuffix("-10")
    for later in [p for p in dest.iterdir() if p.name.split("Z")[0] + "Z" > second]:  # names it did not need
        shutil.rmtree(later)
    checked = arcana("backup", "--verify", str(dest), "--json", home=arcana_home)
    assert checked.returncode == 0 and json.loads(checked.stdout)["path"] == str(made), checked.stdout + checked.stderr
    fresh = Home(tmp_path / "fresh")
    restored = arcana("restore", str(dest), home=fresh)
    assert restored.returncode == 0, restored.stderr
    listed = arcana("memory", "list", "-a", "ada", "--json", home=fresh)
    assert sorted(m["content"] for m in json.loads(listed.stdout)) == ["new", "old"]
