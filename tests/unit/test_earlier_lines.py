"""An import's earlier lines, found by their text or slot (memory.reconcile.batch.Earlier), give the
candidates a scan of every earlier line gives; a cached parse hands out lists of its own."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.reconcile.batch import Earlier
from memory.reconcile.languages import get_slots
from memory.reconcile.slots import parse
from memory.types import MemoryEntry

PATTERNS = get_slots("en")
STATEMENTS = [
    "I live in Berlin.",
    "I moved to Lisbon.",
    "I live in Berlin.",
    "My manager is Ana.",
    "My manager is Miguel now.",
    "My sister's phone is 555-0101.",
    "I have a cat.",
    "I no longer have a cat.",
    "The deploy runs at 9.",
    "We had pizza on Friday.",
]


def scanned(earlier: list[MemoryEntry], entry: MemoryEntry, seen: set[str], limit: int) -> list[str]:
    """The candidates as the import found them before the index: every earlier line, latest first."""
    parsed, norm = parse(entry.content, PATTERNS)
    slots = {(s.key, f.attribute) for f, s in parsed}
    found = []
    for line in reversed(earlier):
        line_parsed, line_norm = parse(line.content, PATTERNS)
        line_slots = {(s.key, f.attribute) for f, s in line_parsed}
        if line.id in seen or line.agent_id != entry.agent_id or not (line_norm == norm or slots & line_slots):
            continue
        found.append(line.id)
        if len(found) >= limit:
            break
    return found


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.tuples(st.sampled_from(STATEMENTS), st.sampled_from(["a", "b"])), min_size=1, max_size=30),
    limit=st.integers(1, 4),
    seen_every=st.integers(2, 5),
)
def test_indexed_lines_are_the_scanned_ones(lines, limit, seen_every):
    entries = [MemoryEntry(agent_id=agent, content=text) for text, agent in lines]
    earlier = Earlier(PATTERNS, {})
    for i, entry in enumerate(entries):
        seen = {e.id for e in entries[:i:seen_every]}
        parsed, norm = parse(entry.content, PATTERNS)
        got = [line.id for line, _ in earlier.candidates(entry, parsed, norm, seen, limit)]
        assert got == scanned(entries[:i], entry, seen, limit)
        earlier.add(entry)


def test_a_line_finds_the_earlier_line_of_its_slot_and_not_others():
    berlin, cat, other_agent = (MemoryEntry(agent_id=a, content=t) for a, t in
                                (("a", "I live in Berlin."), ("a", "I have a cat."), ("b", "I live in Paris.")))
    earlier = Earlier(PATTERNS, {})
    for line in (berlin, cat, other_agent):
        earlier.add(line)
    lisbon = MemoryEntry(agent_id="a", content="I moved to Lisbon.")
    parsed, norm = parse(lisbon.content, PATTERNS)
    assert [line.id for line, _ in earlier.candidates(lisbon, parsed, norm, set(), 5)] == [berlin.id]


def test_a_cached_parse_is_a_list_of_its_own():
    first, _ = parse("I moved to Lisbon.", PATTERNS)
    assert first  # positive control: the statement has a slot
    first.clear()
    again, _ = parse("I moved to Lisbon.", PATTERNS)
    assert again and again[0][0].value == "lisbon"
