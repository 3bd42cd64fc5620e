"""Semantic recall benchmarks, each against a baseline measured in the same run.

1. Embedded ingest: VectorAdapter.write_many (rows + ledger + vectors, committed
   in batches) vs raw fastembed on the same texts at its best batching.
2. Semantic search p50 at 10k and 50k entries vs a raw sqlite-vec KNN query on
   the same index. Building 50k model embeddings takes minutes on 2 cores, so
   this part stores random unit vectors (an in-process embedder of width 384)
   and both sides get the same precomputed query vector: it measures the
   search path, not the model.
3. ``arcana recall --mode hybrid`` wall time vs a bare ``import fastembed`` +
   model load + one embedding, both in fresh interpreters.

Run: python tests/bench/bench_semantic.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cli_env import cli_env  # noqa: E402

from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.adapters.vector import COMMIT_BATCH, VectorAdapter  # noqa: E402
from memory.embedding.gateway import EmbeddingGateway  # noqa: E402
from memory.types import HealthStatus, MemoryEntry, MemoryQuery, RetrievalMode  # noqa: E402

WORDS = (
    "the user said they would like to move the meeting to next week because their daughter has a school play "
    "and also mentioned that the budget review went well but the printer on floor two is still broken again "
    "we talked about travel plans to Lisbon in spring and whether the new laptop battery lasts long enough"
).split()


def turns(n: int, seed: int = 1) -> list[str]:
    """Conversational-turn-like texts, ~124 characters on average, lengths varying 30..300."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        target = int(min(300, max(30, rng.gauss(124, 60))))
        words = []
        while len(" ".join(words)) < target:
            words.append(rng.choice(WORDS))
        out.append(" ".join(words).capitalize() + ".")
    return out


class RandomUnitEmbedder:
    """Random unit vectors of width 384: lets the search bench fill 50k rows in seconds."""

    model_name = "bench-random-384"
    model_family = "bench-random-384"
    dimension = 384

    def __init__(self, seed: int = 5):
        self.rng = random.Random(seed)

    def vector(self) -> list[float]:
        v = [self.rng.gauss(0, 1) for _ in range(384)]
        norm = sum(x * x for x in v) ** 0.5
        return [x / norm for x in v]

    async def embed(self, texts):
        return [self.vector() for _ in texts]

    async def health_check(self) -> HealthStatus:
        return HealthStatus(healthy=True)


class Precomputed:
    """Hands a search the query vector computed beforehand (by text, else ``current``), as ``like``'s model,
    so a timing measures the search path, not the model."""

    def __init__(self, like, vectors: dict[str, list[float]] | None = None):
        self.model_name, self.model_family, self.dimension = like.model_name, like.model_family, like.dimension
        self.vectors = vectors or {}
        self.current: list[float] = []

    async def embed(self, texts):
        return [self.vectors.get(t, self.current) for t in texts]

    async def health_check(self) -> HealthStatus:
        return HealthStatus(healthy=True)


def models_root() -> Path:
    return Path(os.environ.get("ARCANA_HOME", Path.home() / ".arcana")) / "models"


async def bench_ingest(n: int) -> None:
    from fastembed import TextEmbedding

    from memory.embedding import offline_model
    from memory.embedding.fastembed import FastEmbedEmbedder

    texts = turns(n)
    model = TextEmbedding(offline_model.MODEL_NAME, specific_model_path=str(offline_model.model_dir(models_root())))
    list(model.embed(texts[:8]))  # warm up
    raw = {}
    for label, batch, ordered in (("batch 1", 1, texts), ("batch 32", 32, texts),
                                  ("batch 32 sorted", 32, sorted(texts, key=len))):
        started = time.perf_counter()
        if batch == 1:
            for text in ordered:
                list(model.embed([text], batch_size=1))
        else:
            for i in range(0, len(ordered), batch):
                list(model.embed(ordered[i : i + batch], batch_size=batch))
        raw[label] = n / (time.perf_counter() - started)
    best_label = max(raw, key=raw.get)
    for label, rate in raw.items():
        print(f"  raw fastembed {label:<16} {rate:7.1f} texts/s")

    embedder = FastEmbedEmbedder(models_root=models_root())
    await embedder.health_check()
    with tempfile.TemporaryDirectory() as tmp:
        adapter = VectorAdapter(SQLiteAdapter(Path(tmp) / "ingest.db"), EmbeddingGateway([embedder]))
        entries = [MemoryEntry(agent_id="bench", content=t) for t in texts]
        started = time.perf_counter()
        report = await adapter.write_many(entries)
        ours = n / (time.perf_counter() - started)
        await adapter.aclose()
    assert report.embedded == n
    print(f"  VectorAdapter.write_many       {ours:7.1f} entries/s (rows + ledger + vectors, committed per {COMMIT_BATCH})")
    print(f"  ratio vs best raw ({best_label}): {ours / raw[best_label]:.2f}x (target >= 1.0)")


