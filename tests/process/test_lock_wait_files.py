"""`--lock-wait` bounds the waits for Arcana's own lock files too, not only a store's busy timeout: an
agent delete, a restore or a backup waited 30 s for an agent's lock, a reconciled `remember` or a
`vault index` 5 minutes, whatever the command was told. Each case: a real second process holds the
lock; with `--lock-wait 0.5` the command fails fast with exit 75 in one line naming --lock-wait, and
nothing changed; once the lock is released the same command goes through (the positive control)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from runner import ARCANA, arcana, flock_holder, keyword_only, run_arcana


def _live(home) -> list[str]:
    return sorted(m["content"] for m in json.loads(arcana("memory", "list", "-a", "ada", "--json", home=home)))


@dataclass
class Case:
    args: list[str]
    lock: Path
    unchanged: Callable[[], bool]  # what the command would change is as it was
    done: Callable[[], bool]  # the command's change is made
    stdin: str | None = None


def _ada(home) -> str:
    keyword_only(home)
    ada = json.loads(arcana("agent", "create", "ada", "--json", home=home))["id"]
    arcana("remember", "Tea is served at four.", "-a", "ada", "-i", "0.9", home=home)
    arcana("remember", "The kettle is blue.", "-a", "ada", "-i", "0.1", home=home)
    return ada


def _agent_delete(home, tmp_path) -> Case:
    ada = _ada(home)
    listed = lambda: "ada" in arcana("agent", "list", home=home)  # noqa: E731
    return Case(["agent", "delete", "ada", "--yes"], home.locks_dir / f"agent-{ada}.lock",  # a write in flight
                listed, lambda: not listed())


def _backup(home, tmp_path) -> Case:
    ada = _ada(home)
    dest = tmp_path / "backups"
    made = lambda: dest.is_dir() and any(dest.iterdir())  # noqa: E731
    return Case(["backup", str(dest)], home.locks_dir / f"agent-{ada}.lock",  # a deletion in flight
                lambda: not made(), made)


def _restore(home, tmp_path) -> Case:
    ada = _ada(home)
    arcana("backup", str(tmp_path / "backups"), home=home)
    arcana("remember", "The garden gate sticks.", "-a", "ada", home=home)
    later = lambda: "The garden gate sticks." in _live(home)  # noqa: E731
    return Case(["restore", str(tmp_path / "backups"), "--force"], home.locks_dir / f"agent-{ada}.lock",
                later, lambda: not later())


def _remember(home, tmp_path) -> Case:
    ada = _ada(home)
    stored = lambda: "The garden gate sticks." in _live(home)  # noqa: E731
    return Case(["remember", "The garden gate sticks.", "-a", "ada"],
                home.locks_dir / f"agent-{ada}-decide.lock",  # another process's write is deciding
                lambda: not stored(), stored)


def _vault_index(home, tmp_path) -> Case:
    keyword_only(home)
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tea.md").write_text("# Tea\n\nTea is served at four.\n")
    arcana("vault", "add", str(folder), "--name", "kb", home=home)
    index = home.vault_db("kb")
    return Case(["vault", "index", "kb"], home.locks_dir / "vault-kb.lock",  # another index run
                lambda: not index.exists(), index.exists)


def _prune(home, tmp_path) -> Case:
    _ada(home)
    kept = lambda: "The kettle is blue." in _live(home)  # noqa: E731
    return Case(["prune", "--agent", "ada", "--min-importance", "0.5"], home.locks_dir / "prune.lock",
                kept, lambda: _live(home) == ["Tea is served at four."])


def _config_set(home, tmp_path) -> Case:
    keyword_only(home)
    limit = lambda: arcana("config", "get", "recall.limit", home=home).strip()  # noqa: E731
    before = limit()
    return Case(["config", "set", "recall.limit", "7"], home.locks_dir / "config.lock",  # another change of it
                lambda: limit() == before, lambda: limit() == "7")


def _agent_create(home, tmp_path) -> Case:
    keyword_only(home)
    listed = lambda: "ada" in arcana("agent", "list", home=home)  # noqa: E731
    return Case(["agent", "create", "ada"], home.locks_dir / "agents.lock",  # another process naming an agent
                lambda: not listed(), listed)


def _host_save(home, tmp_path) -> Case:
    ada = _ada(home)
    transcript = tmp_path / "session.jsonl"
    said = {"type": "user", "message": {"role": "user", "content": "Please remember that the release branch is named heron-2."},
            "sessionId": "s-1", "cwd": str(tmp_path), "uuid": "u-1", "timestamp": "2026-12-01T10:00:00Z"}
    transcript.write_text(json.dumps(said) + "\n")
    hook = {"session_id": "s-1", "transcript_path": str(transcript), "hook_event_name": "PreCompact", "cwd": str(tmp_path)}
    stored = lambda: any("heron-2" in m for m in _live(home))  # noqa: E731
    return Case(["host", "save", "claude-code", "--agent", "ada"], home.locks_dir / f"host-save-{ada}.lock",
                lambda: not stored(), stored, stdin=json.dumps(hook))  # another hook's save of the agent


CASES = {"agent delete": _agent_delete, "backup": _backup, "restore --force": _restore,
         "remember": _remember, "vault index": _vault_index, "prune": _prune,
         "config set": _config_set, "agent create": _agent_create, "host save": _host_save}


@pytest.mark.parametrize("name", list(CASES))
def test_a_lock_wait_given_bounds_the_wait_for_an_arcana_lock_file(arcana_home, tmp_path, name):
    case = CASES[name](arcana_home, tmp_path)
    holder = flock_holder(case.lock)
    try:
        started = time.monotonic()
        done = run_arcana("--lock-wait", "0.5", *case.args, home=arcana_home, stdin=case.stdin)
        took = time.monotonic() - started
        assert done.returncode == 75 and done.stderr.count("\n") == 1, done.stderr
        assert "--lock-wait" in done.stderr and str(case.lock) in done.stderr, done.stderr
        assert took < 10, took  # each default (30 s, 5 min) would still be waiting
    finally:
        holder.kill()
        holder.wait()
    assert case.unchanged()  # looked at once the lock is free: a look at an agent's store takes its lock too
    done = run_arcana("--lock-wait", "0.5", *case.args, home=arcana_home, stdin=case.stdin)
    assert done.returncode == 0, done.stderr
    assert case.done()


def test_a_lock_wait_given_lets_a_second_prune_wait_for_the_first(arcana_home, tmp_path):
    """Without a lock wait a second prune fails at once (as before); given one, it waits for the first."""
    case = _prune(arcana_home, tmp_path)
    holder = flock_holder(case.lock)
    try:
        done = run_arcana(*case.args, home=arcana_home)
        assert done.returncode == 75 and "another prune is running" in done.stderr, done.stderr
        waiter = subprocess.Popen([*ARCANA, "--lock-wait", "60", *case.args], text=True, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env={**os.environ, "ARCANA_HOME": str(arcana_home.root)})
        time.sleep(1.5)
        assert waiter.poll() is None  # waiting for the first prune
    finally:
        holder.kill()
        holder.wait()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert case.done()
