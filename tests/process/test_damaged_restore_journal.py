"""A restore's journal in the home is read by every command before it runs: one the next command
cannot read (nested past the parser's depth, a key given twice, not an object) is one line and
exit 1 with the fix, never a traceback, and the home and the staging folder stay as they were."""

from __future__ import annotations

import json
import os
import time

import pytest
from runner import arcana as ok
from runner import keyword_only
from runner import run_arcana as arcana

from memory.home import Home

DAMAGED = {
    "nested": b'{"source": "/b", "trash": "t", "names": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "a key twice": b'{"source": "/b", "trash": "t", "names": ["note.txt"], "names": ["agents"]}',
    "a list": b'["source", "trash", "names"]',
}


def _home_with_a_killed_restore(root, journal: bytes):
    """A home, and beside it a killed restore's staging folder (its lock file gone, long ago) whose
    copy holds one file and whose journal is ``journal``."""
    home = Home(root)
    keyword_only(home)
    ok("remember", "kept through it all", "--agent", "ada", home=root)
    staging = root / ".restore-1-1.partial"
    (staging / "home").mkdir(parents=True)
    (staging / "home" / "note.txt").write_text("from the backup\n")
    (staging / "journal.json").write_bytes(journal)
    long_ago = time.time() - 3600
    os.utime(staging, (long_ago, long_ago))
    return staging


def _tree(root):
    return sorted((str(p.relative_to(root)), p.read_bytes() if p.is_file() else None)
                  for p in root.rglob("*") if "locks" not in p.parts)


def test_a_readable_journal_is_finished(tmp_path):
    """The positive control: the same staging folder with a journal naming its copy."""
    root = tmp_path / "home"
    _home_with_a_killed_restore(root, json.dumps({"source": "/b", "trash": "pre-restore-1", "names": ["note.txt"]}).encode())
    done = arcana("agent", "list", home=root)
    assert done.returncode == 0 and "finished a restore from /b" in done.stderr, done.stderr
    assert (root / "note.txt").read_text() == "from the backup\n"


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_journal_is_one_line_and_touches_nothing(tmp_path, case):
    root = tmp_path / "home"
    staging = _home_with_a_killed_restore(root, DAMAGED[case])
    before = _tree(root)
    refused = arcana("agent", "list", home=root)
    assert refused.returncode == 1, (refused.returncode, refused.stderr)
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith(f"arcana: error: {staging / 'journal.json'} is unreadable (") and f"move {staging} out of" in line
    assert _tree(root) == before  # nothing moved, nothing lost
