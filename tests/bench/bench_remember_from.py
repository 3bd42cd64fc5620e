"""``remember --from``: bulk ingest rate against raw fastembed embedding of the same texts, same run.

    python tests/bench/bench_remember_from.py [--limit 1451 | --sample 20000] [--no-reconcile]

The texts are the real turns of ../shared/data/locomo-dev (each turn one
JSON line with its session and the session's date), or with ``--sample N``
the first N lines of the million-line file bench_scale.py imports
keyword-only (bench_peak_rss.line: no session, so each is embedded alone;
LoCoMo has 1,451 turns, issue 26 asks for 20,000 lines), ingested through the
agent's federation exactly as the CLI does it (memory.operations.bulk_import.remember_many over
federation_for_agent), model loaded beforehand. Raw embedding is timed
before and after the ingest, every text sorted by length at once (its best
case), and the ratio is taken against the mean. Target: ingest >= 0.9x raw.
The store embeds each memory with the turn before it (memory.sqlite.context),
so the raw baseline is timed on those same texts, read back from the store;
the ratio against the bare contents is printed too (what the context costs).
A second import of the same file shows what idempotence costs (nothing to embed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench_peak_rss import line

_REPO = Path(__file__).resolve().parents[2]
# ../shared beside the repository (a worktree under wt/ looks one level further up)
DATA = next((p for p in (_REPO.parent / "shared", _REPO.parent.parent / "shared") if p.is_dir()), _REPO.parent / "shared")
DATA = DATA / "data" / "locomo-dev"


def jsonl_lines(limit: int) -> list[str]:
    lines = []
    for path in sorted(DATA.glob("*.json")):
        conversation = json.loads(path.read_text())
        number = 1
        while f"session_{number}" in conversation:
            when = datetime.strptime(conversation[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y")
            for turn in conversation[f"session_{number}"]:
                text = f"{turn['speaker']}: {turn['text']}"
                lines.append(json.dumps({
                    "content": text, "session": f"{path.stem}-{number}", "type": "episodic",
                    "created_at": when.replace(tzinfo=UTC).isoformat(),
                }))
            number += 1
    return lines[:limit]


async def raw_rate(embedder, texts: list[str]) -> float:
    started = time.perf_counter()
    await embedder.embed(sorted(texts, key=len))
    return len(texts) / (time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=1451)
    parser.add_argument("--sample", type=int, default=0, help="N synthetic lines instead of LoCoMo turns")
    parser.add_argument("--no-reconcile", action="store_true", help="as `remember --from --no-reconcile`")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="arcana-bench-bulk-"))
    os.environ["ARCANA_HOME"] = str(work / "home")
    from memory.agents import AgentRegistry
    from memory.config import load_config
    from memory.embedding.factory import build_gateway
    from memory.home import Home
    from memory.operations.bulk_import import parse, remember_many
    from memory.runtime.assembly import federation_for_agent
    from memory.sqlite.context import EMBEDDED_TEXT_SQL

    home = Home.resolve()
    home.ensure()
    config = load_config(home.config_path)
    gateway = build_gateway(config.embedding, home)
    embedder = gateway.embedders[0]
    await embedder.health_check()
    lines = [json.dumps({"content": line(i)}) for i in range(args.sample)] if args.sample else jsonl_lines(args.limit)
    if not lines:
        raise SystemExit(f"no conversations under {DATA}")
    card = AgentRegistry(home).create("bench")
    parsed = parse(lines, card.id)
    texts = [e.content for e in parsed.entries]
    print(f"{len(lines)} lines, {len(texts)} memories, mean {statistics.mean(map(len, texts)):.0f} chars")

    bare = await raw_rate(embedder, texts)
    federation = await federation_for_agent(card, home=home, config=config, embedding=gateway)
    try:
        started = time.perf_counter()
        report = await remember_many(federation, parsed, reconcile=not args.no_reconcile)
        ingest = len(texts) / (time.perf_counter() - started)
        embedded = await federation.router.private.backend.store.run(
            lambda raw: [r[0] for r in raw.execute(f"SELECT {EMBEDDED_TEXT_SQL} FROM memories")]
        )
        raw = [await raw_rate(embedder, embedded)]
        started = time.perf_counter()
        again = await remember_many(federation, parse(lines, card.id), reconcile=not args.no_reconcile)
        repeat = time.perf_counter() - started
        raw.append(await raw_rate(embedder, embedded))
    finally:
        await federation.aclose()
    base = statistics.mean(raw)
    print(f"raw fastembed, the embedded texts (content + previous turn): {raw[0]:.1f} and {raw[1]:.1f} texts/s (mean {base:.1f})")
    print(f"raw fastembed, bare contents: {bare:.1f} texts/s")
    print(f"remember --from{' --no-reconcile' if args.no_reconcile else ''}: {ingest:.1f} memories/s = {ingest / base:.2f}x raw of the same texts, "
          f"{ingest / bare:.2f}x raw of the bare contents (written {report.written})")
    print(f"second import:   {repeat:.2f}s, written {again.written}, unchanged {again.unchanged}")


if __name__ == "__main__":
    asyncio.run(main())
