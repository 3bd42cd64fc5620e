"""Retrieval-quality evaluation: keyword vs semantic vs hybrid on our own data.

``pairs.tsv`` holds ~100 memories, each with a paraphrased query sharing no
(stemmed, non-stop) word with it and a keyword-friendly query; for memories
about a named person a "mixed" query adds the name to the paraphrase. 56
identifier memories (tickets, hosts, error codes among near-duplicates) are
queried by identifier. ``near_misses.txt`` adds a hard negative per target
(close in meaning, about someone else) and ~200 generated distractors reuse
the same names and topic words: about 450 entries. For every mode we report recall@5 and MRR (over the top 10).

Run: ``python tests/eval/retrieval_eval.py`` (prints the table and a weight
sweep). ``tests/integration/test_hybrid_eval.py`` asserts hybrid >= both legs.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.adapters.vector import VectorAdapter  # noqa: E402
from memory.ranking.fusion import hybrid_pool  # noqa: E402
from memory.embedding.gateway import EmbeddingGateway  # noqa: E402
from memory.ranking.fusion import SEED_WEIGHTS, Weights, fuse, fuse_rrf  # noqa: E402
from memory.query_terms import terms  # noqa: E402
from memory.sqlite.fts import match_expression  # noqa: E402
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode  # noqa: E402

PAIRS = Path(__file__).with_name("pairs.tsv")
NEAR_MISSES = Path(__file__).with_name("near_misses.txt")
AGENT = "eval"
TOP = 10


@dataclass(frozen=True)
class Case:
    target: str  # memory id
    query: str
    kind: str  # "paraphrase" or "keyword"


def load_pairs() -> list[tuple[str, str, str]]:
    rows = []
    for line in PAIRS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            memory, paraphrase, keyword = line.split("\t")
            rows.append((memory, paraphrase, keyword))
    return rows


def distractors(n: int = 200, seed: int = 7) -> list[str]:
    """Plausible filler that reuses names and topic words from the pairs."""
    rng = random.Random(seed)
    people = "Alice Bob Carol Dave Emma Frank Grace Henry Isabel Jack Kim Leo Mia Noah Olivia Paul".split()
    things = [
        "the user", "the team", "the database", "the laptop", "the office", "the printer", "the budget",
        "the API", "the garden", "the flight", "the report", "the coffee machine", "the cluster", "the app",
    ]
    verbs = [
        "was discussed in the weekly review", "needs a follow-up next month", "came up during lunch",
        "was mentioned in a support ticket", "is on the agenda for Friday", "got a new owner",
        "was compared with last year's numbers", "has an open question about cost", "was photographed for the blog",
        "was praised by a customer", "needs a second opinion", "appeared in the newsletter",
    ]
    out = set()
    while len(out) < n:
        out.add(f"{rng.choice(people)} said {rng.choice(things)} {rng.choice(verbs)}.")
    return sorted(out)


def near_misses() -> list[str]:
    """Hard negatives: close in meaning to a target, about someone or something else."""
    return [line for line in NEAR_MISSES.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def identifiers(seed: int = 11) -> list[tuple[str, str]]:
    """(memory, query) pairs keyed by an exact identifier among near-duplicates.

    Agents remember ticket numbers, hosts and error codes; such memories differ
    only by the identifier, which embeddings blur and keyword search nails.
    """
    rng = random.Random(seed)
    issues = ["the login timeout", "a slow checkout page", "the broken CSV export", "duplicate emails",
              "the flaky upload test", "a memory spike in workers"]
    hosts = ["the primary database", "the search index", "the cache", "the job queue", "the metrics store"]
    out = []
    for n in rng.sample(range(1000, 9999), 24):
        out.append((f"Ticket OPS-{n} tracks {rng.choice(issues)}.", f"OPS-{n}"))
    for n in rng.sample(range(10, 99), 16):
        out.append((f"Host db-{n}.internal runs {rng.choice(hosts)}.", f"what runs on db-{n}"))
    for n in rng.sample(range(100, 999), 16):
        out.append((f"Error E{n} means {rng.choice(issues)} happened again.", f"error E{n}"))
    return out


NAMES = frozenset(
    "Alice Bob Carol Dave Emma Frank Grace Henry Isabel Jack Kim Leo Mia Noah Olivia Paul Quinn Rachel Sam Tom "
    "Uma Victor Wendy Xavier Yara Zoe".split()
)


def mixed_query(memory: str, paraphrase: str) -> str | None:
    """The paraphrase plus the memory's person name: one shared word, the rest reworded."""
    first = memory.split()[0].removesuffix("'s")
    return f"{first} {paraphrase}" if first in NAMES else None


