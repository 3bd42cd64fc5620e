"""Processes appending to one audit log while it rotates (a cron prune beside writers and a server)
lose no line: every process that found the log full rotated it, the second moving the first's
fresh ``.1`` over the older one or finding no log left to move and dropping its line. Real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from memory.audit import AuditLog

APPENDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memory.audit import AuditLog
    log = AuditLog(Path(sys.argv[1]), max_bytes=1000, keep=1000)
    print("ready", flush=True)
    sys.stdin.readline()  # all start together
    for n in range(int(sys.argv[3])):
        log.append("prune", writer=sys.argv[2], n=n)
    """
)
WRITERS, LINES = 6, 200


def test_appenders_rotating_at_once_lose_no_line(tmp_path):
    path = tmp_path / "logs" / "audit.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), f"w{i}", str(LINES)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for i in range(WRITERS)]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        proc.stdin.close()
        assert proc.wait(timeout=120) == 0

    files = sorted(path.parent.glob("audit.jsonl*"))
    assert len(files) > 10  # it did rotate, many times over
    seen = [json.loads(line) for f in files for line in f.read_text().splitlines() if line]
    assert sorted((e["writer"], e["n"]) for e in seen) == sorted((f"w{i}", n) for i in range(WRITERS) for n in range(LINES))
    newest = AuditLog(path, keep=len(files)).newest(limit=WRITERS * LINES)
    assert len(newest) == WRITERS * LINES  # and the reader finds them all, through the rotated files


def test_a_line_nested_past_the_parsers_depth_is_shown_unreadable_not_raised(tmp_path):
    """json.loads raised RecursionError on such a line, which `_event` did not catch: every page of the
    web view's /audit that reached it was a 500, hiding the events around it."""
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append("before")
    with log.path.open("a") as handle:
        handle.write('{"event": "deep", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    log.append("after")
    assert [e["event"] for e in log.newest()] == ["after", "unreadable line", "before"]
