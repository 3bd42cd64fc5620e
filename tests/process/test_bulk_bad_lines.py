"""One bad line never breaks a bulk load: `remember --from` and `import` name it by number and store the rest.

The bad lines are the audit's: JSON nested 100,000 deep, a memory over the
content limit, and a 100 MB line. Each run is a real process, so its peak
RSS shows that the long line was skipped unread rather than held.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from arcana_cli import exit_codes

ARCANA = [sys.executable, "-m", "arcana_cli.main"]
GOOD = 3000
HUGE = 100 * 1024 * 1024


def _run(*args: str, home: Path) -> tuple[subprocess.CompletedProcess, int]:
    """The command's result and its peak RSS in MiB (it is the only child that ran since ``before``)."""
    env = {**os.environ, "ARCANA_HOME": str(home)}
    script = ("import resource, subprocess, sys\n"
              "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
              "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr)\n"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, file=sys.stderr)\n"
              "sys.exit(p.returncode)\n")
    done = subprocess.run([sys.executable, "-c", script, *ARCANA, *args], env=env, capture_output=True, text=True,
                          timeout=600)
    *lines, peak = done.stderr.rstrip("\n").split("\n")
    done.stderr = "\n".join(lines)
    return done, int(peak)


def _write_bad(handle, kind: str) -> None:
    if kind == "nested":
        handle.write(b'{"content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    elif kind == "over_limit":
        handle.write(json.dumps({"content": "x" * (1024 * 1024 + 10)}).encode() + b"\n")
    else:  # a 100 MB line
        handle.write(b'{"content": "')
        block = b"y" * (1 << 20)
        for _ in range(HUGE // len(block)):
            handle.write(block)
        handle.write(b'"}\n')


BAD_AT = {1001: "nested", 2002: "over_limit", 2500: "huge"}


def _from_file(path: Path) -> None:
    with path.open("wb") as handle:
        good = 0
        for number in range(1, GOOD + len(BAD_AT) + 1):
            if number in BAD_AT:
                _write_bad(handle, BAD_AT[number])
            else:
                handle.write(json.dumps({"content": f"good line {good} about topic {good * 13}"}).encode() + b"\n")
                good += 1


@pytest.fixture
def home(no_embedder) -> Path:
    return no_embedder.root


def _count(home: Path, agent: str) -> int:
    done = subprocess.run([*ARCANA, "memory", "list", "--agent", agent, "--json", "--limit", "10000"],
                          env={**os.environ, "ARCANA_HOME": str(home)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return len(json.loads(done.stdout))


def _named(stderr: str, line: int, *words: str) -> None:
    mine = [row for row in stderr.splitlines() if f"line {line}:" in row]
    assert mine, stderr[-2000:]
    assert all(word in mine[0] for word in words), mine[0]


def test_remember_from_names_each_bad_line_and_stores_every_good_one(home, tmp_path):
    source = tmp_path / "mixed.jsonl"
    _from_file(source)
    done, peak = _run("remember", "--from", str(source), "--agent", "ada", "--no-reconcile", home=home)
    assert done.returncode == exit_codes.USAGE, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    _named(done.stderr, 1001, "nested too deeply")
    _named(done.stderr, 2002, "over the limit")
    _named(done.stderr, 2500, "skipped unread")
    assert "3 bad line(s)" in done.stderr
    assert _count(home, "ada") == GOOD  # every good line, the ones in the bad lines' batches too
    assert peak < 400, f"peak RSS {peak} MiB: the 100 MB line was held"
    again, _ = _run("remember", "--from", str(source), "--agent", "ada", "--no-reconcile", "--json", home=home)
    assert json.loads(again.stdout)["unchanged"] == GOOD  # still idempotent


def test_import_names_each_bad_line_and_stores_every_good_one(home, tmp_path):
    seed = tmp_path / "seed.jsonl"
    seed.write_text("".join(json.dumps({"content": f"exported memory {i} on subject {i * 7}"}) + "\n" for i in range(GOOD)))
    assert _run("remember", "--from", str(seed), "--agent", "src", "--no-reconcile", home=home)[0].returncode == 0
    export = tmp_path / "src.jsonl"
    assert _run("export", "--agent", "src", "-o", str(export), home=home)[0].returncode == 0
    lines = export.read_bytes().splitlines(keepends=True)
    template = json.loads(lines[1])
    mixed = tmp_path / "mixed-export.jsonl"
    with mixed.open("wb") as handle:
        handle.write(lines[0])
        rows = iter(lines[1:])
        for number in range(2, GOOD + len(BAD_AT) + 2):
            if number in BAD_AT:
                if BAD_AT[number] == "over_limit":
                    big = {**template, "memory": {**template["memory"], "id": "too-big", "content": "z" * (2 << 20)}}
                    handle.write(json.dumps(big).encode() + b"\n")
                else:
                    _write_bad(handle, BAD_AT[number])
            else:
                handle.write(next(rows))
    done, peak = _run("import", str(mixed), "--agent", "copy", "--no-embed", home=home)
    assert done.returncode == exit_codes.USAGE, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    _named(done.stderr, 1001, "nested too deeply")
    _named(done.stderr, 2002, "over the limit")
    _named(done.stderr, 2500, "skipped unread")
    assert _count(home, "copy") == GOOD
    assert peak < 400, f"peak RSS {peak} MiB: the 100 MB line was held"


def test_a_line_that_is_not_utf8_is_named_and_the_rest_stored(home, tmp_path):
    source = tmp_path / "latin1.jsonl"
    source.write_bytes(b'{"content": "caf\xe9"}\n{"content": "plain coffee"}\n')
    done, _ = _run("remember", "--from", str(source), "--agent", "ada", home=home)
    assert done.returncode == exit_codes.USAGE
    _named(done.stderr, 1, "not UTF-8")
    assert _count(home, "ada") == 1


def test_peak_rss_reader_sees_the_child(tmp_path):
    """The measurement itself: a child that allocates 200 MiB reports over 200."""
    script = "x = bytearray(200 * 1024 * 1024); x[::4096] = b'1' * len(x[::4096])"
    subprocess.run([sys.executable, "-c", script], check=True)
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024 >= 200
