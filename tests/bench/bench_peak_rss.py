"""Peak RSS of each bulk command at N lines (default 10,000 and 1,000,000), one real process each.

    python tests/bench/bench_peak_rss.py [N ...]

For every N: `remember --from` (keyword-only, so the figure is the command's
own memory, not the model's), `export -o`, `import` of that export into a new
agent. Once: `remember` of a 1 MB memory and `vault index` of a 900 KB note,
with the offline embedder (its load alone is ~310 MB). Peak RSS is the child's
``ru_maxrss``; wall time is printed beside it.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARCANA = [sys.executable, "-m", "arcana_cli.main", "--quiet"]


def measure(label: str, args: list[str], home: Path, stdin: Path | None = None) -> tuple[int, float]:
    """Run ``arcana args`` in its own process; print and return (peak RSS in MiB, wall seconds)."""
    wrapper = ("import resource, subprocess, sys\n"
               "src = open(sys.argv[1], 'rb') if sys.argv[1] != '-' else None\n"
               "p = subprocess.run(sys.argv[2:], stdin=src, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
               "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", wrapper, str(stdin) if stdin else "-", *ARCANA, *args],
                          env={**os.environ, "ARCANA_HOME": str(home)}, capture_output=True, text=True)
    code, peak = done.stdout.split()
    seconds = time.monotonic() - started
    print(f"{label:<44} peak {int(peak):>6,} MiB  {seconds:7.1f} s  exit {code}", flush=True)
    return int(peak), seconds


def keyword_home(root: Path) -> Path:
    home = root / "home"
    home.mkdir(mode=0o700)
    (home / "config.json").write_text(json.dumps({"embedding": {"providers": []}}))
    return home


def line(i: int) -> str:
    return f"line {i}: the crate of item {i} sits on shelf {i % 997} of row {i % 31}"


def lines_file(n: int, root: Path) -> Path:
    """``n`` JSON lines of :func:`line` contents, for ``remember --from``."""
    source = root / "lines.jsonl"
    with source.open("w") as handle:
        for i in range(n):
            handle.write(json.dumps({"content": line(i)}) + "\n")
    return source


def bulk(n: int, root: Path) -> None:
    home = keyword_home(root)
    source = lines_file(n, root)
    measure(f"remember --from, {n:,} lines", ["remember", "--from", str(source), "--agent", "a", "--no-reconcile"], home)
    export = root / "a.jsonl"
    measure(f"export -o, {n:,} memories", ["export", "--agent", "a", "-o", str(export)], home)
    measure(f"import, {n:,} lines", ["import", str(export), "--agent", "b", "--no-embed"], home)


def large_texts(root: Path) -> None:
    home = root / "embed-home"
    words = ["".join(random.choice("abcdefghij") for _ in range(random.randint(3, 9))) for _ in range(5000)]
    memory = root / "big.txt"
    memory.write_text(" ".join(random.choice(words) for _ in range(150_000))[:1_000_000])
    measure("remember (embedder), a 10-character memory", ["remember", "a memory", "--agent", "a"], home)
    measure("remember (embedder), a 1 MB memory", ["remember", "--agent", "a", "-"], home, stdin=memory)
    vault = root / "vault"
    vault.mkdir()
    paragraphs, size = [], 0
    while size < 900_000:
        paragraphs.append(" ".join(random.choice(words) for _ in range(80)) + ".")
        size += len(paragraphs[-1]) + 2
    (vault / "Big.md").write_text("# Big\n\n" + "\n\n".join(paragraphs))
    subprocess.run([*ARCANA, "vault", "add", str(vault), "--name", "big"], env={**os.environ, "ARCANA_HOME": str(home)},
                   check=True)
    measure("vault index (embedder), one 900 KB note", ["vault", "index", "big"], home)


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 1_000_000]
    random.seed(7)
    for n in sizes:
        root = Path(tempfile.mkdtemp(prefix="arcana-bench-rss-"))
        try:
            bulk(n, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    root = Path(tempfile.mkdtemp(prefix="arcana-bench-rss-"))
    try:
        large_texts(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB)")


if __name__ == "__main__":
    main()
