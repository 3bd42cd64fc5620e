"""`arcana export` / `arcana import` at 10k and 100k memories: rate and peak RSS.

Each size gets a keyword-only home whose agent holds N memories (written
through SQLiteAdapter, ledger and FTS included); then, each in its own
process so ``ru_maxrss`` is that process's peak:

- ``arcana export --agent A -o FILE`` (and ``--with-history``),
- ``arcana import FILE --agent B --no-embed``,
- ``cat FILE > /dev/null``-equivalent floor: a Python process reading the
  file line by line, to separate our cost from the interpreter's.

Bounded memory shows as a peak RSS that does not grow with N (10k vs 100k).
The machine is shared: read ratios, not absolutes.

Run: python tests/bench/bench_export.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from cli_env import cli_env  # noqa: E402
from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.agents import AgentRegistry  # noqa: E402
from memory.home import Home  # noqa: E402
from memory.types import MemoryEntry, MemoryType, Visibility  # noqa: E402

WORDS = "user prefers tea coffee build uses make deploy friday holiday august server port config alpha beta".split()
TIME = "/usr/bin/time"  # GNU time; `apt-get install time` if missing
FLOOR = "import sys\nn = 0\nfor line in open(sys.argv[1], encoding='utf-8'):\n    n += 1\nprint(n)\n"


async def fill(home: Home, n: int) -> None:
    card = AgentRegistry(home).create("source")
    store = SQLiteAdapter.for_agent(card.id, home=home, actor="bench")
    batch = []
    for i in range(n):
        words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11, 13))
        batch.append(
            MemoryEntry(
                agent_id=card.id,
                content=f"memory {i}: {words} " + "x" * (i % 200),
                type=list(MemoryType)[i % 4],
                tags=[WORDS[i % len(WORDS)]],
                visibility=Visibility.HIDDEN if i % 50 == 0 else None,
            )
        )
        if len(batch) == 5000:
            await store.write_many(batch)
            batch = []
    if batch:
        await store.write_many(batch)
    await store.aclose()


def timed(args: list[str], env: dict, scratch: Path) -> tuple[float, float]:
    """Wall seconds and the command's peak RSS in MB, measured by GNU time.

    Not ``wait4``'s rusage: a child forked from this (large) bench process
    starts with its RSS, which ``ru_maxrss`` would report as the peak.
    """
    report = scratch / "rss.txt"
    started = time.perf_counter()
    done = subprocess.run([TIME, "-f", "%M", "-o", str(report), *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr}")
    return seconds, int(report.read_text().split()[-1]) / 1024


def run_size(n: int, workdir: Path) -> dict:
    home = Home(workdir / f"home-{n}")
    home.root.mkdir(parents=True)
    home.config_path.write_text(json.dumps({"embedding": {"providers": []}}))
    started = time.perf_counter()
    asyncio.run(fill(home, n))
    fill_s = time.perf_counter() - started
    env = cli_env(home.root)
    arcana = [sys.executable, "-m", "arcana_cli.main", "-q"]
    out, hist = workdir / f"export-{n}.jsonl", workdir / f"export-{n}-history.jsonl"
    export_s, export_mb = timed([*arcana, "export", "--agent", "source", "-o", str(out)], env, workdir)
    history_s, history_mb = timed([*arcana, "export", "--agent", "source", "-o", str(hist), "--with-history"], env, workdir)
    import_s, import_mb = timed([*arcana, "import", str(out), "--agent", "copy", "--no-embed"], env, workdir)
    again_s, again_mb = timed([*arcana, "import", str(out), "--agent", "copy", "--no-embed"], env, workdir)
    floor_s, floor_mb = timed([sys.executable, "-c", FLOOR, str(out)], env, workdir)
    lines = sum(1 for _ in out.open(encoding="utf-8")) - 1
    assert lines == n, (lines, n)
    return {
        "memories": n,
        "file_mb": round(out.stat().st_size / 1e6, 1),
        "fill_s": round(fill_s, 1),
        "export": {"s": round(export_s, 2), "per_s": round(n / export_s), "peak_rss_mb": round(export_mb, 1)},
        "export_with_history": {"s": round(history_s, 2), "per_s": round(n / history_s), "peak_rss_mb": round(history_mb, 1)},
        "import": {"s": round(import_s, 2), "per_s": round(n / import_s), "peak_rss_mb": round(import_mb, 1)},
        "import_again_noop": {"s": round(again_s, 2), "per_s": round(n / again_s), "peak_rss_mb": round(again_mb, 1)},
        "floor_read_lines": {"s": round(floor_s, 2), "peak_rss_mb": round(floor_mb, 1)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arcana-bench-export-") as tmp:
        for n in args.sizes:
            print(json.dumps(run_size(n, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
