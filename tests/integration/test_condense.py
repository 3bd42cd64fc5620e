"""Prune under a byte budget condenses digests before it archives the only record of a fact, on real
stores with the real offline model (the prune order itself: tests/contract/test_store_prune.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory.adapters.vector import VectorAdapter
from memory.consolidation.store import consolidate_store
from memory.embedding.gateway import EmbeddingGateway
from memory.sqlite.condense import OP, condensed_text
from memory.sqlite.consolidation import sources_of
from memory.sqlite.rows import SELECT_COLUMNS, row_to_entry
from memory.types import MemoryEntry, MemoryQuery, MemoryType, PrunePolicy, RetrievalMode, Visibility

NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)
OLD = NOW - timedelta(days=60)

CHATTY = [  # one session's five turns: a long digest, least worth per byte
    "Caroline: I went to an LGBTQ support group yesterday and it was so powerful, honestly.",
    "Melanie: That sounds like it was a really meaningful evening for you, I am so glad you went there.",
    "Caroline: The transgender stories were so inspiring that I want to study counseling next year.",
    "Melanie: I painted a sunrise over the lake last weekend, it was a calm and quiet morning.",
    "Caroline: My grandmother gave me an amber necklace from Sweden when I was ten years old.",
]
TERSE = [  # another session's five: a short digest, worth more per byte
    "Melanie: I run pottery classes on Tuesdays.", "Caroline: Oscar eats salmon.", "Melanie: Kids love dinosaurs.",
    "Caroline: Camping trip to Yosemite.", "Melanie: Violin lessons Fridays.",
]


def turn(content: str, i: int, session: str, when: datetime = OLD, **kw) -> MemoryEntry:
    at = when + timedelta(seconds=i)
    return MemoryEntry(agent_id="ada", content=content, source_session_id=session, created_at=at, updated_at=at, **kw)


async def _current(store) -> dict[str, MemoryEntry]:
    rows = await store.run(lambda raw: raw.execute(f"SELECT {SELECT_COLUMNS} FROM memories m WHERE archived = 0").fetchall())
    return {e.id: e for e in map(row_to_entry, rows)}


def _bytes(entries) -> int:
    return sum(len(e.content.encode()) for e in entries)


@pytest.fixture
async def consolidated(store, offline_embedder):
    """Two digests (a chatty one, a terse one) and a recent, undigested fact of low worth per byte."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    recent = turn("Caroline: I think that maybe I might be adopting a puppy soon, perhaps.", 0, "s9",
                  when=NOW - timedelta(days=1), importance=0.1)
    await vectors.write_many([*(turn(t, i, "s1", tags=["chat"]) for i, t in enumerate(CHATTY)),
                              *(turn(t, i, "s2", when=OLD + timedelta(days=2)) for i, t in enumerate(TERSE)), recent])
    await consolidate_store(store, NOW, embed=vectors.complete)
    current = await _current(store)
    (chatty,) = [e for e in current.values() if "LGBTQ" in e.content]
    (terse,) = [e for e in current.values() if "pottery" in e.content]
    return vectors, chatty, terse, current[recent.id], _bytes(current.values())


