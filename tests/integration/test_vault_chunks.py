"""Long vault notes are embedded in chunks: a late section is found semantically and shown as the
snippet; hidden notes never surface through a chunk; purge and edits keep chunk vectors in step."""

from __future__ import annotations

import json
import random

import pytest

from memory.embedding.chunking import CHUNK_CHARS, split
from memory.types import MemoryQuery, RetrievalMode, Visibility
from memory.vaults.indexer import index_vault, open_store
from memory.vaults.registry import VaultRegistry
from memory.vaults.search import search_vault

SCHEDULE = (
    "The committee met again on Thursday evening in the back room of the library. Most of the hour went to "
    "the calendar for next season, who keeps the shared spreadsheet current, and whether the newsletter should "
    "move to a monthly rhythm. Nobody objected to keeping the minutes in the same folder as before. "
)
KITCHEN = (
    "Dinner planning took longer than expected this week. We compared the shopping lists from the last three "
    "weekends, agreed to cook larger batches on Sunday, and wrote down who brings what to the potluck. "
)
GARDEN = (
    "# Allotment\n\n## Background\n\n" + SCHEDULE * 3 + "\n\n## Budget\n\n" + SCHEDULE * 3
    + "\n\n## Pests\n\nAphids covered the tomato plants in July. Spraying diluted neem oil every evening for a "
    "week got rid of them, and planting marigolds between the rows kept them from coming back.\n"
)
COOKING = (
    "# Household\n\n## Meals\n\n" + KITCHEN * 4 + "\n\n## Chores\n\n" + KITCHEN * 4
    + "\n\n## Car\n\nThe car failed its inspection because the rear brake pads were worn down to the metal; "
    "the garage replaced both pads and the discs for 240 euros.\n"
)
NOTES = {"Allotment.md": GARDEN, "Household.md": COOKING, "Tea.md": "# Tea\n\nA short note: we buy green tea in bulk."}


@pytest.fixture
def vault(make_vault, arcana_home):
    root = make_vault(NOTES, name="long")
    arcana_home.ensure()
    return VaultRegistry(arcana_home).add(root, "long")


@pytest.fixture
def warm(offline_embedder):
    """The session's loaded model as a gateway, so each test does not load its own copy."""
    from memory.embedding.gateway import EmbeddingGateway

    return EmbeddingGateway([offline_embedder])


def semantic(text: str, limit: int = 3) -> MemoryQuery:
    return MemoryQuery(text=text, retrieval_mode=RetrievalMode.semantic, limit=limit)


async def chunk_rows(vault) -> dict[str, list[tuple]]:
    store = open_store(vault)
    try:
        await store.ensure_vec()
        rows = await store.run(lambda raw: raw.execute(
            "SELECT m.id, c.id, c.chunk, (SELECT count(*) FROM memory_chunkvec_1 v WHERE v.rowid = c.id) "
            "FROM memory_chunks c LEFT JOIN memories m ON m.seq = c.seq ORDER BY c.seq, c.chunk"
        ).fetchall())
        vectors = await store.run(lambda raw: raw.execute("SELECT count(*) FROM memory_chunkvec_1").fetchone()[0])
    finally:
        await store.aclose()
    out: dict[str, list[tuple]] = {}
    for memory_id, chunk_id, number, has_vector in rows:
        out.setdefault(memory_id, []).append((chunk_id, number, has_vector))
    assert vectors == sum(v for chunks in out.values() for *_, v in chunks), "orphan chunk vectors"
    return out


