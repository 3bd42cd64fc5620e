"""``remember --from FILE --pool NAME``: what deciding each line against the pool costs.

    python tests/bench/bench_pool_import.py [--lines 10000] [--postgres]

A keyword-only home (no model) with pool ``team`` (a SQLite file, or with
``--postgres`` a fresh database on a throwaway server, tests/support/pg_server.py), agent ``ada`` in it. Real ``arcana`` processes, wall
time: the first file of ``--lines`` lines into the empty pool, then a second
file of as many other lines into the pool holding the first, then the second
file again (a re-run); each reconciled, and with ``--no-reconcile`` in a home
of its own as the baseline of the same run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_peak_rss import line
from cli_env import cli_env

ARCANA = [sys.executable, "-m", "arcana_cli.main"]


def arcana(home: Path, *args: str, env: dict | None = None) -> str:
    done = subprocess.run([*ARCANA, *args], env={**cli_env(home), **(env or {})}, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout


def home_with_pool(root: Path, url: str | None) -> Path:
    home = root / "home"
    home.mkdir(mode=0o700)
    (home / "config.json").write_text(json.dumps({"embedding": {"providers": []}}))
    arcana(home, "agent", "create", "ada")
    arcana(home, "pool", "create", "team", *(("--url", url) if url else ()))
    arcana(home, "agent", "join", "ada", "team")
    return home


def lines_file(path: Path, start: int, n: int) -> Path:
    with path.open("w") as handle:
        for i in range(start, start + n):
            handle.write(json.dumps({"content": line(i)}) + "\n")
    return path


def timed(home: Path, source: Path, *extra: str) -> tuple[float, dict]:
    started = time.perf_counter()
    out = arcana(home, "remember", "--from", str(source), "--pool", "team", "-a", "ada", "--json", *extra)
    return time.perf_counter() - started, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--postgres", action="store_true", help="the pool on a throwaway PostgreSQL server")
    args = parser.parse_args()
    server = None
    if args.postgres:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
        import pg_server

        server = pg_server.start_server()
    try:
        for side in ("reconciled", "--no-reconcile"):
            run(side, args.lines, server.fresh_database("bench_pool") if server else None)
    finally:
        if server is not None:
            pg_server.remove(server)


def run(side: str, lines: int, url: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = home_with_pool(root, url)
        first = lines_file(root / "first.jsonl", 0, lines)
        second = lines_file(root / "second.jsonl", lines, lines)
        extra = () if side == "reconciled" else ("--no-reconcile",)
        for label, source in (("into an empty pool", first), (f"into a pool of {lines:,}", second),
                              ("the same file again", second)):
            took, report = timed(home, source, *extra)
            print(f"{side:15} {label:26} {took:7.2f} s  {lines / took:8.0f} lines/s  "
                  f"written {report['written']:6}  decisions {report['decisions']}", flush=True)


if __name__ == "__main__":
    main()
