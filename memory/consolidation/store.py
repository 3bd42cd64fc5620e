"""Consolidate one SQLite store in bounded memory: old episodes digested session by session, then
restatements found row by row through the keyword index, each decision applied in batches.

Nothing is planned whole: episodes are staged in digest order inside SQLite
and read a page at a time; then the current rows are read twice, once to
count how many hold each content word, once to ask the keyword index, for
each memory, for the rows holding its rarest words (at most ``CARRIERS``),
keeping only the pairs that restate each other. Each batch is one transaction
with its ledger rows (:func:`memory.sqlite.consolidation.apply_txn`), so a
killed run leaves every decision done or not done. Shared by ``arcana
consolidate`` (home-wide, under its lock: :mod:`memory.operations.consolidate`)
and the job ``arcana run`` queues when the store has grown
(:mod:`memory.runtime.agent`).
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from memory.consolidation.plan import (
    Digest,
    Merge,
    Plan,
    Read,
    aged_out,
    keeper,
    lifted,
    union_tags,
    merge_of,
    restates,
    session_digests,
    sources_for,
)
from memory.progress import Progress
from memory.sqlite.consolidation import (
    Change,
    apply_txn,
    carrier_rows,
    current_extent,
    drop_stage,
    entries_of,
    skip,
    stage_episodes,
    staged_episodes,
    unembedded_digests,
    unpinned_contents,
    unpinned_page,
    vectors_of,
)
from memory.sqlite.fact_words import carries, claim, content_words
from memory.types import MemoryEntry

PAGE = 2_000
BATCH = 200  # decisions per transaction
CARRIERS = 200  # rows looked at per memory: a one-word memory in a big store stays a bounded lookup
ASKS = 20  # memories whose carrier rows are read at a time


async def consolidate_store(
    store, now: datetime, *, dry_run: bool = False, decisions: bool = False, embed=None, actor: str = "library",
    on_progress=None,
) -> tuple[int, Plan]:
    """Consolidate one SQLite store (an open or openable :class:`SQLiteAdapter`): ``(current rows, plan)``.

    The plan counts; with ``decisions``, a dry run's plan also lists each decision.
    ``embed(ids)`` gives each batch's digests their vectors (``VectorAdapter.complete``), first
    those a killed run committed without them; without it they are embedded by the next reindex
    or write. ``on_progress(done, total)`` counts rows read: the staged episodes, then every current row, twice.
    """
    await store.ensure_vec()  # stored vectors are read back when the store has an index
    if embed is not None and not dry_run and (unembedded := await store.run(unembedded_digests)):
        await embed(unembedded)  # a killed run's last digests: semantic recall found none of them
    scanned, upto = await store.run(current_extent)
    batches = _Batches(store, Plan(keep=dry_run and decisions), dry_run, embed, f"{actor}:consolidate")
    try:
        staged = await store.run(stage_episodes)
        progress = Progress(on_progress, staged + 2 * scanned)
        await _digest(store, now, batches, progress)
        await _merge(store, upto, batches, progress)
    finally:
        await store.run(drop_stage)
    await batches.flush()
    progress.total = progress.done  # the walk skips what was digested and what is pinned: the bar ends full
    progress.advance(0)
    return scanned, batches.plan


class _Batches:
    """Decisions applied ``BATCH`` at a time, or sooner once they hold ``PAGE`` memories (a merge
    may hold thousands), each batch one transaction; a dry run only records them."""

    def __init__(self, store, plan: Plan, dry_run: bool, embed, actor: str):
        self.store, self.plan, self.dry_run, self.embed, self.actor = store, plan, dry_run, embed, actor
        self.pending: list[Merge | Digest] = []
        self.held = 0

    async def add(self, decision: Merge | Digest) -> None:
        if self.dry_run:
            self.plan.add(decision)
            return
        self.pending.append(decision)
        self.held += 1 + len(decision.sources)
        if len(self.pending) == BATCH or self.held >= PAGE:
            await self.flush()

    def left_out(self) -> None:
        """A decision not made: a memory it would be made on changed since the walk read it."""
        self.plan.tally["changed"] += 1

    async def flush(self) -> None:
        """Apply the pending decisions; one a memory changed under (an operator's edit meanwhile) is
        left out and counted ``changed``."""
        if not self.pending:
            return
        pending, self.pending, self.held = self.pending, [], 0
        applied = await self.store.run(apply_txn, [_change(d) for d in pending], self.actor)
        for decision, done in zip(pending, applied, strict=True):
            if done:
                self.plan.add(decision)
            else:
                self.plan.tally["changed"] += 1
        writes = [d.entry.id for d, done in zip(pending, applied, strict=True) if done and isinstance(d, Digest)]
        if writes and self.embed is not None:
            await self.embed(writes)


def _change(decision: Merge | Digest) -> Change:
    """The decision as the store applies it, with the memories it was made on as they were read."""
    if isinstance(decision, Merge):
        read = [Read.of(decision.keep), *decision.sources]
        return Change({e.id: e.updated_at for e in read}, [(decision.keep.id, s.id) for s in decision.sources],
                      [s.id for s in decision.sources], keep=(decision.keep.id, decision.importance, decision.tags))
    gone = [*decision.sources, *decision.idle]
    return Change({e.id: e.updated_at for e in gone}, [(decision.entry.id, s.id) for s in decision.sources],
                  [e.id for e in gone], write=decision.entry)


async def _digest(store, now: datetime, batches: _Batches, progress: Progress) -> None:
    """Digest each session's aged-out episodes (a dry run sets them aside: the merge walk passes
    over them as it does over the archived rows of a real run)."""
    key, turns, after = None, [], 0

    async def close_session() -> None:
        digests = session_digests(turns, now)
        for digest in digests:
            await batches.add(digest)
        if batches.dry_run and digests:
            await store.run(skip, [e.id for digest in digests for e in (*digest.sources, *digest.idle)])

    while page := await store.run(staged_episodes, after, PAGE):
        for _, session, entry in page:
            if entry is None:
                continue  # unreadable (an outside edit): doctor names it, consolidation leaves it be
            group = (entry.agent_id, entry.scope, entry.pool_name, entry.visibility, session)
            if group != key:
                await close_session()
                key, turns = group, []
            if aged_out(entry, now):
                turns.append(entry)
        after = page[-1][0]
        progress.advance(len(page))
    await close_session()
    await batches.flush()  # the merge walk reads what is current: digested turns are archived by now


class WordCounts:
    """How many walked rows hold each content word, estimated in fixed memory: a count-min sketch
    of two rows of at most ``WIDTH`` counters, never below the true count.

    Exact counts grew with the store: a store whose rows each carry a code or an order number has
    about as many words as rows (consolidate --dry-run peaked at 85 MiB on 20,000 such rows, 134
    MiB on 300,000). The counts only order a memory's words for its carrier lookup, which checks
    every row it finds, so an estimate costs at most a lookup more, never a pair missed.
    """

    WIDTH = 1 << 21  # 16 MiB at most, both rows: about 7 tokens a counter at a million rows

    def __init__(self, rows: int):
        """Sized for at most ``rows`` rows: a small store holds a small sketch."""
        width = min(self.WIDTH, 1 << max(12, (2 * rows).bit_length()))
        self.mask = width - 1
        self.table = np.zeros((2, width), dtype=np.uint32)

    def update(self, words: list[str]) -> None:
        """Count ``words`` (one page's), each slot found from the low and the high half of its hash."""
        hashes = np.fromiter((hash(w) for w in words), dtype=np.int64, count=len(words)).view(np.uint64)
        mask = np.uint64(self.mask)
        np.add.at(self.table[0], (hashes & mask).astype(np.intp), 1)
        np.add.at(self.table[1], ((hashes >> np.uint64(32)) & mask).astype(np.intp), 1)

    def __getitem__(self, word: str) -> int:
        h = hash(word) & 0xFFFF_FFFF_FFFF_FFFF  # as the page's int64 hashes read unsigned
        return int(min(self.table[0, h & self.mask], self.table[1, (h >> 32) & self.mask]))


async def _frequencies(store, upto: int, progress: Progress) -> tuple[WordCounts, int]:
    """How many of the walked rows (seq at most ``upto``) hold each content word, and how many rows
    were walked."""
    held = WordCounts(upto)
    after = walked = 0
    while page := await store.run(unpinned_contents, after, upto, PAGE):
        after = page[-1][0]
        walked += len(page)
        progress.advance(len(page))
        held.update([word for _, content in page for word in content_words(content)])
    return held, walked


def _rarest(words: frozenset[str], held: WordCounts, rows: int) -> tuple[list[str], int]:
    """A memory's words rarest first, and how many of them to ask for first: as few as are expected
    (as if words were independent) to leave at most ``CARRIERS`` rows; more are asked when not."""
    counts = {w: held[w] for w in words}
    ordered = sorted(words, key=lambda w: (counts[w], w))
    expected, first = float(counts[ordered[0]]), 1
    while expected > CARRIERS and first < len(ordered):
        expected *= counts[ordered[first]] / max(rows, 1)
        first += 1
    return ordered, first


async def _restating(store, mine: dict, asks: list, upto: int) -> list[tuple[int, int]]:
    """The pairs ``(seq, other)`` where ``other`` restates the page's row ``seq`` or is restated by
    it, for ``asks`` (a few of the page's rows): at most ``ASKS * CARRIERS`` rows are in hand, and
    rows of the same text share their words, so a store that says one thing thousands of times
    stays as small as any other (the page's 400,000 carrier rows at once peaked at 424 MiB on
    5,000 copies of one sentence)."""
    found = await store.run(carrier_rows, asks, upto, CARRIERS)
    claims = {}
    pairs = []
    for seq, rows in found.items():
        said = mine[seq][2]
        for other, content in rows:
            if (other_said := claims.get(content)) is None:
                other_said = claims[content] = claim(content)
            if carries(other_said, said):
                pairs.append((seq, other, other_said))
    vectors = await store.run(vectors_of, sorted({other for _, other, _ in pairs}))
    return [(seq, other) for seq, other, other_said in pairs
            if restates(mine[seq][2], mine[seq][1], other_said, vectors.get(other))]


async def _merge(store, upto: int, batches: _Batches, progress: Progress) -> None:
    """Walk every current row once; union the pairs that restate each other; merge each cluster."""
    held, total = await _frequencies(store, upto, progress)
    parent: dict[int, int] = {}

    def root(seq: int) -> int:
        parent.setdefault(seq, seq)
        while parent[seq] != seq:
            parent[seq] = parent[parent[seq]]
            seq = parent[seq]
        return seq

    after = 0
    while page := await store.run(unpinned_page, after, upto, PAGE):
        after = page[-1][0]
        progress.advance(len(page))
        mine = {seq: (entry, vector, said) for seq, entry, vector in page
                if entry is not None and (said := claim(entry.content)).words}  # None: unreadable, left be
        asks = [(seq, entry, *_rarest(said.words, held, total)) for seq, (entry, _, said) in mine.items()]
        for start in range(0, len(asks), ASKS):
            for seq, other in await _restating(store, mine, asks[start:start + ASKS], upto):
                parent[root(seq)] = root(other)
    clusters: dict[int, list[int]] = {}
    for seq in parent:
        clusters.setdefault(root(seq), []).append(seq)
    groups = sorted(sorted(members) for members in clusters.values())
    start = 0
    while start < len(groups):  # clusters read together up to PAGE rows; a bigger one alone, a page at a time
        if len(groups[start]) > PAGE:
            await _merge_large(store, groups[start], batches)
            start += 1
            continue
        end, rows = start, 0
        while end < len(groups) and len(groups[end]) <= PAGE and rows + len(groups[end]) <= PAGE:
            rows += len(groups[end])
            end += 1
        chunk, start = groups[start:end], end
        entries = await store.run(entries_of, [seq for members in chunk for seq in members])
        for members in chunk:
            group = [entries[seq] for seq in members if seq in entries]
            if group and _drifted(group, _group(group[0])):
                batches.left_out()
            elif (merge := merge_of(group)) is not None:
                await batches.add(merge)


def _group(entry: MemoryEntry) -> tuple:
    """What the walk pairs memories within: a merge never crosses it."""
    return entry.agent_id, entry.scope, entry.pool_name, entry.visibility, entry.type


def _drifted(entries: list[MemoryEntry], group: tuple) -> bool:
    """Whether any of a cluster's memories, read again to merge them, is no longer what the walk
    paired: out of ``group``, ended, pinned or held. Merges are applied after the walk (minutes on a
    large store), and their stamps are taken from this read: "I like tea." hidden in between was
    archived into the visible "I like tea with milk", which then answered with the hidden words."""
    return any(_group(e) != group or e.archived or e.valid_to is not None or e.pinned or e.conflict_with
               for e in entries)


async def _merge_large(store, members: list[int], batches: _Batches) -> None:
    """Merge a cluster of more than ``PAGE`` rows (one fact said thousands of times) as
    :func:`merge_of` would, reading it a page at a time: once for its keeper, once for what it
    carries, kept as ids (a cluster read whole peaked at 313 MiB on 50,000 copies of one sentence)."""
    pages = [members[i:i + PAGE] for i in range(0, len(members), PAGE)]

    async def read(page: list[int]) -> list:
        entries = await store.run(entries_of, page)
        return [entries[seq] for seq in page if seq in entries]

    keep = None
    for page in pages:
        keep = keeper([*([keep] if keep else []), *await read(page)])
    if keep is None:
        return
    sources, top, tags = [], keep.importance, keep.tags
    for page in pages:
        if _drifted(entries := await read(page), _group(keep)):  # these stamps are the ones checked
            batches.left_out()
            return
        if carried := sources_for(keep, entries):
            sources += [Read.of(s) for s in carried]
            top = max(top, *(s.importance for s in carried))
            tags = sorted({*tags, *union_tags([keep, *carried])})  # derived only if the keeper is: then all are
    if sources:
        await batches.add(Merge(keep, sources, lifted(top, len(sources)), tags))
