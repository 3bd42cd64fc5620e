"""Input size bounds: peak RSS and time of real `arcana` processes fed oversized input.

    python tests/bench/bench_input.py [--note-mb 50] [--timeout 300]

Figures (each a fresh process; peak RSS from wait4's ru_maxrss):
  1. `remember` with 5 MB on stdin: refused with exit 2 (target: quick, < 300 MB);
  2. `remember` with content just under memory.max_content_bytes (prose, stored and embedded);
  3. `remember "short"` — the floor of 2 (the embedding model alone);
  4. `vault index` of one --note-mb note with max_file_bytes raised (embedded: the text is cut to
     the embedder's character budget before the tokenizer sees it).
The machine is shared, so times are noisy; the RSS figures are the point.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_env import cli_env  # noqa: E402

ARCANA = [sys.executable, "-m", "arcana_cli.main"]
SENTENCE = "The deploy runs on Tuesday after the review, unless the release train is late. "


def run(args: list[str], home: Path, stdin: bytes | None, timeout: float) -> tuple[int, float, float, str]:
    """(exit code, seconds, peak RSS MB, last stderr line) of one real process, reaped with wait4."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*ARCANA, *args], stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=cli_env(home),
    )
    if stdin is not None:
        try:
            proc.stdin.write(stdin)
        except BrokenPipeError:
            pass  # refused before reading it all: what a bound should do
        finally:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # not proc.poll(): it would reap the child and lose its rusage
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            err = proc.stderr.read().decode(errors="replace").strip().splitlines()
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, time.perf_counter() - started, usage.ru_maxrss / 1024, (err or [""])[-1]
        time.sleep(0.05)
    proc.kill()
    _, status, usage = os.wait4(proc.pid, 0)
    return -9, time.perf_counter() - started, usage.ru_maxrss / 1024, f"killed after {timeout:.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--note-mb", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=300.0)
    opts = parser.parse_args()
    from memory.limits import MAX_CONTENT_BYTES

    with tempfile.TemporaryDirectory(prefix="bench-input-") as tmp:
        root = Path(tmp)
        home = root / "home"
        # A generous write budget: the shared machine must not turn a slow write into a timeout.
        (home / "connections").mkdir(parents=True)
        (home / "connections" / "memory-adapters.json").write_text(
            json.dumps({"private": {"write_timeout_ms": 600_000, "semantic_timeout_ms": 600_000}})
        )
        rows = []
        big = (SENTENCE * (5_000_000 // len(SENTENCE) + 1)).encode()[:5_000_000]
        rows.append(("remember, 5 MB on stdin (refused)", run(["remember", "--agent", "ada"], home, big, opts.timeout)))
        under = (SENTENCE * (MAX_CONTENT_BYTES // len(SENTENCE) + 1)).encode()[: MAX_CONTENT_BYTES - 1024]
        rows.append((f"remember, {len(under):,} B (just under the limit)",
                     run(["remember", "--agent", "ada"], home, under, opts.timeout)))
        rows.append(("remember, 'short' (the model's floor)",
                     run(["remember", "short note", "--agent", "ada"], home, None, opts.timeout)))
        vault = root / "vault"
        vault.mkdir()
        size = opts.note_mb * 1024 * 1024
        (vault / "huge.md").write_bytes((b"# Huge\n\n" + SENTENCE.encode() * (size // len(SENTENCE) + 1))[:size])
        add = ["vault", "add", str(vault), "--name", "big"]
        assert subprocess.run([*ARCANA, *add], env=cli_env(home), capture_output=True).returncode == 0
        assert subprocess.run(
            [*ARCANA, "config", "set", "vaults.big.max_file_bytes", str(size + 1)], env=cli_env(home), capture_output=True
        ).returncode == 0
        rows.append((f"vault index, one {opts.note_mb} MB note (embedded)",
                     run(["vault", "index", "big"], home, None, opts.timeout)))
    print(f"{'case':48} {'exit':>4} {'seconds':>8} {'peak RSS MB':>12}  last stderr line")
    for label, (code, seconds, rss, last) in rows:
        print(f"{label:48} {code:>4} {seconds:>8.2f} {rss:>12.0f}  {last[:90]}")


if __name__ == "__main__":
    main()
