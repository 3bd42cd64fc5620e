"""Exports to one file that overlap or are killed (hunt 47): the file named by `-o` is only ever a whole export.

Two exports to one file shared its ``.partial``: the second unlinked the
first's and wrote its own there, the first then renamed the second's
unfinished file into place and said done, and the second failed on a missing
file. The partial is now held while written.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from runner import arcana, flock_holder, kill_when, run_arcana

from arcana_cli import exit_codes

pytestmark = pytest.mark.usefixtures("no_embedder")

ROWS = 3000


def _export_lines(path: Path) -> tuple[dict, int]:
    """(header, memory records) of a whole export file."""
    lines = path.read_text().splitlines()
    return json.loads(lines[0]), sum(1 for line in lines[1:] if "memory" in json.loads(line))


def test_an_export_to_a_file_another_export_is_writing_is_refused_and_takes_over_once_it_died(arcana_home, tmp_path):
    arcana("remember", "Deploys happen on Tuesdays", "--agent", "ada")
    arcana("remember", "The cellar key hangs by the door", "--agent", "ada", "--visibility", "hidden")
    out = tmp_path / "out.jsonl"
    out.write_text("an earlier export\n")
    partial = tmp_path / "out.jsonl.partial"
    holder = flock_holder(partial, b"half an export")
    try:
        refused = run_arcana("export", "--agent", "ada", "-o", str(out), "--yes")
        assert refused.returncode == exit_codes.BUSY, refused.stderr
        [line] = refused.stderr.splitlines()
        assert f"another export to {out} is running" in line and str(partial) in line and "try again" in line
        assert out.read_text() == "an earlier export\n"  # nothing renamed into place
        assert partial.read_bytes() == b"half an export"  # the running one's file neither truncated nor removed
    finally:
        holder.send_signal(signal.SIGKILL)  # the other export dies, its partial left behind
        holder.wait()
    # Positive control: with its writer gone, the next export takes the partial over and completes.
    done = run_arcana("export", "--agent", "ada", "-o", str(out), "--yes")
    assert done.returncode == 0, done.stderr
    header, records = _export_lines(out)
    assert header["exported"]["agent"] == "ada" and records == 2
    assert not partial.exists() and oct(out.stat().st_mode & 0o777) == oct(0o600)


def _rows_and_an_earlier_export(tmp_path) -> tuple:
    """ROWS memories for ada, and an earlier file at the export's path: (the path, its partial's path)."""
    source = tmp_path / "lines.jsonl"
    source.write_text("".join(json.dumps({"content": f"crate {i} sits on shelf {i % 97} in hall {i % 13}"}) + "\n"
                              for i in range(ROWS)))
    arcana("remember", "--from", str(source), "--agent", "ada", "--no-reconcile", timeout=600)
    out = tmp_path / "out.jsonl"
    out.write_text("an earlier export\n")
    partial = tmp_path / "out.jsonl.partial"
    return out, partial


def test_a_killed_export_leaves_the_earlier_file_whole_and_a_rerun_completes(arcana_home, tmp_path):
    out, partial = _rows_and_an_earlier_export(tmp_path)
    kill_when(arcana_home, ["export", "--agent", "ada", "--with-history", "-o", str(out), "--yes"],
              lambda: partial.exists() and partial.stat().st_size > 0, "the export's partial file had its first bytes")
    assert out.read_text() == "an earlier export\n"
    assert partial.exists() and os.stat(partial).st_size > 0  # what the kill left, under its partial name only
    done = run_arcana("export", "--agent", "ada", "--with-history", "-o", str(out), "--yes")
    assert done.returncode == 0, done.stderr
    assert _export_lines(out)[1] == ROWS and not partial.exists()


def test_an_export_stopped_by_sigterm_removes_its_partial_file(arcana_home, tmp_path):
    """`kill` (SIGTERM, as `timeout` and service managers send) ended an export where it stood: `out.jsonl.partial`
    (0600, every memory written so far, hidden ones too) stayed beside the file until the next export to it,
    and `doctor` cannot know of a file outside the home. The partial is removed now, the earlier file kept
    whole, and the process still dies of the signal."""
    out, partial = _rows_and_an_earlier_export(tmp_path)
    code = kill_when(arcana_home, ["export", "--agent", "ada", "--with-history", "-o", str(out), "--yes"],
                     lambda: partial.exists() and partial.stat().st_size > 0, "the export's partial file had its first bytes",
                     sig=signal.SIGTERM)
    assert code == -signal.SIGTERM
    assert not partial.exists() and out.read_text() == "an earlier export\n"
    # Positive control: the same export left alone completes.
    done = run_arcana("export", "--agent", "ada", "--with-history", "-o", str(out), "--yes")
    assert done.returncode == 0, done.stderr
    assert _export_lines(out)[1] == ROWS and not partial.exists()