def test_split_stays_within_budget_and_covers_every_word():
    rng = random.Random(3)
    for _ in range(100):
        parts = [rng.choice(["## Head\n", "word " * rng.randint(1, 400), ".\n\n", "x" * rng.randint(1, 2000), "\n"])
                 for _ in range(rng.randint(1, 40))]
        text = "".join(parts)
        spans = split(text)
        assert all(0 <= s.start < s.end <= len(text) and s.end - s.start <= CHUNK_CHARS for s in spans)
        assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
        covered = {i for s in spans for i in range(s.start, s.end)}
        assert all(i in covered for i, c in enumerate(text) if not c.isspace())
    sections = split(GARDEN)
    assert sections[-1].heading == "Pests" and GARDEN[sections[-1].start:].startswith("## Pests")
    assert split("short") == [split("short")[0]] and split("short")[0].end == 5


async def test_a_late_section_is_found_and_quoted(vault, warm):
    report = await index_vault(vault, embed=True, gateway=warm)
    assert report.embedded == 3
    hits = await search_vault(vault, semantic("how did we get rid of insects on the tomatoes"), expand=False, gateway=warm)
    top = hits.entries[0]
    assert hits.paths[top.id] == "Allotment.md" and "neem oil" in top.snippet and len(top.snippet) <= CHUNK_CHARS
    assert "neem" not in GARDEN[: split(GARDEN)[0].end]  # the answer is past what the note's own vector reads
    hits = await search_vault(vault, semantic("why did the vehicle fail its safety check"), expand=False, gateway=warm)
    assert hits.paths[hits.entries[0].id] == "Household.md" and "brake pads" in hits.entries[0].snippet
    # Positive control: a short note is found by its own vector, and it is its own snippet.
    hits = await search_vault(vault, semantic("buying tea leaves"), expand=False, gateway=warm)
    assert hits.paths[hits.entries[0].id] == "Tea.md"
    # Keyword and hybrid hits on a long note show the chunk that shares the query's words.
    for mode in (RetrievalMode.keyword, RetrievalMode.hybrid):
        hits = await search_vault(vault, MemoryQuery(text="marigolds rows", retrieval_mode=mode, limit=1), expand=False, gateway=warm)
        assert "marigolds" in hits.entries[0].snippet, mode


async def test_hidden_and_archived_notes_never_surface_through_a_chunk(vault, warm):
    await index_vault(vault, embed=True, gateway=warm)
    question = semantic("how did we get rid of insects on the tomatoes", limit=5)
    before = await search_vault(vault, question, expand=False, gateway=warm)
    assert "neem oil" in before.entries[0].snippet  # positive control: found while visible
    store = open_store(vault)
    try:
        garden = (await store.search(MemoryQuery(text="Allotment", limit=1)))[0].id
        await store.set_visibility([garden], Visibility.HIDDEN)
    finally:
        await store.aclose()
    hits = await search_vault(vault, question, expand=False, gateway=warm)
    assert garden not in {e.id for e in hits.entries}
    brakes = await search_vault(vault, semantic("worn brake pads"), expand=False, gateway=warm)
    assert "brake pads" in brakes.entries[0].snippet  # chunks of a visible note still work
    store = open_store(vault)
    try:
        await store.set_visibility([garden], Visibility.VISIBLE)
        await store.archive([garden])
    finally:
        await store.aclose()
    assert garden not in {e.id for e in (await search_vault(vault, question, expand=False, gateway=warm)).entries}


async def test_edits_rechunk_only_the_edited_note_and_removal_purges_its_chunks(vault, warm):
    await index_vault(vault, embed=True, gateway=warm)
    first = await chunk_rows(vault)
    assert len(first) == 2 and all(all(v == (n > 0) for _, n, v in rows) for rows in first.values())
    (vault.root / "Household.md").write_text(COOKING.replace("240 euros", "310 euros"))
    report = await index_vault(vault, embed=True, gateway=warm)
    assert (report.updated, report.embedded) == (1, 1)
    second = await chunk_rows(vault)
    garden = next(i for i in first if i != "" and len(first[i]) == len(second.get(i, [])) and first[i] == second[i])
    household = next(i for i in second if i != garden)
    assert second[household] != first[household]  # re-cut from the new content
    hits = await search_vault(vault, semantic("what did the brake repair cost"), expand=False, gateway=warm)
    assert "310 euros" in hits.entries[0].snippet
    assert (await index_vault(vault, embed=True, gateway=warm)).embedded == 0 and await chunk_rows(vault) == second
    (vault.root / "Household.md").unlink()
    assert (await index_vault(vault, embed=True, gateway=warm)).removed == 1
    third = await chunk_rows(vault)
    assert set(third) == {garden} and third[garden] == second[garden]
    store = open_store(vault)
    try:
        ops = await store.run(lambda raw: [r[0] for r in raw.execute("SELECT op FROM memory_ledger WHERE memory_id = ?",
                                                                        (household,))])
    finally:
        await store.aclose()
    assert ops[-1] == "purge"


