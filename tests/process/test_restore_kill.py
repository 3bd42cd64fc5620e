"""`arcana restore --force` and `arcana backup` killed at any moment lose nothing and leave no mixed home.

Real processes get SIGKILL. Kill points in the copy are found by polling the
staging folder (a 48 MiB file takes long enough to copy); the swap is a few
renames, too fast to catch from outside, so there the process runs under a
small wrapper that patches ``Path.rename`` / ``os.replace`` in that process
only and SIGKILLs itself just before or after the Nth one (nothing in Arcana
knows about it). After each kill the home on disk is checked, then the next
command (`backup --verify`, which reads no store) must finish or undo the
restore and say so on stderr: the home is then wholly the old one or wholly
the backup's, and the old one is whole in the trash.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from runner import ARCANA, keyword_only
from runner import arcana as ok
from runner import run_arcana as arcana

BLOB = 48  # MiB

KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path

    what, nth, when = os.environ["KILL_AT"].split(":")
    nth, seen = int(nth), [0]

    def at_kill_point(real, counts):
        def call(*args, **kw):
            hit = counts(*args)
            if hit:
                seen[0] += 1
            if hit and seen[0] == nth and when == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            result = real(*args, **kw)
            if hit and seen[0] == nth and when == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return result
        return call

    if what == "swap-rename":  # a rename of the swap: a home entry to the trash, or a staged one into the home
        Path.rename = at_kill_point(Path.rename, lambda src, dst: "/trash/" in str(dst) or ".restore-" in str(src))
    elif what == "journal":  # the restore's commit point
        os.replace = at_kill_point(os.replace, lambda src, dst: str(dst).endswith("journal.json"))
    elif what == "backup-rename":  # a finished backup's folder taking its final name
        Path.rename = at_kill_point(Path.rename, lambda src, dst: str(src).endswith(".partial"))
    sys.argv = ["arcana", *sys.argv[1:]]
    from arcana_cli.main import main
    main()
    """
)


