"""Long vault notes: recall@5 / MRR@10 with and without chunk vectors, and what chunking costs to index.

    python tests/bench/bench_vault_chunks.py [--copies 2]

The corpus (tests/bench/vault_chunks_corpus.py) is 40 hand-written long notes
whose answer sits in the last section, past the first 256 MiniLM tokens (the
bench measures where each answer starts with the real tokenizer). "before"
is the same index with its chunk vectors removed: what the semantic leg saw
when a note was embedded from its beginning only. Indexing cost is measured
on ``--copies`` copies of the corpus, with chunking off and on, same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from vault_chunks_corpus import NOTES, note_text, questions  # noqa: E402


def write_corpus(root: Path, copies: int = 1) -> int:
    root.mkdir(parents=True)
    for copy in range(copies):
        for index in range(len(NOTES)):
            name, text = note_text(index)
            if copy:
                name = f"{name[:-3]} ({copy}).md"
            (root / name).write_text(text, encoding="utf-8")
    return copies * len(NOTES)


def token_report(models_root: Path) -> tuple[int, int]:
    """(fewest tokens before any note's answer, most tokens in any chunk) with the model's own tokenizer."""
    from tokenizers import Tokenizer

    from memory.embedding import offline_model
    from memory.embedding.chunking import embed_text, split

    tokenizer = Tokenizer.from_file(str(offline_model.model_dir(models_root) / "tokenizer.json"))
    tokenizer.no_truncation()  # count every token, not what the file's own limit keeps
    tokenizer.no_padding()
    before, largest = [], 0
    for index, (title, *_rest) in enumerate(NOTES):
        _, text = note_text(index)
        content = f"{title}\n\n{text.strip()}"  # as the vault stores it: title line, then the body
        heading = NOTES[index][2]
        before.append(len(tokenizer.encode(content[: content.index(f"## {heading}")]).ids))
        for span in split(content)[1:]:
            largest = max(largest, len(tokenizer.encode(embed_text(content, span)).ids))
    return min(before), largest


def embedded_texts(copies: int) -> tuple[list[str], list[str]]:
    """What an index embeds: each note's content, and the texts of its chunks past the first."""
    from memory.embedding.chunking import embed_text, split

    notes, pieces = [], []
    for copy in range(copies):
        for index, (title, *_rest) in enumerate(NOTES):
            _, text = note_text(index)
            content = f"{title}{f' ({copy})' if copy else ''}\n\n{text.strip()}"
            notes.append(content)
            pieces += [embed_text(content, span) for span in split(content)[1:]]
    return notes, pieces


async def score(vault, mode, gateway) -> tuple[float, float]:
    from memory.types import MemoryQuery, RetrievalMode
    from memory.vaults.search import search_vault

    hits5, reciprocal = 0, []
    for question, answer in questions():
        found = await search_vault(
            vault, MemoryQuery(text=question, retrieval_mode=RetrievalMode(mode), limit=10), expand=False, gateway=gateway
        )
        ranked = [found.paths.get(e.id) for e in found.entries]
        rank = ranked.index(answer) + 1 if answer in ranked else None
        hits5 += rank is not None and rank <= 5
        reciprocal.append(1 / rank if rank else 0.0)
    return hits5 / len(NOTES), statistics.mean(reciprocal)


async def drop_chunks(vault) -> None:
    from memory.vaults.indexer import open_store

    store = open_store(vault)
    try:
        await store.ensure_vec()

        def clear(raw):
            raw.execute("DELETE FROM memory_chunkvec_1")
            raw.execute("DELETE FROM memory_chunks")
            raw.commit()

        await store.run(clear)
    finally:
        await store.aclose()


async def timed_index(vault, gateway, *, chunks: bool) -> tuple[float, int]:
    """Seconds to index ``vault`` fully with chunking on or off (the indexer's adapter, switched)."""
    import memory.vaults.indexer as indexer

    original = indexer.vector_store

    def switched(*args, **kwargs):
        adapter = original(*args, **kwargs)
        adapter.chunk_long = chunks
        return adapter

    indexer.vector_store = switched
    try:
        started = time.perf_counter()
        report = await indexer.index_vault(vault, embed=True, gateway=gateway)
        return time.perf_counter() - started, report.added
    finally:
        indexer.vector_store = original


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=2, help="corpus copies for the indexing-cost figure")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="arcana-bench-chunks-"))
    os.environ["ARCANA_HOME"] = str(work / "home")
    from memory.config import load_config
    from memory.home import Home
    from memory.vaults.indexer import embedding_gateway, index_vault
    from memory.vaults.registry import VaultRegistry

    home = Home.resolve()
    home.ensure()
    registry = VaultRegistry(home)
    write_corpus(work / "eval")
    vault = registry.add(work / "eval", "eval")
    gateway = embedding_gateway(load_config(home.config_path), vault)
    await gateway.embedders[0].health_check()  # the model loads outside every timing
    fewest, largest = token_report(home.models_cache)
    print(f"corpus: {len(NOTES)} notes; every answer starts after >= {fewest} tokens; largest chunk {largest} tokens")

    report = await index_vault(vault, embed=True, gateway=gateway)
    print(f"indexed {report.added} notes, {report.embedded} note vectors")
    after = {mode: await score(vault, mode, gateway) for mode in ("semantic", "hybrid", "keyword")}
    await drop_chunks(vault)
    before = {mode: await score(vault, mode, gateway) for mode in ("semantic", "hybrid", "keyword")}
    print("\nmode       recall@5 before -> after   MRR@10 before -> after")
    for mode in after:
        (r0, m0), (r1, m1) = before[mode], after[mode]
        print(f"{mode:9}  {r0:.3f} -> {r1:.3f}             {m0:.3f} -> {m1:.3f}")

    rates = {}
    for chunks in (False, True):
        folder = work / f"cost-{chunks}"
        write_corpus(folder, args.copies)
        seconds, notes = await timed_index(registry.add(folder, f"cost{int(chunks)}"), gateway, chunks=chunks)
        rates[chunks] = notes / seconds
        print(f"\nindex {notes} notes, chunks {'on ' if chunks else 'off'}: {seconds:.2f}s = {rates[chunks]:.1f} notes/s")
    print(f"chunking costs {rates[False] / rates[True]:.2f}x the indexing time")
    notes, pieces = embedded_texts(args.copies)
    embedder = gateway.embedders[0]
    for label, texts in (("note texts (what chunks-off embeds)", notes), ("notes + chunks (chunks on)", notes + pieces)):
        started = time.perf_counter()
        await embedder.embed(sorted(texts, key=len))
        seconds = time.perf_counter() - started
        print(f"raw fastembed of the {label}: {len(texts)} texts in {seconds:.2f}s = {args.copies * len(NOTES) / seconds:.1f} notes/s")


if __name__ == "__main__":
    asyncio.run(main())
