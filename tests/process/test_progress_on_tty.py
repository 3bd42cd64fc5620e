"""`doctor`, `migrate up`, `consolidate` and `prune` show a progress bar on a terminal, and only there (issue 26).

Their slow step grows with the stores (a database's ``quick_check``, a
migration's copy aside, consolidation reading every current row, prune
reading every row to rank it and archiving a window at a time), so a user at a terminal
sees it move. Real processes:
stderr on a pseudo-terminal, as a user's shell has it, against the same
command with stderr piped, where no bar may appear.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess

import pytest
from runner import ARCANA, arcana, run_arcana

BARS = {("doctor",): b"checking databases", ("migrate", "up"): b"migrating databases",
        ("consolidate", "--agent", "a"): b"a: consolidating",
        ("prune", "--agent", "a", "--max-entries", "1"): b"a: pruning"}


def _on_tty(env: dict, *args: str) -> tuple[int, bytes]:
    """Run ``arcana ARGS`` with stderr on a pseudo-terminal; (exit code, everything it drew there)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*ARCANA, *args], env=env, stdout=subprocess.DEVNULL, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    drawn = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed its end
                    break
                if not chunk:
                    break
                drawn += chunk
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=60), drawn
    finally:
        os.close(master)


@pytest.mark.parametrize("args", list(BARS), ids=" ".join)
def test_the_bar_is_drawn_on_a_terminal_and_not_when_piped(no_embedder, args):
    arcana("remember", "the ferry leaves at nine", "--agent", "a", home=no_embedder)
    env = {**os.environ, "ARCANA_HOME": str(no_embedder.root), "TERM": "xterm", "COLUMNS": "100"}
    code, drawn = _on_tty(env, *args)
    assert code == 0, drawn.decode(errors="replace")
    assert BARS[args] in drawn, drawn.decode(errors="replace")  # positive control: the bar on a terminal
    piped = run_arcana(*args, home=no_embedder)
    assert piped.returncode == 0, piped.stderr
    assert BARS[args].decode() not in piped.stderr  # and never in a pipe (a script's log)
    quiet_code, quiet = _on_tty(env, "--quiet", *args)
    assert quiet_code == 0 and BARS[args] not in quiet  # nor under --quiet on a terminal


@pytest.mark.parametrize(("answer", "code"), [(b"n\n", 1), (b"y\n", 0)])
def test_a_prompt_answered_on_a_terminal(no_embedder, answer, code):
    """A destructive action asks on a terminal: declined, it exits 1 (man/exit-codes.md) and the memory
    is still there; accepted (the control), it is purged and exits 0."""
    import json

    memory_id = json.loads(arcana("remember", "the ferry leaves at nine", "--agent", "a", "--json", home=no_embedder))["id"]
    env = {**os.environ, "ARCANA_HOME": str(no_embedder.root), "TERM": "xterm"}
    master, slave = pty.openpty()
    proc = subprocess.Popen([*ARCANA, "memory", "purge", memory_id, "--agent", "a"], env=env, stdin=slave,
                            stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    try:
        asked = b""
        while b"?" not in asked:  # the prompt, on the terminal
            ready, _, _ = select.select([master], [], [], 30)
            assert ready, asked
            asked += os.read(master, 4096)
        os.write(master, answer)
        assert proc.wait(timeout=60) == code
    finally:
        os.close(master)
    listed = json.loads(arcana("memory", "list", "--agent", "a", "--json", home=no_embedder))
    assert [m["id"] for m in listed] == ([memory_id] if code else [])


def test_restore_and_backup_verify_draw_a_bar_on_a_terminal(no_embedder, tmp_path):
    """Both read every file of a backup (checksums, each database's integrity check; a restore then copies
    and checks each again): as long as the backup that draws a bar, and they drew none."""
    arcana("remember", "the ferry leaves at nine", "--agent", "a", home=no_embedder)
    arcana("backup", str(tmp_path / "backups"), home=no_embedder)
    env = {**os.environ, "ARCANA_HOME": str(no_embedder.root), "TERM": "xterm", "COLUMNS": "100"}
    for args, bar in ((("backup", "--verify", str(tmp_path / "backups")), b"verifying"),
                      (("restore", str(tmp_path / "backups"), "--force"), b"restoring")):
        code, drawn = _on_tty(env, *args)
        assert code == 0 and bar in drawn, drawn.decode(errors="replace")
        piped = run_arcana(*args, home=no_embedder)
        assert piped.returncode == 0 and bar.decode() not in piped.stderr, piped.stderr  # never in a pipe
        quiet_code, quiet = _on_tty(env, "--quiet", *args)
        assert quiet_code == 0 and bar not in quiet  # nor under --quiet
    assert "the ferry" in arcana("recall", "ferry", "--agent", "a", home=no_embedder)  # the restores restored