def killed_at(point: str, *args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ARCANA_HOME": str(home), "KILL_AT": point}
    return subprocess.run([sys.executable, "-c", KILLER, *args], env=env, capture_output=True, text=True, timeout=120)


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` -> its sha256, leaving out the trash, restore staging folders and the
    lock files (no backup holds them, and a restore leaves them where processes wait on them)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d not in ("trash", "locks") and not d.startswith(".restore-")]
        for name in filenames:
            path = Path(dirpath) / name
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def backup_content(folder: Path) -> dict[str, str]:
    return {f["path"]: f["sha256"] for f in json.loads((folder / "manifest.json").read_text())["files"]}


def next_command(home: Path, backup: Path) -> subprocess.CompletedProcess:
    """The command after the kill: one that reads no store, so the home it leaves is the recovery's."""
    done = arcana("backup", "--verify", str(backup), home=home)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    """An old home (three agents, a 48 MiB session file) and a backup of a different home to restore over it."""
    base = tmp_path_factory.mktemp("restore-kill")
    from memory.home import Home

    made = {}
    for tag in ("old", "new"):
        home = Home(base / f"{tag}-home")
        keyword_only(home)
        for name in ("ada", "bob", "cy"):
            ok("remember", f"{name} wrote this in the {tag} home", "--agent", name, home=home.root)
        with (home.root / "sessions-archive.bin").open("wb") as handle:
            for _ in range(BLOB):
                handle.write(os.urandom(1 << 20))
        made[tag] = home.root
    (made["old"] / "only-in-the-old-home.txt").write_text("kept in the trash\n")
    folder = Path(json.loads(ok("backup", str(base / "backups"), "--json", home=made["new"]))["path"])
    return made["old"], folder, base


@pytest.fixture
def old_home(homes, tmp_path):
    """A fresh copy of the old home for one kill, and its content."""
    source, _, _ = homes
    home = tmp_path / "home"
    shutil.copytree(source, home, symlinks=True)
    return home, tree(home)


def assert_wholly_new(home: Path, backup: Path, old: dict[str, str]) -> None:
    assert tree(home) == backup_content(backup)  # every file the backup's, byte for byte, and no other
    [trash] = (home / "trash").glob("pre-restore-*")
    assert tree(trash) == old  # the old home, whole
    assert not list(home.glob(".restore-*"))


def assert_wholly_old(home: Path, old: dict[str, str]) -> None:
    assert tree(home) == old
    assert not (home / "trash").exists() and not list(home.glob(".restore-*"))


def test_an_uninterrupted_restore_gives_exactly_the_backup(homes, old_home):
    """Positive control: the same run, not killed."""
    home, old = old_home
    _, backup, _ = homes
    done = arcana("restore", str(backup), "--force", home=home)
    assert done.returncode == 0, done.stderr
    assert_wholly_new(home, backup, old)
    after = next_command(home, backup)
    assert "interrupted" not in after.stderr


def test_killed_while_copying_the_home_is_untouched_and_the_next_command_removes_the_copy(homes, old_home):
    home, old = old_home
    _, backup, _ = homes
    proc = subprocess.Popen([*ARCANA, "restore", str(backup), "--force"], env={**os.environ, "ARCANA_HOME": str(home)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not any(p.stat().st_size > (8 << 20) for p in home.glob(".restore-*/home/sessions-archive.bin")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the copy never got under way"
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert tree(home) == old  # on disk: the old home, and an unfinished copy beside it
    after = next_command(home, backup)
    assert after.stderr.startswith("arcana: removed ")  # a notice, not an error: the command went on and exited 0
    assert "interrupted before it changed anything: the home is as it was" in after.stderr
    assert_wholly_old(home, old)
    assert "interrupted" not in next_command(home, backup).stderr  # said once


def test_killed_with_the_copy_complete_but_not_committed_the_home_is_untouched(homes, old_home):
    home, old = old_home
    _, backup, _ = homes
    assert killed_at("journal:1:before", "restore", str(backup), "--force", home=home).returncode == -signal.SIGKILL
    assert [p.name for p in home.glob(".restore-*/home/sessions-archive.bin")]  # the whole copy was there
    after = next_command(home, backup)
    assert "the home is as it was" in after.stderr
    assert_wholly_old(home, old)


def test_killed_once_committed_the_next_command_finishes_the_restore(homes, old_home):
    home, old = old_home
    _, backup, _ = homes
    assert killed_at("journal:1:after", "restore", str(backup), "--force", home=home).returncode == -signal.SIGKILL
    assert tree(home) == old  # not one rename yet
    after = next_command(home, backup)
    assert after.stderr.startswith(f"arcana: finished a restore from {backup} that was interrupted")
    assert_wholly_new(home, backup, old)


def test_killed_at_every_rename_of_the_swap_the_next_command_finishes_it(homes, tmp_path):
    """Before and after each rename in turn, until the restore runs to its end without meeting the kill."""
    source, backup, _ = homes
    old = tree(source)
    finished_uninterrupted = False
    for nth in range(1, 40):
        for when in ("before", "after"):
            home = tmp_path / f"home-{nth}-{when}"
            shutil.copytree(source, home, symlinks=True)
            run = killed_at(f"swap-rename:{nth}:{when}", "restore", str(backup), "--force", home=home)
            if run.returncode == 0:
                finished_uninterrupted = True
                assert_wholly_new(home, backup, old)
                continue
            assert run.returncode == -signal.SIGKILL, run.stderr
            after = next_command(home, backup)
            assert "that was interrupted: the home now holds that backup" in after.stderr, (nth, when, after.stderr)
            assert_wholly_new(home, backup, old)
            shutil.rmtree(home)
        if finished_uninterrupted:
            break
    assert finished_uninterrupted and nth > 5, nth  # every rename of the swap was a kill point


def test_restore_run_again_after_a_kill_finishes_the_first_then_restores(homes, old_home):
    """The kill's restore is finished first (the old home to the trash), then the new one runs over it."""
    home, old = old_home
    _, backup, _ = homes
    assert killed_at("swap-rename:2:after", "restore", str(backup), "--force", home=home).returncode == -signal.SIGKILL
    time.sleep(1.1)  # a new stamp for the second restore's trash folder
    again = arcana("restore", str(backup), "--force", home=home)
    assert again.returncode == 0, again.stderr
    assert "that was interrupted" in again.stderr
    assert tree(home) == backup_content(backup)
    trashed = sorted((home / "trash").glob("pre-restore-*"))
    assert len(trashed) == 2 and tree(trashed[0]) == old  # the first restore's: the old home, whole


def test_a_killed_backup_is_never_taken_for_a_good_one(homes, tmp_path):
    """Killed while copying, or at its very last step (its manifest written, its rename not done): `backup
    --verify DEST` and `restore DEST` use the last finished backup, and the `.partial` is refused by name."""
    source, _, _ = homes
    dest = tmp_path / "backups"
    good = Path(json.loads(ok("backup", str(dest), "--json", home=source))["path"])
    time.sleep(1.1)
    proc = subprocess.Popen([*ARCANA, "backup", str(dest)], env={**os.environ, "ARCANA_HOME": str(source)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not any(p.stat().st_size > (8 << 20) for p in dest.glob("*.partial/sessions-archive.bin")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the backup never got under way"
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    [copying] = dest.glob("*.partial")
    time.sleep(1.1)
    assert killed_at("backup-rename:1:before", "backup", str(dest), home=source).returncode == -signal.SIGKILL
    [last_step] = [p for p in dest.glob("*.partial") if p != copying]
    assert (last_step / "manifest.json").is_file()  # complete but for its name

    verified = json.loads(ok("backup", "--verify", str(dest), "--json", home=source))
    assert verified["path"] == str(good) and verified["ok"]
    for partial in (copying, last_step):
        refused = arcana("backup", "--verify", str(partial), home=source)
        assert refused.returncode == 3 and "unfinished backup" in refused.stderr, refused.stderr
        refused = arcana("restore", str(partial), home=tmp_path / "fresh")
        assert refused.returncode == 3 and "unfinished backup" in refused.stderr, refused.stderr
    restored = arcana("restore", str(dest), "--json", home=tmp_path / "fresh")
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["source"] == str(good)
    assert tree(tmp_path / "fresh") == backup_content(good)


def test_a_backup_listing_a_staging_folder_is_refused(homes, tmp_path):
    """Restored, a `.restore-*.partial/journal.json` would make the next command swap in whatever it names."""
    _, backup, _ = homes
    tampered = tmp_path / "tampered"
    shutil.copytree(backup, tampered)
    data = b'{"source": "x", "trash": "t", "names": ["config.json"]}'
    planted = tampered / ".restore-1-1.partial" / "journal.json"
    planted.parent.mkdir()
    planted.write_bytes(data)
    body = json.loads((tampered / "manifest.json").read_text())
    body["files"].append({"path": ".restore-1-1.partial/journal.json", "kind": "file", "size": len(data),
                          "sha256": hashlib.sha256(data).hexdigest()})
    (tampered / "manifest.json").write_text(json.dumps(body))
    refused = arcana("restore", str(tampered), home=tmp_path / "fresh")
    assert refused.returncode == 1 and "names a place a backup never holds" in refused.stderr, refused.stderr
    assert not (tmp_path / "fresh").exists() or not any((tmp_path / "fresh").iterdir())
    control = arcana("restore", str(backup), home=tmp_path / "fresh")  # the untampered backup restores
    assert control.returncode == 0, control.stderr
