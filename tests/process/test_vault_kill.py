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
