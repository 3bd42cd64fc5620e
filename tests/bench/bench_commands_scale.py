"""Peak RSS and wall time of every maintenance command as one agent's store grows (issue 26).

For each size N an agent's store (real migrations, a real agent card) holds N
keyword-only memories: Zipf sentences of 8-25 words (bench_store.corpus)
written with raw batched INSERTs, as bench_scale.py fills its stores, but with
no vectors (so the figures are the commands' own memory, not a model's or
sqlite-vec's). The quarter of them that are episodes belong to sessions of 20
turns dated in 2025, long aged out: months of an agent's history, which
consolidate digests. Each command then runs as a real ``arcana`` process
(bench_peak_rss.measure: the child's ``ru_maxrss``), in this order, on the
same store:

  recall --mode keyword, doctor, migrate status, migrate up, reindex,
  prune --dry-run (cap: half the rows), prune (the same cap, archive),
  consolidate --dry-run, consolidate, prune --max-bytes (half the bytes
  written: digests condensed first), export -o FILE, backup DEST

Bounded means a command's peak RSS at the largest size is not ~(size ratio)x
its peak at the smallest: the ratio is printed per command, and, last, one
summary line per command:
``command=… size=N rss_mib=… wall_s=… … rss_ratio=…``.

Run: python tests/bench/bench_commands_scale.py [--sizes 100000,1000000] [--skip LABEL,...]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from bench_peak_rss import keyword_home, measure  # noqa: E402
from bench_store import Zipf, corpus, raw_batch, vocabulary  # noqa: E402

from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.agents import AgentRegistry  # noqa: E402
from memory.home import Home  # noqa: E402
from memory.types import MemoryEntry, MemoryType  # noqa: E402

CHUNK = 20_000  # rows generated and inserted at a time (the builder's memory stays bounded too)
OLD = datetime(2025, 1, 1, tzinfo=UTC)
SESSION_TURNS = 20


async def build(n: int, root: Path) -> tuple[Path, int]:
    """A keyword-only home whose agent ``bench`` holds ``n`` memories: the home's path, and the
    content bytes written."""
    root.mkdir()
    home = Home(keyword_home(root))
    home.config_path.chmod(0o600)  # as `arcana init` writes it, so doctor judges the store, not the bench's file
    card = AgentRegistry(home).create("bench")
    store = SQLiteAdapter.for_agent(card.id, home=home, actor="bench")
    await store.connect()
    rng = random.Random(n)
    zipf = Zipf(vocabulary(rng), rng)
    nbytes = 0
    for done in range(0, n, CHUNK):
        entries = corpus(min(CHUNK, n - done), zipf, rng, agent_id=card.id)
        nbytes += sum(len(e.content.encode()) for e in entries)
        await store.run(raw_batch, [_old_turn(e, done + i) if e.type is MemoryType.EPISODIC else e
                                    for i, e in enumerate(entries)])
    await store.aclose()
    return home.root, nbytes


def _old_turn(entry: MemoryEntry, i: int) -> MemoryEntry:
    """An episode of a session months old (SESSION_TURNS turns a session): what consolidate digests."""
    at = OLD + timedelta(hours=i // (4 * SESSION_TURNS), seconds=i)
    return entry.model_copy(update={"source_session_id": f"s{i // (4 * SESSION_TURNS)}", "created_at": at,
                                    "updated_at": at})


def commands(n: int, nbytes: int, root: Path) -> list[tuple[str, list[str]]]:
    cap = str(n // 2)
    return [
        ("recall --mode keyword", ["recall", "shelf of the crate", "--agent", "bench", "--mode", "keyword"]),
        ("doctor", ["doctor"]),
        ("migrate status", ["migrate", "status"]),
        ("migrate up", ["migrate", "up"]),
        ("reindex", ["reindex", "--agent", "bench"]),
        ("prune --dry-run", ["prune", "--agent", "bench", "--max-entries", cap, "--dry-run"]),
        ("prune", ["prune", "--agent", "bench", "--max-entries", cap]),
        ("consolidate --dry-run", ["consolidate", "--agent", "bench", "--dry-run"]),
        ("consolidate", ["consolidate", "--agent", "bench"]),
        ("prune --max-bytes", ["prune", "--agent", "bench", "--max-bytes", str(nbytes // 2)]),
        ("export -o", ["export", "--agent", "bench", "-o", str(root / "export.jsonl")]),
        ("backup", ["backup", str(root / "backup")]),
    ]


def main(sizes: list[int], skip: set[str]) -> None:
    results: dict[str, dict[int, tuple[int, float]]] = {}
    for n in sizes:
        root = Path(tempfile.mkdtemp(prefix="arcana-bench-cmds-"))
        try:
            started = time.monotonic()
            home, nbytes = asyncio.run(build(n, root / "store"))
            db = sum(f.stat().st_size for f in home.rglob("*.db"))
            print(f"\n== {n:,} keyword-only memories (no vectors): built in {time.monotonic() - started:.0f} s, "
                  f"{db / 2**20:,.0f} MiB of databases ==", flush=True)
            for label, args in commands(n, nbytes, root):
                if label in skip:
                    continue
                results.setdefault(label, {})[n] = measure(f"{label}, {n:,}", args, home)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    small, large = sizes[0], sizes[-1]
    print(f"\nrss ratio = peak RSS at {large:,} / at {small:,} (size ratio {large / small:.0f}x; bounded: near 1)")
    for label, by_size in results.items():
        cells = " ".join(f"size={n} rss_mib={rss} wall_s={wall:.1f}" for n, (rss, wall) in by_size.items())
        ratio = by_size[large][0] / by_size[small][0] if large in by_size and small in by_size else float("nan")
        print(f"command={label.replace(' ', '_')} {cells} rss_ratio={ratio:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100_000, 1_000_000])
    parser.add_argument("--skip", type=lambda s: set(s.split(",")), default=set(),
                        help='Commands to leave out, by label: "prune --dry-run,prune" (the rest then run on every row).')
    args = parser.parse_args()
    main(args.sizes, args.skip)