async def test_a_byte_budget_condenses_a_digest_before_archiving_an_undigested_fact(store, consolidated):
    vectors, chatty, terse, recent, total = consolidated
    sources = await store.run(sources_of, [chatty.id])

    report = await store.prune(PrunePolicy(max_bytes=total - 20))
    await vectors.complete([c["id"] for c in report.condensations])  # as `arcana prune` does

    assert (report.archived, report.condensed) == (0, 1)
    current = await _current(store)
    assert recent.id in current  # the only record of a fact stays
    assert current[terse.id].content == terse.content  # positive control: only as much as the budget needs
    short = current[chatty.id]
    assert _bytes(current.values()) <= total - 20 and len(short.content) < len(chatty.content)
    assert short.content.startswith("On 2 April 2024: Caroline:") and "Melanie:" in short.content
    assert "amber" in short.content and "necklace" in short.content and "it was so" not in short.content
    # sources, edges, visibility, scope and tags as they were; the old text in the ledger's before-image
    assert await store.run(sources_of, [chatty.id]) == sources
    assert (short.visibility, short.scope, short.tags, short.type) == (Visibility.VISIBLE, chatty.scope, ["chat"],
                                                                       MemoryType.SEMANTIC)
    last = (await store.history(chatty.id))[-1]
    assert (last.op, last.before["content"], last.after["content"]) == (OP, chatty.content, short.content)
    assert report.condensations == [{"id": chatty.id, "bytes": [len(chatty.content.encode()), len(short.content.encode())],
                                     "content": short.content}]
    # re-embedded from its new text, and still found by a rare word of a source, either way
    assert (await vectors.status()).missing == 0
    for mode in (RetrievalMode.keyword, RetrievalMode.semantic, RetrievalMode.hybrid):
        found = await vectors.search(MemoryQuery(agent_id="ada", text="amber necklace from Sweden", retrieval_mode=mode,
                                                 limit=3))
        assert found and found[0].id == chatty.id, mode

    # a second prune at the same budget changes nothing
    ledger = len(await store.ledger())
    again = await store.prune(PrunePolicy(max_bytes=total - 20))
    assert (again.archived, again.condensed, len(await store.ledger())) == (0, 0, ledger)


async def test_without_a_byte_budget_or_within_it_nothing_is_condensed(store, consolidated):
    _, chatty, terse, recent, total = consolidated
    ledger = len(await store.ledger())
    for policy in (PrunePolicy(max_entries=2), PrunePolicy(max_bytes=total), PrunePolicy(min_importance=0.2)):
        report = await store.prune(policy.model_copy(update={"dry_run": True}))
        assert report.condensed == 0 and report.condensations == [], policy
    assert (await store.prune(PrunePolicy(max_entries=2))).victim_ids == [recent.id]  # rows: condensing frees none
    current = await _current(store)
    assert (current[chatty.id].content, current[terse.id].content) == (chatty.content, terse.content)
    assert [r.op for r in await store.ledger()][ledger:] == ["archive"]


async def test_a_dry_run_lists_its_condensations_and_changes_nothing(store, consolidated):
    _, chatty, _, _, total = consolidated
    ledger = len(await store.ledger())
    dry = await store.prune(PrunePolicy(max_bytes=total - 20, dry_run=True))
    assert dry.condensed == 1 and dry.condensations[0]["id"] == chatty.id
    assert (await _current(store))[chatty.id].content == chatty.content and len(await store.ledger()) == ledger
    real = await store.prune(PrunePolicy(max_bytes=total - 20))
    assert real.condensations == dry.condensations  # the dry run decided the same


async def test_when_condensing_every_digest_is_not_enough_the_order_takes_over(store, consolidated):
    """Past what the shortest digests free, the prune order archives as before: least worth per byte first."""
    _, chatty, terse, recent, _ = consolidated
    report = await store.prune(PrunePolicy(max_bytes=60))
    assert report.condensed == 2 and recent.id in report.victim_ids
    assert _bytes((await _current(store)).values()) <= 60


def test_condensed_text_keeps_date_speakers_and_the_rarest_words_of_each_turn():
    from collections import Counter

    digest = "On 8 May 2023: Caroline: I went to an LGBTQ support group. Melanie: I painted a sunrise over the lake."
    turns = ["Caroline: I went to an LGBTQ support group.", "Melanie: I painted a sunrise over the lake."]
    held = Counter({"went": 9, "support": 3, "group": 3, "lgbtq": 1, "painted": 4, "sunrise": 1, "lake": 2})
    assert condensed_text(digest, turns, held, 1.0) == (
        "On 8 May 2023: Caroline: went LGBTQ support group. Melanie: painted sunrise lake.")
    # at half, "group" and "support" tie on rarity: the first by spelling
    assert condensed_text(digest, turns, held, 0.5) == "On 8 May 2023: Caroline: LGBTQ group. Melanie: sunrise lake."
    assert condensed_text(digest, turns, held, 0.0) == "On 8 May 2023: Caroline: LGBTQ. Melanie: sunrise."
