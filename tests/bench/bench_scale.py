"""Recall as one SQLite store grows (issue 26): each mode against its baseline, measured in the same run.

For every size N an agent's store (real migrations, real sqlite-vec) holds N
memories: Zipf sentences of 8-25 words (bench_store.corpus) and, among them,
real MiniLM embeddings of planted answers (planted.py) with random unit
vectors for the rest. The rows are written with raw batched INSERTs and the
vectors through the store's own vector write (so the compact index is built
and kept as in use); every timed query goes through Arcana's API:

- semantic: ``VectorAdapter.search`` (mode semantic) against sqlite-vec's
  exact KNN scan of the same index, and recall@10 of the first against the
  second over the planted paraphrase queries (random-vector queries, the
  compact index's worst case, are printed beside);
- keyword: the same adapter in keyword mode against raw FTS5 ``MATCH …
  ORDER BY bm25`` on the same file (bench_store's query), interleaved;
- hybrid: the adapter in hybrid mode, the paraphrases as text;
- ``arcana recall --mode keyword`` wall time on each store, against the smallest;
- ``remember --from`` of ``--from-lines`` lines, keyword-only, against raw
  batched INSERTs, with its peak RSS.

Query vectors are embedded once beforehand and handed over by text
(bench_semantic.Precomputed), so a timing measures the search, not the model.
The last lines are one summary per size, in the form the issue fixes.

Run: python tests/bench/bench_scale.py [--sizes 10000,100000] [--queries 50] [--cli-runs 5] [--from-lines 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from bench_peak_rss import keyword_home, line, lines_file, measure  # noqa: E402
from bench_semantic import Precomputed, models_root  # noqa: E402
from bench_store import (ARCANA, RAW_SEARCH, Zipf, corpus, queries, raw_batch, raw_connect, raw_create,  # noqa: E402
                         vocabulary, wall)
from cli_env import cli_env  # noqa: E402
from planted import answer, paraphrases  # noqa: E402

from memory.adapters.sqlite import WRITE_BATCH, SQLiteAdapter  # noqa: E402
from memory.adapters.vector import VectorAdapter  # noqa: E402
from memory.agents import AgentRegistry  # noqa: E402
from memory.embedding.base import EmbeddingMeta, content_hash  # noqa: E402
from memory.embedding.fastembed import FastEmbedEmbedder  # noqa: E402
from memory.embedding.gateway import EmbeddingGateway  # noqa: E402
from memory.home import Home  # noqa: E402
from memory.sqlite import compact  # noqa: E402
from memory.query_terms import terms  # noqa: E402
from memory.sqlite.fts import match_expression  # noqa: E402
from memory.sqlite.vectors import knn, pack, put_live_txn  # noqa: E402
from memory.types import MemoryEntry, MemoryQuery, MemoryType, RetrievalMode  # noqa: E402

PLANTED = 1000  # real-embedded answer rows in every store
CHUNK = 20_000  # rows generated, inserted and given vectors at a time (bounded memory at any size)
WARM = 5


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def build(n: int, root: Path, model: FastEmbedEmbedder) -> tuple[Home, str, SQLiteAdapter]:
    """An agent's store of ``n`` memories, the first :data:`PLANTED` the planted answers; (home, agent id, store)."""
    root.mkdir()
    home = Home(keyword_home(root))
    card = AgentRegistry(home).create("bench")
    store = SQLiteAdapter.for_agent(card.id, home=home, actor="bench")
    await store.connect()
    await store.ensure_vec()
    rng = random.Random(n)
    zipf = Zipf(vocabulary(rng), rng)
    gen = np.random.default_rng(n)
    pin = EmbeddingMeta(model.model_name, model.model_family, model.dimension, "", time.time())
    texts = [answer(i) for i in range(min(PLANTED, n))]
    real = np.asarray(await model.embed(texts), dtype=np.float32)
    planted = [MemoryEntry(agent_id=card.id, type=MemoryType.SEMANTIC, content=t, importance=0.5) for t in texts]
    done = 0
    while done < n:
        count = min(CHUNK, n - done)
        entries = planted if done == 0 else corpus(count, zipf, rng, agent_id=card.id)
        count = len(entries)
        await store.run(raw_batch, entries)
        seqs = await store.run(lambda raw, c=count: [r[0] for r in raw.execute(
            "SELECT seq FROM memories ORDER BY seq DESC LIMIT ?", (c,))][::-1])
        if done == 0:
            block = real
        else:
            block = gen.standard_normal((count, model.dimension), dtype=np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
        rows = [(s, v.tobytes(), content_hash(e.content), model.model_name) for s, v, e in zip(seqs, block, entries, strict=True)]
        await store.run(put_live_txn, pin, rows)
        done += count
    return home, card.id, store


async def timed(fn, items) -> tuple[list[float], list]:
    """Per-item seconds of ``fn`` after a warm-up on the first few, and its answers."""
    for item in items[:WARM]:
        await fn(item)
    times, answers = [], []
    for item in items:
        started = time.perf_counter()
        answers.append(await fn(item))
        times.append(time.perf_counter() - started)
    return times, answers


async def bench_size(n: int, n_queries: int, cli_runs: int, root: Path, model: FastEmbedEmbedder) -> dict:
    started = time.perf_counter()
    home, agent, store = await build(n, root / f"size-{n}", model)
    built = time.perf_counter() - started
    meta = await store.run(lambda raw: raw.execute("SELECT vec_table FROM embedding_meta").fetchone()[0])
    codes = await store.run(compact.size, meta)
    path = "compact index" if codes >= compact.SEARCH_FROM else "exact scan"
    print(f"\n== {n:,} memories: built in {built:.0f} s; {codes:,} compact codes, semantic reads the {path}; "
          f"load {load()} ==", flush=True)

    texts = paraphrases(n_queries)
    vectors = dict(zip(texts, await model.embed(texts), strict=True))
    noise = np.random.default_rng(1).standard_normal((n_queries, model.dimension), dtype=np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    randoms = {f"random vector {i}": v.tolist() for i, v in enumerate(noise)}
    adapter = VectorAdapter(store, EmbeddingGateway([Precomputed(model, {**vectors, **randoms})]))

    def ask(mode: RetrievalMode):
        return lambda text: adapter.search(MemoryQuery(agent_id=agent, text=text, retrieval_mode=mode, limit=10))

    async def exact(text: str) -> set[int]:
        return {seq for seq, _ in await store.run(knn, meta, pack(vectors.get(text) or randoms[text]), 10)}

    async def seqs(entries) -> set[int]:
        ids = [e.id for e in entries]
        return set(await store.run(lambda raw: [r[0] for r in raw.execute(
            f"SELECT seq FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids)]))

    semantic, found = await timed(ask(RetrievalMode.semantic), texts)
    exact_times, truth = await timed(exact, texts)
    recall = statistics.mean([len(await seqs(f) & t) / 10 for f, t in zip(found, truth, strict=True)])
    noise_texts = list(randoms)[:20]
    _, noise_found = await timed(ask(RetrievalMode.semantic), noise_texts)
    _, noise_truth = await timed(exact, noise_texts)
    noise_recall = statistics.mean([len(await seqs(f) & t) / 10 for f, t in zip(noise_found, noise_truth, strict=True)])
    hybrid, _ = await timed(ask(RetrievalMode.hybrid), texts)
    print(f"  semantic p50 {ms(semantic):.2f} ms, exact sqlite-vec KNN p50 {ms(exact_times):.2f} ms: "
          f"{ms(semantic) / ms(exact_times):.2f}x; recall@10 vs exact {recall:.3f} (planted paraphrases), "
          f"{noise_recall:.3f} (random-vector queries); hybrid p50 {ms(hybrid):.2f} ms = "
          f"{ms(hybrid) / ms(semantic):.2f}x semantic; load {load()}", flush=True)

    rng = random.Random(n + 1)
    words = queries(n_queries, Zipf(vocabulary(random.Random(n)), rng), rng)  # the store's vocabulary (build's first draw)
    probe = raw_connect(store.path)
    keyword = ask(RetrievalMode.keyword)
    for text in words[:WARM]:
        await keyword(text)
        probe.execute(RAW_SEARCH, (match_expression(terms(text)), 10)).fetchall()
    ours, raw = [], []
    for i, text in enumerate(words):  # interleaved, alternating who goes first (the second finds pages warm)
        for side in (("ours", "raw") if i % 2 == 0 else ("raw", "ours")):
            t0 = time.perf_counter()
            if side == "ours":
                await keyword(text)
                ours.append(time.perf_counter() - t0)
            else:
                probe.execute(RAW_SEARCH, (match_expression(terms(text)), 10)).fetchall()
                raw.append(time.perf_counter() - t0)
    probe.close()
    await adapter.aclose()
    print(f"  keyword p50 {ms(ours):.2f} ms, raw FTS5 MATCH ... ORDER BY bm25 p50 {ms(raw):.2f} ms: "
          f"{ms(ours) / ms(raw):.2f}x; load {load()}", flush=True)

    cli = None
    if cli_runs:
        command = [str(ARCANA), "recall", words[0], "--agent", "bench", "--mode", "keyword"]
        cli = ms(wall(command, cli_env(home.root), cli_runs))
        print(f"  arcana recall --mode keyword wall p50 {cli:.0f} ms (median of {cli_runs})", flush=True)
    return {"size": n, "semantic": ms(semantic), "recall": recall, "exact": ms(exact_times), "keyword": ms(ours),
            "raw_fts": ms(raw), "hybrid": ms(hybrid), "cli": cli}


def bench_ingest(n: int, root: Path) -> None:
    """``remember --from`` of ``n`` lines, keyword-only, in its own process (bench_peak_rss.py), against
    raw batched INSERTs of the same contents into the same table (bench_store.py)."""
    root.mkdir()
    source = lines_file(n, root)
    peak, seconds = measure(f"remember --from, {n:,} lines (keyword-only)",
                            ["remember", "--from", str(source), "--agent", "a", "--no-reconcile"], keyword_home(root))
    raw = raw_create(root / "raw.db")
    started = time.perf_counter()
    for start in range(0, n, CHUNK):
        raw_batch(raw, [MemoryEntry(agent_id="a", content=line(i)) for i in range(start, min(n, start + CHUNK))],
                  batch=WRITE_BATCH)
    raw_s = time.perf_counter() - started
    raw.close()
    print(f"remember --from {n / seconds:,.0f} lines/s (whole command, start-up included), raw batched INSERTs "
          f"{n / raw_s:,.0f} rows/s ({WRITE_BATCH:,} a transaction, as the store commits; entries built in the timing too): {raw_s / seconds:.2f}x (target >= 0.5x); "
          f"peak RSS {peak} MiB (target <= 500); load {load()}", flush=True)


async def main(sizes: list[int], n_queries: int, cli_runs: int, from_lines: int) -> None:
    model = FastEmbedEmbedder(models_root=models_root())
    await model.health_check()
    print(f"sizes {sizes}; {os.cpu_count()} cpus (shared); {PLANTED} planted real-embedded answers; "
          f"compact index from {compact.SEARCH_FROM:,} vectors; load {load()}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="arcana-bench-scale-") as tmp:
        for n in sizes:
            results.append(await bench_size(n, n_queries, cli_runs, Path(tmp), model))
        if from_lines:
            print(flush=True)
            bench_ingest(from_lines, Path(tmp) / "ingest")
    smallest = results[0]
    if cli_runs and len(results) > 1:
        for r in results[1:]:
            print(f"arcana recall --mode keyword wall at {r['size']:,}: {r['cli']:.0f} ms, "
                  f"{r['cli'] - smallest['cli']:+.0f} ms against {smallest['size']:,} (target <= +50 ms at 1M vs 10k)")
    for r in results:
        print(f"size={r['size']} semantic_p50_ms={r['semantic']:.2f} recall_at_10={r['recall']:.3f} "
              f"exact_p50_ms={r['exact']:.2f} keyword_p50_ms={r['keyword']:.2f} raw_fts_p50_ms={r['raw_fts']:.2f} "
              f"hybrid_p50_ms={r['hybrid']:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--cli-runs", type=int, default=5, help="Runs of `arcana recall` per size (0: skip).")
    parser.add_argument("--from-lines", type=int, default=100_000, help="Lines for the `remember --from` part (0: skip).")
    args = parser.parse_args()
    asyncio.run(main(args.sizes, args.queries, args.cli_runs, args.from_lines))
