"""A home on a disk that is full: every command that must write says so in one line, exit 5 (a storage
problem, as SQLite's own full-disk errors are), and loses nothing; once space is freed the same home
works. A real tmpfs of 1 MiB, mounted for the test (root only; skipped where it cannot be)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from memory.home import Home
from runner import keyword_only, run_arcana


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True
    ).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_is_exit_5_naming_it_and_loses_nothing(small_disk):
    home = small_disk / "home"
    env = {"ARCANA_HOME": str(home)}
    keyword_only(Home.resolve(home))
    assert run_arcana("agent", "create", "ada", env=env).returncode == 0
    assert run_arcana("remember", "Tea is served at four.", "-a", "ada", env=env).returncode == 0
    config = (home / "config.json").read_bytes()
    ada = json.loads(run_arcana("agent", "show", "ada", "--json", env=env).stdout)["id"]
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as out:  # fill the disk to its last block
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:
            pass

    for args in (["config", "set", "recall.limit", "7"], ["agent", "create", "zed"], ["remember", "The kettle is blue.", "-a", "ada"]):
        done = run_arcana(*args, env=env)
        assert done.returncode == 5, (args, done.stderr)  # config set and agent create said 1, 'unexpected error'
        assert done.stderr.count("\n") == 1 and "disk is full" in done.stderr and "free space" in done.stderr, done.stderr
    assert (home / "config.json").read_bytes() == config
    # The failed agent create left nothing behind: it left an empty agent's folder holding a temp file.
    assert [p.name for p in (home / "agents").iterdir()] == [ada] and not list(home.rglob("*.tmp"))

    filler.unlink()  # space again: the same home, nothing lost
    assert run_arcana("remember", "The kettle is blue.", "-a", "ada", env=env).returncode == 0
    done = run_arcana("memory", "list", "-a", "ada", "--json", env=env)
    assert sorted(m["content"] for m in json.loads(done.stdout)) == ["Tea is served at four.", "The kettle is blue."]
