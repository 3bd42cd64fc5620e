"""After a killed bulk write, a re-run embeds the rows it left without a vector, and `doctor` reports them.

A real `remember --from` process with the real offline embedder is killed
with SIGKILL while a batch's rows are committed and its vectors are not yet;
the re-run finds those rows unchanged and must still embed them.
"""

from __future__ import annotations

from runner import kill_when, run_arcana

import json
import sqlite3
import subprocess
from pathlib import Path

from arcana_cli import exit_codes

LINES = 2500


def _arcana(home: Path, *args: str) -> subprocess.CompletedProcess:
    return run_arcana(*args, home=home, timeout=600)


def _counts(db: Path) -> tuple[int, int]:
    """(rows, vectors) as committed; the vector index's rowid table is plain SQLite."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
    try:
        rows = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        try:
            vectors = conn.execute("SELECT count(*) FROM memory_vec_1_rowids").fetchone()[0]
        except sqlite3.OperationalError:
            vectors = 0
        return rows, vectors
    finally:
        conn.close()


def _killed_between_rows_and_vectors(home: Path, source: Path) -> tuple[int, int]:
    def pending() -> bool:
        db = next(home.glob("agents/*/memory.db"), None)
        if db is None:
            return False
        rows, vectors = _counts(db)
        return rows > vectors and rows >= 1024

    kill_when(home, ["remember", "--from", str(source), "--agent", "ada"], pending, "a batch's vectors were pending")
    return _counts(next(home.glob("agents/*/memory.db")))


def test_a_rerun_embeds_what_a_killed_run_left_and_doctor_reports_it(tmp_path):
    home = tmp_path / "home"
    source = tmp_path / "lines.jsonl"
    source.write_text("".join(json.dumps({"content": f"fact {i}: the crate of item {i} sits on shelf {i % 97}"}) + "\n"
                              for i in range(LINES)))
    rows, vectors = _killed_between_rows_and_vectors(home, source)
    assert rows > vectors
    doctor = _arcana(home, "doctor")
    assert doctor.returncode == exit_codes.FAILURE
    line = next(row for row in doctor.stdout.splitlines() if " vectors " in f" {row} ")
    assert line.startswith("FAIL") and f"ada: {rows - vectors} of {rows}" in line, line
    again = _arcana(home, "remember", "--from", str(source), "--agent", "ada", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["vectors_completed"] == rows - vectors
    assert report["unchanged"] == rows and report["written"] == LINES - rows  # and the rest of the file went in
    status = json.loads(_arcana(home, "embeddings", "status", "--json").stdout)
    mine = next(row for row in status["databases"] if row["agent"] == "ada")
    assert (mine["rows"], mine["missing"]) == (LINES, 0)
    doctor = _arcana(home, "doctor")
    assert any(row.startswith("ok") and " vectors " in f" {row} " for row in doctor.stdout.splitlines()), doctor.stdout
