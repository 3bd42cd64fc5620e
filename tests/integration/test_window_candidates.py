"""A reconciled window's candidate search, the index read once for the window (VectorAdapter.prime with
``neighbours``), finds what each line's own search finds: real SQLite, sqlite-vec and the offline model."""

from __future__ import annotations

import pytest
from factories import entries_for

from memory.adapters.sqlite import SQLiteAdapter
from memory.adapters.vector import VectorAdapter
from memory.embedding.gateway import EmbeddingGateway
from memory.types import MemoryQuery

AGENT = "agent-1"
entry = entries_for(AGENT)
STORED = [f"{who} {what} on {day}" for who in ("Caroline", "Melanie", "the team", "my sister")
          for what in ("went to the pride parade", "painted a sunset", "moved to Lisbon", "adopted a dog",
                       "started a pottery class", "ran a charity race")
          for day in ("Monday", "the weekend", "8 May")]
LINES = ["Caroline went to a pride parade last weekend", "Melanie painted a sunrise", "we moved to Lisbon",
         "my sister adopted a puppy", "a completely different topic about tax forms", "Caroline went to a pride parade last weekend"]
LIMIT = 5


@pytest.fixture
async def adapter(tmp_path, offline_embedder):
    store = SQLiteAdapter(tmp_path / "memory.db", actor="test")
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    await vectors.write_many([entry(text) for text in STORED])
    yield vectors
    await store.aclose()


async def found(adapter: VectorAdapter, text: str) -> list[tuple[str, float]]:
    hits = await adapter.similar(MemoryQuery(agent_id=AGENT, text=text, limit=LIMIT), LIMIT, 0.3)
    return [(h.id, h.score) for h in hits]


async def test_the_windows_search_finds_each_lines_candidates(adapter):
    await adapter.prime(LINES)  # vectors only: each line searched on its own
    own = [await found(adapter, line) for line in LINES]
    await adapter.prime(LINES, LIMIT)
    assert len(adapter._nearest) == len(set(LINES))  # every line was found in the window's one pass
    assert [await found(adapter, line) for line in LINES] == own
    assert all(own[:4])  # positive control: the lines with near memories have candidates


async def test_a_write_after_the_window_is_seen_by_the_next_search(adapter):
    line = "Melanie painted a sunrise"
    await adapter.prime([line], LIMIT)
    nearer = entry("Melanie painted a sunrise today")
    await adapter.write_many([nearer])  # another text: the line's primed vector and window answer stay
    assert (await found(adapter, line))[0][0] == nearer.id  # not the window's stale answer


async def test_a_store_with_nothing_embedded_says_it_cannot_search(tmp_path, offline_embedder):
    """None, not [], so reconciliation searches by keyword instead (memory.reconcile.candidates)."""
    store = SQLiteAdapter(tmp_path / "empty.db", actor="test")
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    try:
        await store.write_many([entry("Melanie painted a sunset")])  # rows, but no vector index yet
        query = MemoryQuery(agent_id=AGENT, text="Melanie painted a sunrise", limit=LIMIT)
        assert await vectors.similar(query, LIMIT, 0.3) is None
        await vectors.write_many([entry("Melanie painted a sunrise on Monday")])
        assert await vectors.similar(query, LIMIT, 0.3)  # positive control: once embedded, it finds
    finally:
        await store.aclose()


async def test_a_window_whose_nearest_rows_are_hidden_goes_on_to_admitted_ones(adapter):
    """The window finds only a few rows ahead per line (memory.sqlite.semantic.ahead_k); when
    admission turns those away the search goes further, as a line's own search does."""
    line = "Caroline went to a pride parade last weekend"
    await adapter.prime([line])
    nearest = [h.id for h in await adapter.similar(MemoryQuery(agent_id=AGENT, text=line, limit=40), 40, 0.0)]
    await adapter.store.archive(nearest[:12])  # more than the window found ahead of each line
    own = await found(adapter, line)
    await adapter.prime([line], LIMIT)
    assert len(adapter._nearest) == 1  # found in the window's pass ...
    assert await found(adapter, line) == own  # ... and the same answer past the hidden rows
    assert len(own) == LIMIT and not set(nearest[:12]) & {i for i, _ in own}  # positive control


async def test_a_row_one_line_of_the_window_read_is_admitted_again_for_the_next(adapter):
    """The window's lines share the rows they read (memory.sqlite.semantic.Read), each under its own
    clause: a line asking for another agent's memories gets none of the rows the first line read."""
    lines = ["Caroline went to a pride parade last weekend", "Caroline went to the pride parade"]
    await adapter.prime(lines, LIMIT)
    mine = await found(adapter, lines[0])
    other = await adapter.similar(MemoryQuery(agent_id="agent-2", text=lines[1], limit=LIMIT), LIMIT, 0.3)
    assert other == []
    again = await found(adapter, lines[1])
    assert mine and {i for i, _ in mine} & {i for i, _ in again}  # positive control: the rows are shared ...
    assert dict(again) != dict(mine)  # ... each scored for its own line


async def test_a_windows_lines_read_the_pin_once_for_the_window(adapter):
    """The lines found ahead are searched under the pin read for the window (VectorAdapter._found_ahead),
    not each reading it again, and answer what each line's own search answers."""
    await adapter.prime(LINES)  # vectors only: each line searched on its own, reading the pin itself
    statements: list[str] = []
    adapter.store.connection._connection.set_trace_callback(statements.append)
    own = [await found(adapter, line) for line in LINES]
    per_line = sum("FROM embedding_meta" in s for s in statements)
    await adapter.prime(LINES, LIMIT)
    statements.clear()
    assert [await found(adapter, line) for line in LINES] == own
    assert sum("FROM embedding_meta" in s for s in statements) == 0
    assert per_line >= len(LINES) and all(own[:4])  # control: searched on its own, each line reads the pin
