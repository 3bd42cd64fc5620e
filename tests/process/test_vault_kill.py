"""A first embedded vault index killed half-way keeps its work (issue 9, item 6).

Real processes: `arcana vault index` runs with stderr on a pseudo-terminal, so
its progress bar shows how far it got, exactly as a user sees it; at half-way
it gets SIGKILL, and the rerun's own report says how many notes it embedded.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

from memory.vaults.indexer import commit_windows

NOTES = 128
_PROGRESS = re.compile(rb"(\d+)/%d" % NOTES)


def _run(env, *args):
    return subprocess.run([sys.executable, "-m", "arcana_cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def _kill_at_half_way(env) -> int:
    """Start the index, SIGKILL it once its progress bar shows half the notes; return the count shown."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "vault", "index", "kb"], env=env,
                            stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    seen, buffer, deadline = 0, b"", time.monotonic() + 240
    try:
        while seen < NOTES // 2 and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    buffer = (buffer + os.read(master, 4096))[-4096:]
                except OSError:
                    break
                seen = max([seen, *(int(m) for m in _PROGRESS.findall(buffer))])
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        os.close(master)
    assert proc.returncode == -signal.SIGKILL, "the index finished before it could be killed half-way"
    return seen


def test_a_rerun_after_a_kill_half_way_embeds_at_most_60_percent(arcana_home, offline_embedder, tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    for i in range(NOTES):
        (folder / f"note-{i:03}.md").write_text(f"# Note {i}\n\nFact {i}: the heron in pond {i % 17} ate {i} fish.\n")
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root), "TERM": "xterm", "COLUMNS": "100"}
    assert _run(env, "vault", "add", str(folder), "--name", "kb").returncode == 0

    shown = _kill_at_half_way(env)
    assert NOTES // 2 <= shown < NOTES

    rerun = _run(env, "vault", "index", "kb", "--json")
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert 0 < report["embedded"] <= 0.6 * NOTES, report  # the killed run's finished windows were kept
    status = json.loads(_run(env, "embeddings", "status", "--json").stdout)
    [vault_db] = [d for d in status["databases"] if d["database"] == "vaults/kb.db"]
    assert (vault_db["rows"], vault_db["embedded"], vault_db["missing"]) == (NOTES, NOTES, 0)
    assert report["links"]["notes_scanned"] == NOTES  # the manifest holds every note after the rerun
    again = json.loads(_run(env, "vault", "index", "kb", "--keyword-only", "--json").stdout)
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, NOTES)  # nothing left to redo


def test_commit_windows_cover_every_note_once_in_bounded_windows():
    for count in (0, 1, 15, 16, 200, 1024, 5000, 40_000):
        windows = commit_windows(count)
        assert [i for w in windows for i in w] == list(range(count))
        assert all(len(w) <= max(16, count // 16) and len(w) <= 1024 for w in windows)


LINKED = 1200


def _kill_after_the_last_window(env) -> None:
    """Index one new note and SIGKILL the run just after its window committed, while the vault's links
    (about 180,000 here, some seconds of work) are being rebuilt."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "vault", "index", "linked", "--keyword-only"],
                            env=env, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    buffer, deadline = b"", time.monotonic() + 120
    try:
        while b"1/1" not in buffer and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    buffer = (buffer + os.read(master, 4096))[-4096:]
                except OSError:
                    break
        time.sleep(0.3)  # the window's manifest records commit right after its rows
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        os.close(master)
    assert proc.returncode == -signal.SIGKILL, "the index finished before it could be killed"


def test_a_pass_killed_before_its_links_leaves_no_link_unresolved_for_good(arcana_home, tmp_path):
    """A note added, its pass killed after the note was stored but before links were rebuilt: the next
    pass saw the note as unchanged and the whole vault's [[Target]] links stayed dangling forever."""
    folder = tmp_path / "linked"
    folder.mkdir()
    for i in range(LINKED):
        others = " ".join(f"[[note-{(i * 7 + j) % LINKED:04}]]" for j in range(1, 150))
        (folder / f"note-{i:04}.md").write_text(f"# Note {i}\n\nheron {i} {others} and [[Target]]\n")
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root), "TERM": "xterm", "COLUMNS": "100"}
    assert _run(env, "vault", "add", str(folder), "--name", "linked").returncode == 0
    first = json.loads(_run(env, "vault", "index", "linked", "--keyword-only", "--json").stdout)
    assert first["links"]["dangling"] == LINKED  # every [[Target]], before Target exists
    (folder / "Target.md").write_text("The target links back to [[note-0001]].\n")

    _kill_after_the_last_window(env)
    import sqlite3

    with sqlite3.connect(arcana_home.root / "vaults" / "linked.db") as raw:
        recorded = raw.execute("SELECT count(*) FROM vault_files WHERE rel_path = 'Target.md'").fetchone()[0]
    assert recorded == 1, "the kill landed before the new note's window committed: nothing to test"

    rerun = json.loads(_run(env, "vault", "index", "linked", "--keyword-only", "--json").stdout)
    assert (rerun["added"], rerun["unchanged"]) == (0, LINKED + 1)  # the killed pass kept the note
    assert (rerun["links"]["dangling"], rerun["links"]["links_found"]) == (0, first["links"]["links_found"] + 1)
    target = json.loads(_run(env, "vault", "links", "Target", "--json").stdout)
    assert (len(target["backlinks"]), target["outgoing"]) == (LINKED, ["note-0001.md"])
    control = json.loads(_run(env, "vault", "links", "note-0002", "--json").stdout)
    assert "Target.md" in control["outgoing"] and len(control["outgoing"]) == 150  # the old links are all there