def overlapping_pairs() -> list[str]:
    """Paraphrases that share a stemmed content word with their memory (should be none)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='porter unicode61 remove_diacritics 2')")
    bad = []
    for memory, paraphrase, _ in load_pairs():
        conn.execute("DELETE FROM t")
        conn.execute("INSERT INTO t VALUES (?)", (memory,))
        match = match_expression(terms(paraphrase))
        if match and conn.execute("SELECT 1 FROM t WHERE t MATCH ?", (match,)).fetchone():
            bad.append(paraphrase)
    return bad


async def build(path: Path, embedder) -> tuple[VectorAdapter, list[Case]]:
    store = SQLiteAdapter(path)
    vectors = VectorAdapter(store, EmbeddingGateway([embedder]))
    entries, cases = [], []
    for memory, paraphrase, keyword in load_pairs():
        entry = MemoryEntry(agent_id=AGENT, content=memory)
        entries.append(entry)
        cases += [Case(entry.id, paraphrase, "paraphrase"), Case(entry.id, keyword, "keyword")]
        mixed = mixed_query(memory, paraphrase)
        if mixed:
            cases.append(Case(entry.id, mixed, "mixed"))
    for memory, query in identifiers():
        entry = MemoryEntry(agent_id=AGENT, content=memory)
        entries.append(entry)
        cases.append(Case(entry.id, query, "identifier"))
    entries += [MemoryEntry(agent_id=AGENT, content=text) for text in distractors() + near_misses()]
    random.Random(3).shuffle(entries)
    await vectors.write_many(entries)
    return vectors, cases


def _score(ranked: list[str], target: str) -> tuple[float, float]:
    if target not in ranked:
        return 0.0, 0.0
    rank = ranked.index(target) + 1
    return (1.0 if rank <= 5 else 0.0), 1.0 / rank


def _table(ranked_by_case: dict[Case, list[str]]) -> dict[str, tuple[float, float]]:
    """recall@5 and MRR per query kind and overall."""
    groups: dict[str, list[tuple[float, float]]] = {k: [] for k in ("paraphrase", "mixed", "keyword", "identifier", "all")}
    for case, ranked in ranked_by_case.items():
        score = _score(ranked, case.target)
        groups[case.kind].append(score)
        groups["all"].append(score)
    return {k: (sum(r for r, _ in v) / len(v), sum(m for _, m in v) / len(v)) for k, v in groups.items() if v}


async def evaluate(vectors: VectorAdapter, cases: list[Case]) -> dict[str, dict[str, tuple[float, float]]]:
    """Each mode through the adapter's own search path."""
    results = {}
    for mode in RetrievalMode:
        ranked = {}
        for case in cases:
            query = MemoryQuery(agent_id=AGENT, text=case.query, retrieval_mode=mode, limit=TOP)
            ranked[case] = [e.id for e in await vectors.search(query)]
        results[mode.value] = _table(ranked)
    return results


async def sweep(vectors: VectorAdapter, cases: list[Case], weights: list[Weights]) -> dict[str, dict]:
    """Fusion variants over the same two candidate pools: confidence-weighted min-max at each weight
    without ("fuse") and with ("cov", the default's) the keyword leg's coverage, and RRF."""
    pool = hybrid_pool(TOP)
    legs = {}
    for case in cases:
        semantic = await vectors.search(
            MemoryQuery(agent_id=AGENT, text=case.query, retrieval_mode=RetrievalMode.semantic, limit=pool)
        )
        query = MemoryQuery(agent_id=AGENT, text=case.query)
        keyword, coverage = await vectors.store.keyword_leg(query, terms(case.query), pool)
        legs[case] = (semantic, keyword, coverage)
    out = {}
    for w in weights:
        ranked = {c: [e.id for e in fuse(s, k, w, TOP)] for c, (s, k, _) in legs.items()}
        out[f"fuse v={w.vector:.1f}"] = _table(ranked)
    for w in weights:
        ranked = {c: [e.id for e in fuse(s, k, w, TOP, cov)] for c, (s, k, cov) in legs.items()}
        out[f"cov v={w.vector:.1f}"] = _table(ranked)
    ranked = {c: [e.id for e in fuse_rrf(s, k, TOP)] for c, (s, k, _) in legs.items()}
    out["rrf k=60"] = _table(ranked)
    return out


def _print(name: str, table: dict[str, tuple[float, float]]) -> None:
    cells = " | ".join(f"{r:.3f} {m:.3f}" for r, m in table.values())
    print(f"{name:<20}{cells}")


async def main() -> None:
    from memory.embedding.fastembed import FastEmbedEmbedder

    bad = overlapping_pairs()
    with tempfile.TemporaryDirectory() as tmp:
        embedder = FastEmbedEmbedder(models_root=Path.home() / ".arcana" / "models")
        vectors, cases = await build(Path(tmp) / "eval.db", embedder)
        total = await vectors.store.count()
        print(f"{total} memories, {len(cases)} queries; paraphrases sharing a word with their memory: {len(bad)}")
        print(f"{'':<20}" + " | ".join(f"{k[:11]:<11}" for k in ("paraphrase", "mixed", "keyword", "identifier", "all")))
        print(f"{'':<20}" + " | ".join("R@5   MRR  " for _ in range(5)))
        for mode, table in (await evaluate(vectors, cases)).items():
            _print(mode, table)
        print("-- fusion sweep (same candidate pools) --")
        grid = [Weights(v / 10, 1 - v / 10) for v in range(1, 10)]
        for name, table in (await sweep(vectors, cases, grid)).items():
            _print(name + (" (seed)" if name.endswith(f"{SEED_WEIGHTS.vector:.1f}") else ""), table)
        await vectors.aclose()


if __name__ == "__main__":
    asyncio.run(main())
