"""The exit-code table (man/exit-codes.md), exercised through the real entry point in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from runner import run_arcana

from arcana_cli import exit_codes

ARCANA = [sys.executable, "-m", "arcana_cli.main"]


def arcana(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run_arcana(*args, home=home, stdin=stdin, timeout=60)


def test_manual_table_is_the_code_table():
    page = (Path(__file__).resolve().parents[2] / "man" / "exit-codes.md").read_text()
    for code, meaning in exit_codes.TABLE:
        assert f" | {meaning.replace('|', chr(92) + '|')} |" in page and f"| {code} | " in page


def test_success_and_data_only_on_stdout(tmp_path):
    home = tmp_path / "h"
    done = arcana(home, "remember", "The user prefers metric units.", "--agent", "demo", "--json")
    assert done.returncode == exit_codes.OK, done.stderr
    assert json.loads(done.stdout)["agent"] == "demo"  # stdout is pure JSON
    assert "created agent" in done.stderr
    found = arcana(home, "recall", "metric units", "--agent", "demo", "--json")
    assert found.returncode == 0
    payload = json.loads(found.stdout)
    assert [r["content"] for r in payload["results"]] == ["The user prefers metric units."]


def test_usage_error_is_2(tmp_path):
    done = arcana(tmp_path / "h", "remember", "x", "--agent", "a", "--importance", "7")
    assert done.returncode == exit_codes.USAGE
    assert done.stdout == ""


def test_empty_stdin_is_a_usage_error_and_writes_nothing(tmp_path):
    home = tmp_path / "h"
    done = arcana(home, "remember", "--agent", "a", stdin="   \n")
    assert done.returncode == exit_codes.USAGE
    assert not (home / "agents").exists() or not list((home / "agents").glob("*/memory.db"))


def test_not_found_is_3(tmp_path):
    done = arcana(tmp_path / "h", "recall", "anything", "--agent", "nobody")
    assert done.returncode == exit_codes.NOT_FOUND
    assert done.stderr.count("\n") == 1 and "nobody" in done.stderr


def test_malformed_config_is_4_and_the_file_is_untouched(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.json").write_text('{"recall": {"limit": "many"')
    before = (home / "config.json").read_bytes()
    done = arcana(home, "config", "validate")
    assert done.returncode == exit_codes.CONFIG
    assert "config.json" in done.stderr and "line 1" in done.stderr
    done = arcana(home, "config", "set", "recall.limit", "5")
    assert done.returncode == exit_codes.CONFIG
    assert (home / "config.json").read_bytes() == before


def test_schema_too_new_is_5_and_the_database_is_untouched(tmp_path):
    home = tmp_path / "h"
    assert arcana(home, "remember", "hello", "--agent", "a").returncode == 0
    db = next((home / "agents").glob("*/memory.db"))
    from memory.sqlite.connection import dbapi

    conn = dbapi().connect(str(db))
    conn.execute("PRAGMA user_version = 999")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = db.read_bytes()
    done = arcana(home, "recall", "hello", "--agent", "a")
    assert done.returncode == exit_codes.STORAGE
    assert "newer" in done.stderr and "upgrade" in done.stderr
    assert db.read_bytes() == before


def test_lock_held_is_75(tmp_path):
    home = tmp_path / "h"
    assert arcana(home, "remember", "hello", "--agent", "a").returncode == 0
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from memory.locks import exclusive\n"
            f"with exclusive(Path({str(home / 'locks' / 'prune.lock')!r}), 'prune'):\n"
            "    print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        done = arcana(home, "prune", "--all", "--min-importance", "0.9")
        assert done.returncode == exit_codes.BUSY
        assert "another prune" in done.stderr
    finally:
        holder.kill()
        holder.wait()
    # positive control: with the lock free, the same prune succeeds
    assert arcana(home, "prune", "--all", "--min-importance", "0.9").returncode == exit_codes.OK


def test_doctor_problem_is_1(tmp_path):
    home = tmp_path / "h"
    assert arcana(home, "remember", "hello", "--agent", "a").returncode == 0
    assert arcana(home, "doctor").returncode == exit_codes.OK
    (home / "config.json").write_text("[]")
    done = arcana(home, "doctor", "--json")
    assert done.returncode == exit_codes.FAILURE
    checks = {c["name"]: c["ok"] for c in json.loads(done.stdout)["checks"]}
    assert checks["config"] is False and checks["round trip"] is True


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_version_and_help_import_no_more_than_they_need(args):
    probe = (
        "import sys; from arcana_cli import main as m; sys.argv = ['arcana', *%r]\n"
        "try:\n    m.main()\nexcept SystemExit:\n    pass\n"
        "heavy = [n for n in ('fastembed', 'onnxruntime', 'sqlite_vec', 'numpy') if n in sys.modules]\n"
        "heavy += [n for n in ('aiosqlite', 'pydantic', 'typer', 'rich') if n in sys.modules and sys.argv[1] == '--version']\n"
        "print('HEAVY', heavy, file=sys.stderr)" % (args,)
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in done.stderr, done.stderr
    if args == ["--version"]:
        assert done.stdout.startswith("arcana ")


def test_stdin_that_is_not_utf8_is_a_usage_error_and_stores_nothing(tmp_path):
    home = tmp_path / "h"
    env = {**os.environ, "ARCANA_HOME": str(home)}
    bad = subprocess.run(
        [*ARCANA, "remember", "--agent", "a"], input=b"\xff\xfe not text", capture_output=True, env=env, timeout=60
    )
    assert bad.returncode == exit_codes.USAGE and b"not UTF-8" in bad.stderr and b"Traceback" not in bad.stderr
    good = subprocess.run(
        [*ARCANA, "remember", "--agent", "a"], input="café au lait".encode(), capture_output=True, env=env, timeout=60
    )
    assert good.returncode == exit_codes.OK  # control: UTF-8 on stdin is stored
