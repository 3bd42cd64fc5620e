"""`arcana vault watch` as a real subprocess over a real folder: it follows edits, survives the folder vanishing."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from memory.markdown.notes import note_id
from memory.vaults.registry import VaultRegistry


class Watch:
    """The watch subprocess, with its stdout and stderr lines collected on threads."""

    def __init__(self, home, *args: str):
        env = {**os.environ, "ARCANA_HOME": str(home.root)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "arcana_cli.main", "vault", "watch", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL,
        )
        self.lines: queue.Queue[str] = queue.Queue()  # stdout: the passes (or every event, --json)
        self.errors: queue.Queue[str] = queue.Queue()  # stderr: what went wrong or changed the home
        self._pumps = [threading.Thread(target=self._pump, args=pipe, daemon=True)
                       for pipe in ((self.proc.stdout, self.lines), (self.proc.stderr, self.errors))]
        for pump in self._pumps:
            pump.start()

    @staticmethod
    def _pump(pipe, lines: queue.Queue) -> None:
        for line in pipe:
            lines.put(line.rstrip("\n"))

    def stderr(self) -> str:
        """Everything the watch said on stderr, once it has ended."""
        for pump in self._pumps:
            pump.join(timeout=10)
        return "\n".join(self.errors.queue)

    def expect(self, needle: str, timeout: float = 20.0, *, stderr: bool = False) -> str:
        lines = self.errors if stderr else self.lines
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                assert self.proc.poll() is None, "\n".join(self.errors.queue)
                continue
            if needle in line:
                return line
        raise AssertionError(f"no line containing {needle!r} within {timeout}s")

    def stop(self, sig=signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def indexed_ids(vault) -> set[str]:
    from memory.sqlite.connection import dbapi

    conn = dbapi().connect(str(vault.db_path), timeout=30)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM memories")}
    finally:
        conn.close()


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(home) -> dict:
    env = {**os.environ, "ARCANA_HOME": str(home.root)}
    out = subprocess.run(
        [sys.executable, "-m", "arcana_cli.main", "vault", "status", "notes", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def vault(make_vault, arcana_home):
    root = make_vault({"a.md": "alpha links [[b]]", "b.md": "beta", ".obsidian/workspace.json": "{}"}, name="notes")
    arcana_home.ensure()
    return VaultRegistry(arcana_home).add(root, "notes")


def test_watch_follows_edits_adds_renames_deletes_and_a_vanishing_folder(vault, arcana_home, tree_digest, tmp_path):
    watch = Watch(arcana_home, "notes", "--debounce", "200", "--keyword-only")
    try:
        watch.expect("catch-up → +2")
        assert indexed_ids(vault) == {note_id("a.md"), note_id("b.md")}
        running = status(arcana_home)
        assert running["watch"]["running"] and running["watch"]["pid"] == watch.proc.pid

        time.sleep(1.0)
        idle_start = cpu_seconds(watch.proc.pid)
        time.sleep(3.0)
        assert cpu_seconds(watch.proc.pid) - idle_start < 0.3  # near-zero CPU when idle

        (vault.root / ".obsidian" / "workspace.json").write_text('{"changed": true}')  # ignored churn
        (vault.root / "c.md").write_text("gamma")
        line = watch.expect("+1 ~0 -0")
        assert "change" in line
        (vault.root / "a.md").write_text("alpha edited")
        watch.expect("+0 ~1 -0")
        (vault.root / "b.md").rename(vault.root / "b2.md")
        watch.expect("-1")
        wait_for(lambda: indexed_ids(vault) == {note_id(p) for p in ("a.md", "b2.md", "c.md")})
        (vault.root / "c.md").unlink()
        watch.expect("-1")
        wait_for(lambda: indexed_ids(vault) == {note_id("a.md"), note_id("b2.md")})
        seen = status(arcana_home)
        assert seen["watch"]["last_event_at"] and seen["last_indexed_at"] >= seen["watch"]["last_event_at"]

        digest = tree_digest(vault.root)
        aside = tmp_path / "aside"
        vault.root.rename(aside)
        watch.expect("is missing", stderr=True)
        assert indexed_ids(vault) == {note_id("a.md"), note_id("b2.md")}  # the index is kept meanwhile
        (aside / "d.md").write_text("delta, written while away")
        digest = tree_digest(aside)
        aside.rename(vault.root)
        watch.expect("catch-up → +1")
        (vault.root / "e.md").write_text("epsilon after the return")
        watch.expect("+1 ~0 -0")
        wait_for(lambda: note_id("e.md") in indexed_ids(vault))
        (vault.root / "e.md").unlink()
        watch.expect("-1")
        assert tree_digest(vault.root) == digest
    finally:
        code = watch.stop(signal.SIGTERM)
    assert code == 0
    stopped = status(arcana_home)
    assert stopped["watch"]["running"] is False and stopped["watch"]["stopped_at"]


def test_watch_exits_cleanly_on_ctrl_c_and_rejects_bad_usage(vault, arcana_home):
    watch = Watch(arcana_home, "--all", "--debounce", "100", "--keyword-only", "--json")
    event = json.loads(watch.expect('"event": "index"'))
    assert (event["vault"], event["changes"], event["report"]["added"]) == ("notes", None, 2)
    assert watch.stop(signal.SIGINT) == 0
    assert "Traceback" not in watch.stderr()
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    both = subprocess.run(
        [sys.executable, "-m", "arcana_cli.main", "vault", "watch", "notes", "--all"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert both.returncode == 2


def test_cron_index_while_a_watch_runs_never_errors(vault, arcana_home):
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    watch = Watch(arcana_home, "notes", "--debounce", "100", "--keyword-only")
    try:
        watch.expect("catch-up")
        crons = []
        for i in range(6):
            (vault.root / f"n{i}.md").write_text(f"note {i} links [[a]]")
            crons.append(
                subprocess.Popen(
                    [sys.executable, "-m", "arcana_cli.main", "vault", "index", "notes", "--keyword-only", "--json"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                )
            )
            time.sleep(0.15)
        results = [(c.wait(timeout=120), c.stderr.read()) for c in crons]
        assert [code for code, _ in results] == [0] * 6, results
        wait_for(lambda: indexed_ids(vault) >= {note_id(f"n{i}.md") for i in range(6)})
        assert watch.proc.poll() is None  # the watch is still alive
    finally:
        assert watch.stop() == 0
    err = watch.stderr()
    assert "error" not in err.lower() and "watching notes; Ctrl-C to stop" in err


def test_removing_a_watched_vault_ends_its_watch_without_recreating_the_index(vault, arcana_home, tree_digest):
    watch = Watch(arcana_home, "notes", "--debounce", "100", "--keyword-only")
    try:
        watch.expect("catch-up")
        assert vault.db_path.exists()
        env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
        removed = subprocess.run(
            [sys.executable, "-m", "arcana_cli.main", "vault", "remove", "notes", "--yes"],
            capture_output=True, text=True, env=env, timeout=60,
        )
        assert removed.returncode == 0, removed.stderr
        digest = tree_digest(vault.root)
        (vault.root / "late.md").write_text("written after the vault was removed")
        watch.expect("no longer watching", stderr=True)
        assert watch.proc.wait(timeout=15) == 0  # its only vault gone, the watch ends by itself
        assert not vault.db_path.exists() and not vault.state_path.exists()
        assert tree_digest(vault.root) != digest  # positive control: the test's own write is seen
    finally:
        if watch.proc.poll() is None:
            watch.stop()


def test_a_running_watch_follows_an_ignore_set_after_it_started(vault, arcana_home):
    """`config set vaults.NAME.ignore` while a watch runs: its next passes (targeted and full) keep the
    newly excluded notes out, as `vault index` does; before, it indexed them with the globs it started with."""
    from runner import arcana

    (vault.root / "Secret").mkdir()
    (vault.root / "Secret" / "Code.md").write_text("the vault code is 4242")
    watch = Watch(arcana_home, "notes", "--debounce", "100", "--keyword-only")
    try:
        watch.expect("catch-up → +3")
        assert note_id("Secret/Code.md") in indexed_ids(vault)
        arcana("config", "set", "vaults.notes.ignore", "Secret/*", home=arcana_home)
        (vault.root / "Secret" / "Pin.md").write_text("alarm pin 9911")
        (vault.root / "Later.md").write_text("written after the pin")  # the control: still indexed
        wait_for(lambda: note_id("Later.md") in indexed_ids(vault))
        assert note_id("Secret/Pin.md") not in indexed_ids(vault)
        (vault.root / "chart.png").write_bytes(b"\x89PNG")  # an attachment: a full walk
        wait_for(lambda: note_id("Secret/Code.md") not in indexed_ids(vault))
        assert note_id("Later.md") in indexed_ids(vault)
    finally:
        assert watch.stop() == 0


def test_a_watch_moves_a_damaged_state_file_aside_and_says_so(vault, arcana_home):
    """A damaged state file was written over by a starting watch without a word. Positive control:
    the watch then indexes and stamps the rebuilt file as ever."""
    vault.state_path.parent.mkdir(parents=True, exist_ok=True)
    vault.state_path.write_text('{"watch_pid": 1')
    watch = Watch(arcana_home, "notes", "--debounce", "100", "--keyword-only", "--json")
    try:
        told = json.loads(watch.expect('"event": "state_damaged"'))
        (aside,) = [p for p in vault.state_path.parent.iterdir() if p.name.startswith("notes.state.json.damaged-")]
        assert str(aside) in told["detail"] and aside.read_text() == '{"watch_pid": 1'
        watch.expect('"event": "index"')
        assert status(arcana_home)["watch"]["running"] is True
    finally:
        assert watch.stop() == 0


@pytest.mark.parametrize("quiet", [False, True])
def test_a_text_watch_reports_passes_on_stdout_and_trouble_on_stderr(vault, arcana_home, quiet):
    """A text watch printed every line on stdout, a damaged state file's notice too (the manual says
    stderr), and `--quiet` silenced nothing. Now a pass is one line on stdout (none under --quiet, the
    index still follows: control), and what went wrong one line on stderr, --quiet or not."""
    vault.state_path.parent.mkdir(parents=True, exist_ok=True)
    vault.state_path.write_text('{"watch_pid": 1')
    watch = Watch(arcana_home, "notes", "--debounce", "100", "--keyword-only", *["--quiet"] * quiet)
    try:
        time.sleep(3.0)  # the catch-up pass is done and the watch has taken hold
        (vault.root / "c.md").write_text("gamma")
        wait_for(lambda: note_id("c.md") in indexed_ids(vault))
        time.sleep(0.5)  # its line is printed after the pass commits
    finally:
        assert watch.stop() == 0
    err = watch.stderr().splitlines()  # the pumps have read both to their end
    printed = list(watch.lines.queue)
    assert not any("damaged" in line for line in printed), printed
    passes = [line for line in printed if "vault notes: " in line and " → " in line]
    # the new note's pass follows the catch-up; on a loaded machine a pass with nothing new may follow it
    assert (passes == []) if quiet else any("+1 ~0 -0" in line for line in passes[1:]), printed
    assert [line for line in err if "was damaged" in line and "moved it to" in line], err
    assert any("watching notes" in line for line in err) is not quiet