async def bench_search(sizes: list[int], queries: int = 50) -> None:
    for size in sizes:
        embedder = RandomUnitEmbedder()
        with tempfile.TemporaryDirectory() as tmp:
            adapter = VectorAdapter(SQLiteAdapter(Path(tmp) / "search.db"), EmbeddingGateway([embedder]), commit_batch=2000)
            started = time.perf_counter()
            await adapter.write_many([MemoryEntry(agent_id="bench", content=t) for t in turns(size, seed=size)])
            built = time.perf_counter() - started
            meta = await adapter.meta()
            vectors = [embedder.vector() for _ in range(queries)]

            fixed = Precomputed(embedder)
            adapter.gateway = EmbeddingGateway([fixed])
            adapter._resolved.clear()
            ours, raw = [], []
            for vector in vectors:
                fixed.current = vector
                blob = struct.pack("384f", *vector)
                sql = f"SELECT rowid, distance FROM {meta.vec_table} WHERE embedding MATCH ? AND k = 10 ORDER BY distance"
                t0 = time.perf_counter()
                await adapter.store.run(lambda r, b=blob: r.execute(sql, (b,)).fetchall())
                raw.append(time.perf_counter() - t0)
                q = MemoryQuery(agent_id="bench", text="x", retrieval_mode=RetrievalMode.semantic, limit=10)
                t0 = time.perf_counter()
                found = await adapter.search(q)
                ours.append(time.perf_counter() - t0)
                assert len(found) == 10
            await adapter.aclose()
        p_ours, p_raw = statistics.median(ours) * 1000, statistics.median(raw) * 1000
        print(f"  {size:>6} entries (built in {built:.1f}s): semantic search p50 {p_ours:6.2f} ms, "
              f"raw sqlite-vec KNN p50 {p_raw:6.2f} ms, ratio {p_ours / p_raw:.2f}x (target <= 1.5)")


def _wall(args: list[str], env: dict, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def bench_recall_wall(runs: int) -> None:
    from memory.adapters.opener import vector_adapter
    from memory.agents import AgentRegistry
    from memory.config import EmbeddingConfig
    from memory.embedding import offline_model
    from memory.home import Home

    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        home.ensure()
        card = AgentRegistry(home).create("bench")
        adapter = vector_adapter(SQLiteAdapter.for_agent(card.id, home=home), EmbeddingConfig(), home)
        await adapter.write_many([MemoryEntry(agent_id=card.id, content=t) for t in turns(500)])
        await adapter.aclose()
        env = cli_env(home.root)
        model_dir = offline_model.model_dir(home.models_cache)
        bare = (
            "import fastembed; m = fastembed.TextEmbedding('sentence-transformers/all-MiniLM-L6-v2', "
            f"specific_model_path={str(model_dir)!r}); list(m.embed(['budget review']))"
        )
        base = _wall([sys.executable, "-c", bare], env, runs)
        arcana = str(Path(sys.executable).with_name("arcana"))
        ours = _wall([arcana, "recall", "budget review", "-a", "bench", "--mode", "hybrid"], env, runs)
    print(f"  bare import fastembed + load + 1 embedding: {base * 1000:6.0f} ms (median of {runs})")
    print(f"  arcana recall --mode hybrid (500 entries): {ours * 1000:6.0f} ms, "
          f"difference {(ours - base) * 1000:+.0f} ms (target <= +150 ms)")


async def main() -> None:
    quick = "--quick" in sys.argv
    print("1. embedded ingest")
    await bench_ingest(200 if quick else 1800)  # 1,800: more than one commit window
    print("2. semantic search latency (random unit vectors, width 384)")
    await bench_search([2_000] if quick else [10_000, 50_000])
    print("3. CLI hybrid recall wall time")
    await bench_recall_wall(3 if quick else 5)


if __name__ == "__main__":
    asyncio.run(main())