async def test_an_index_from_before_chunking_gets_its_chunks(vault, warm):
    await index_vault(vault, embed=True, gateway=warm)
    store = open_store(vault)
    try:
        await store.ensure_vec()
        await store.run(lambda raw: (raw.execute("DELETE FROM memory_chunkvec_1"), raw.execute("DELETE FROM memory_chunks"),
                                     raw.execute("DELETE FROM vault_meta WHERE key = 'chunks'"), raw.commit()))
    finally:
        await store.aclose()
    assert await chunk_rows(vault) == {}
    report = await index_vault(vault, embed=True, gateway=warm)
    assert report.embedded == 0 and len(await chunk_rows(vault)) == 2


async def test_a_whole_store_chunk_fill_reads_a_page_of_long_memories_at_a_time(vault, warm):
    """Finding the long memories whose chunks are stale read every long memory's text at once (~3 KB
    a note, 44 MiB at 15,000 notes, with nothing to do); it now pages by seq, losing none."""
    from memory.sqlite import chunks

    await index_vault(vault, embed=True, gateway=warm)
    whole = await vectored_chunks(vault)
    store = open_store(vault)
    try:
        await store.ensure_vec()
        household = await store.run(lambda raw: raw.execute(
            "SELECT seq FROM memories WHERE content LIKE '%Household%'").fetchone()[0])
        await store.run(lambda raw: (raw.execute(
            "DELETE FROM memory_chunkvec_1 WHERE rowid IN (SELECT id FROM memory_chunks WHERE seq = ?)", (household,)),
            raw.execute("DELETE FROM vault_meta WHERE key = 'chunks'"), raw.commit()))
        pages, after = [], 0
        while after is not None:
            work, after = await store.run(chunks.stale_page, "memory_chunkvec_1", after, 1)
            pages.append([w.seq for w in work])
    finally:
        await store.aclose()
    # One long memory a page: Allotment (chunks current) gives an empty page, Household its work; Tea is short.
    assert sorted(pages) == [[], [], [household]]
    assert await vectored_chunks(vault) != whole
    report = await index_vault(vault, embed=True, gateway=warm)  # the paged fill puts back what was taken
    assert report.embedded == 0 and await vectored_chunks(vault) == whole


async def vectored_chunks(vault) -> dict[str, list[tuple[int, int]]]:
    """Each memory's (chunk number, has a vector): chunk ids change when chunks are made again."""
    return {m: [(number, v) for _, number, v in rows] for m, rows in (await chunk_rows(vault)).items()}


def test_vault_search_json_carries_the_snippet(cli, vault):
    assert cli("vault", "index", "long").exit_code == 0
    result = cli("vault", "search", "long", "aphids on tomato plants", "--mode", "semantic", "--json", "--no-expand")
    assert result.exit_code == 0, result.stderr
    results = json.loads(result.stdout)["results"]
    assert results[0]["path"] == "Allotment.md" and "neem oil" in results[0]["snippet"]
    assert "neem oil" in results[0]["content"] and len(results[0]["snippet"]) < len(results[0]["content"])
    short = [r for r in results if r["path"] == "Tea.md"]
    assert all(r["snippet"] == r["content"] for r in short)
