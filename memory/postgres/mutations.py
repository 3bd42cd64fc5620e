"""The one way in for writes on PostgreSQL: every change to ``memories`` goes through here.

The same contract as memory/sqlite/mutations.py, on an asyncpg connection
inside the caller's transaction: read the before image (``FOR UPDATE``, so two
machines changing one row serialise), apply the change, read the after image,
append a ledger row. New ids go in with one ``INSERT ... SELECT unnest(...)``
round trip; ``ON CONFLICT DO NOTHING`` makes a racing insert of the same id an
update instead of an error.
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import Sequence
from dataclasses import dataclass

from memory.access import AccessBuffer
from memory.postgres import bulk
from memory.postgres.admission import numbered
from memory.errors import StaleEditError
from memory.ledger_image import encode
from memory.promotion import ASSERTED_IMPORTANCE_CAP
from memory.sqlite.mutations import (
    ERASED, GONE, REFUSED, change_label, counted, differs, linked_versions, never_looser, newer_fields, readable_records,
    split_by_time, stale_message, valid_start,
)
from memory.sqlite.rows import COLUMNS, entry_values
from memory.types import LedgerRecord, MemoryEntry, Visibility

SELECT_COLUMNS = ", ".join(f"m.{c}" for c in COLUMNS)
_SKIP_COMPARE = {"updated_at", "access_count", "last_accessed_at"}
_TYPES = {
    "importance": "float8", "confidence": "float8", "created_at": "float8", "updated_at": "float8",
    "last_accessed_at": "float8", "pinned": "int4", "access_count": "int8", "archived": "int4",
    "valid_from": "float8", "valid_to": "float8",
}
_ARRAYS = ", ".join(f"${i}::{_TYPES.get(c, 'text')}[]" for i, c in enumerate(COLUMNS, 1))
_INSERT_NEW = (
    f"INSERT INTO memories ({', '.join(COLUMNS)}) SELECT * FROM unnest({_ARRAYS}) "
    "ON CONFLICT (id) DO NOTHING RETURNING id"
)
_UPDATABLE = [c for c in COLUMNS if c not in ("id", "access_count", "last_accessed_at")]
_UPDATE_ROW = (
    f"UPDATE memories SET {', '.join(f'{c} = ${i}' for i, c in enumerate(_UPDATABLE, 2))} WHERE id = $1"
)
_row = operator.itemgetter(*COLUMNS)  # a values dict as a COPY row, in COLUMNS order
_STAGE = "arcana_stage"  # a temporary table per connection: a big batch's new rows, COPYed in
_LEDGER = (
    "INSERT INTO memory_ledger (memory_id, op, actor, at, before, after) "
    "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::text[], $6::text[])"
)
# The ledger rows of rows just COPYed in, their after images made by the server from the stored
# rows (``row_to_json`` of COLUMNS: the image :func:`memory.ledger_image.encode` makes of the same
# values, a test compares them), so Python need not serialise every row of a large load: that was
# half of its preparing.
_LEDGER_COPIED = (
    "INSERT INTO memory_ledger (memory_id, op, actor, at, before, after) "
    f"SELECT t.id, $1, $2, $3, NULL, row_to_json(t)::text FROM (SELECT {', '.join(COLUMNS)} FROM memories m "
    "WHERE {rows}) AS t"
)


def image(row) -> dict:
    return {c: row[c] for c in COLUMNS}


async def _images(conn, ids: Sequence[str], *, lock: bool = True) -> dict[str, dict]:
    sql = f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.id = ANY($1::text[])" + (" FOR UPDATE" if lock else "")
    return {row["id"]: image(row) for row in await conn.fetch(sql, list(ids))}


async def _append(conn, rows: list[tuple]) -> None:
    if rows:
        await conn.execute(_LEDGER, *(list(column) for column in zip(*rows, strict=True)))


async def _insert_copied(conn, batch: Prepared, *, op: str, actor: str, at: float, known: set[str] | None) -> set[str]:
    """COPY the new rows of ``batch`` in, each with its ledger row (:data:`_LEDGER_COPIED`); their ids.

    ``known``: the ids in the table, when the caller holds its exclusive lock
    for a large load (memory/postgres/bulk.py), so no other machine can
    change them meanwhile; the rest are COPYed straight into ``memories``
    (whose unique index on ``id`` the load builds at its end), the rows past
    the table's last ``seq`` are this batch's, and their ids join ``known``.
    Otherwise the rows go through a temporary staging table and
    ``INSERT ... ON CONFLICT DO NOTHING``, so a racing insert of the same id
    becomes an update instead of an error.
    """
    if known is not None:
        fresh = [record for record in batch.records if record[0] not in known]
        last = await conn.fetchval("SELECT coalesce(max(seq), 0) FROM memories")
        await conn.copy_records_to_table("memories", records=fresh, columns=list(COLUMNS))
        inserted = {record[0] for record in fresh}
        known |= inserted
        await conn.execute(_LEDGER_COPIED.format(rows="m.seq > $4"), op, actor, at, last)
        return inserted
    cols = ", ".join(COLUMNS)
    await conn.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE} ON COMMIT DELETE ROWS AS SELECT {cols} FROM memories WITH NO DATA"
    )
    await conn.copy_records_to_table(_STAGE, records=batch.records, columns=list(COLUMNS))
    rows = await conn.fetch(
        f"INSERT INTO memories ({cols}) SELECT {cols} FROM {_STAGE} ON CONFLICT (id) DO NOTHING RETURNING id, seq"
    )
    await conn.execute(f"TRUNCATE {_STAGE}")  # a second batch in this transaction starts empty
    await conn.execute(_LEDGER_COPIED.format(rows="m.seq = ANY($4::bigint[])"), op, actor, at, [r["seq"] for r in rows])
    return {r["id"] for r in rows}


@dataclass
class Prepared:
    """A batch's column values, made in Python before any statement (so a load can make the next
    batch's while the server applies this one: :func:`load`)."""

    values: list[dict]
    keep: list[bool]  # per value: its visibility was unset (an existing row keeps the stored one)
    imported: list[bool]  # per value: an import's, which never loosens the stored row
    firsts: dict[str, int]  # id -> index of its first value (a repeated id is an update of it)
    records: list[tuple] | None = None  # the first values as COPY rows, when there are enough for COPY


def prepare(entries: Sequence[MemoryEntry], copy: bool = False) -> Prepared:
    """``copy``: COPY rows whatever their number (a locked load, where ON CONFLICT has no index)."""
    values = [entry_values(e) for e in entries]
    keep = [v["visibility"] is None for v in values]
    for v in values:
        if v["visibility"] is None:
            v["visibility"] = Visibility.VISIBLE.value
    firsts: dict[str, int] = {}
    for index, v in enumerate(values):
        firsts.setdefault(v["id"], index)
    batch = Prepared(values, keep, [e.imported for e in entries], firsts)
    if copy or len(firsts) >= bulk.COPY_MIN:
        batch.records = [_row(values[i]) for i in firsts.values()]
    return batch


async def upsert(conn, entries: Sequence[MemoryEntry], actor: str, *, op: str | None = None) -> list[str]:
    """Insert or update ``entries`` by id; the op per entry ('noop' when unchanged).

    ``op`` names every ledger row this call writes (``import``), as on SQLite.
    A None visibility keeps the stored value (``visible`` for a new row), and a
    write never brings back an archived row, as on SQLite. New
    rows go in with one statement (for a big batch a COPY through a staging
    table, with their ledger rows: :func:`_insert_copied`); the rows that were
    there already are read once, compared, and only the changed ones updated.
    An ``imported`` entry never loosens a row nor brings back a removed id, as on SQLite.
    """
    return await _leaving_out_removed(conn, entries, lambda kept: _apply(conn, prepare(kept), actor, op))


_REMOVED = (
    "SELECT DISTINCT l.memory_id FROM memory_ledger l WHERE l.memory_id = ANY($1::text[]) AND l.after IS NULL "
    "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = l.memory_id)"
)


async def removed(conn, ids: Sequence[str]) -> set[str]:
    """The ids among ``ids`` that this store once held and removed and does not hold again."""
    return {r["memory_id"] for r in await conn.fetch(_REMOVED, list(ids))}


async def _leaving_out_removed(conn, entries: Sequence[MemoryEntry], write) -> list[str]:
    """``write(entries)`` but for an imported one whose id this store removed (:data:`GONE` for it).
    The imported ids' rows are locked first, so an operator's delete racing the check waits for
    this transaction instead of being undone by it."""
    ids = [e.id for e in entries if e.imported]
    if not ids:
        return await write(entries)
    await conn.execute("SELECT 1 FROM memories WHERE id = ANY($1::text[]) FOR UPDATE", ids)
    gone = await removed(conn, ids)
    ops = iter(await write([e for e in entries if not (e.imported and e.id in gone)]))
    return [GONE if e.imported and e.id in gone else next(ops) for e in entries]


async def load(
    conn, entries: Sequence[MemoryEntry], actor: str, *, op: str | None, size: int, locked: bool, on_progress=None
) -> list[str]:
    """:func:`upsert` ``entries`` ``size`` at a time in the caller's transaction, pipelined: a thread
    prepares the next batch while the server applies this one (preparing is Python's own work,
    which the server would otherwise sit through). ``locked``: the caller holds the table's
    exclusive lock; its ids are read once (it holds fewer rows than the load) instead of looked up
    per batch (see :func:`_insert_copied`)."""
    return await _leaving_out_removed(
        conn, entries, lambda kept: _load(conn, kept, actor, op=op, size=size, locked=locked, on_progress=on_progress)
    )


async def _load(conn, entries: Sequence[MemoryEntry], actor: str, *, op: str | None, size: int, locked: bool, on_progress
                ) -> list[str]:
    known = {r["id"] for r in await conn.fetch("SELECT id FROM memories")} if locked else None
    head = max(size // 10, 1)  # a small first batch: the server starts while Python prepares the next
    batches = [entries[:head]] + [entries[start : start + size] for start in range(head, len(entries), size)]
    ops: list[str] = []
    ready = prepare(batches[0] if batches else (), locked)
    for index in range(len(batches)):
        following = batches[index + 1] if index + 1 < len(batches) else ()
        done, ready = await asyncio.gather(
            _apply(conn, ready, actor, op, known=known), asyncio.to_thread(prepare, following, locked)
        )
        ops += done
        if on_progress:
            on_progress(len(ops), len(entries))
    return ops


_CHANGES_SINCE = (
    "SELECT * FROM memory_ledger WHERE memory_id = ANY($1::text[]) "
    "AND op <> 'import' AND at > $2 AND before IS NOT NULL AND after IS NOT NULL"
)


async def changes_since(conn, ids: Sequence[str], since: float) -> list[LedgerRecord]:
    """The changes to ``ids`` made after ``since`` other than by an import, as on SQLite."""
    return readable_records(await conn.fetch(_CHANGES_SINCE, list(ids), since))


async def _apply(conn, batch: Prepared, actor: str, op: str | None, *, known: set[str] | None = None) -> list[str]:
    now = time.time()
    values, keep, firsts = batch.values, batch.keep, batch.firsts
    logged = batch.records is not None  # the COPY path writes the inserts' ledger rows itself
    if logged:
        inserted = await _insert_copied(conn, batch, op=op or "insert", actor=actor, at=now, known=known)
    else:
        fresh = [values[i] for i in firsts.values()]
        inserted = {r["id"] for r in await conn.fetch(_INSERT_NEW, *([v[c] for v in fresh] for c in COLUMNS))}
    ledgered = inserted if logged else set()  # ids whose insert's ledger row the server wrote
    there = [i for i in firsts if i not in inserted]
    current = await _images(conn, there) if there else {}
    vanished = [i for i in there if i not in current and not batch.imported[firsts[i]]]
    if vanished:
        again, found = await _insert_vanished(conn, [values[firsts[i]] for i in vanished])
        inserted, current = inserted | again, current | found
    # An import line keeps what the store changed since it was written (memory/sqlite/mutations.py:
    # upsert), decided here under the rows' locks, so an operator's edit after the import's read stands.
    written = {v["id"]: v["updated_at"] for v, imported in zip(values, batch.imported, strict=True)
               if imported and v["id"] in current}  # rows there before: a new one has no change to keep
    newer = newer_fields(await changes_since(conn, list(written), min(written.values())), written) if (
        op == "import" and written) else {}
    ops: list[str] = []
    ledger: list[tuple] = []
    changed: list[dict] = []
    for index, v in enumerate(values):
        if v["id"] in inserted and firsts[v["id"]] == index:
            ops.append("insert")
            if v["id"] not in ledgered:
                ledger.append((v["id"], op or "insert", actor, now, None, encode(v)))
            current[v["id"]] = v  # what a later value of this id compares with (v is not changed again)
            continue
        if v["id"] not in current:  # an import's id deleted by another machine during this write: it stays gone
            ops.append(GONE)
            continue
        old = current[v["id"]]
        if old["agent_id"] != v["agent_id"]:
            ops.append(REFUSED)  # another agent's row: a write never changes who owns a memory
            continue
        if keep[index]:
            v["visibility"] = old["visibility"]
        if batch.imported[index]:
            never_looser(old, v)
        for name in newer.get(v["id"], ()):
            v[name] = old[name]
        v["archived"] = max(int(old["archived"]), int(v["archived"]))  # only restore() un-archives, as on SQLite
        v["access_count"], v["last_accessed_at"] = old["access_count"], old["last_accessed_at"]
        linked_versions(old, v, imported=batch.imported[index], newer=newer.get(v["id"], ()))
        if all(old[k] == v[k] for k in COLUMNS if k not in _SKIP_COMPARE):
            ops.append("noop")
            continue
        v["updated_at"] = now
        changed.append(v)
        label = change_label(old, v)
        ops.append(label)
        ledger.append((v["id"], op or label, actor, now, encode(old), encode(v)))
        current[v["id"]] = dict(v)
    if changed:
        await conn.executemany(_UPDATE_ROW, [(v["id"], *(v[c] for c in _UPDATABLE)) for v in changed])
    if len(ledger) >= bulk.COPY_MIN:
        await bulk.append_ledger(conn, ledger)
    else:
        await _append(conn, ledger)
    return ops


async def _insert_vanished(conn, fresh: list[dict]) -> tuple[set[str], dict[str, dict]]:
    """Insert again the rows another machine deleted after this write's INSERT found them there and
    before its read locked them (the read skips a row deleted meanwhile); the ids inserted, and the
    images of those found there again (re-created meanwhile, now locked).

    Trigger: an ordinary write racing a ``delete`` / ``purge`` / ``withdraw`` of the same id.
    Why: on SQLite the write lock orders the two, and a write after a delete inserts the row afresh.
    Outcome: the same here, instead of a KeyError that failed the whole batch.
    """
    inserted: set[str] = set()
    current: dict[str, dict] = {}
    while fresh:
        inserted |= {r["id"] for r in await conn.fetch(_INSERT_NEW, *([v[c] for v in fresh] for c in COLUMNS))}
        rest = [v for v in fresh if v["id"] not in inserted]
        current |= await _images(conn, [v["id"] for v in rest]) if rest else {}
        fresh = [v for v in rest if v["id"] not in current]
    return inserted, current


async def update(conn, ids: Sequence[str], op: str, actor: str, column: str, value, expect_seq: int | None = None) -> int:
    """Set ``column`` to ``value`` on ``ids``; one ledger row per row that changed.

    ``expect_seq`` (one id): refused unless it is the memory's newest ledger
    row, checked with the row locked, so a concurrent edit waits and is seen.
    """
    if column not in ("archived", "visibility", "pinned"):
        raise ValueError(f"not an operator-editable column: {column}")
    if expect_seq is not None:
        await conn.execute("SELECT 1 FROM memories WHERE id = $1 FOR UPDATE", ids[0])
        newest = await conn.fetchval("SELECT max(seq) FROM memory_ledger WHERE memory_id = $1", ids[0])
        if newest != expect_seq:
            raise StaleEditError(stale_message(ids[0], expect_seq, newest))
    return await _change(conn, ids, op, actor, f"{column} = ?", (value,))


async def supersede(conn, old_ids: Sequence[str], new_id: str, at: float, actor: str) -> list[str]:
    """End the still-current ``old_ids`` at ``at`` in favour of ``new_id`` ('supersede' / 'version'), as on SQLite
    (memory/sqlite/mutations.supersede: a version newer than ``at`` stays, and the new row ends before it)."""
    ended, later = split_by_time(await _images(conn, old_ids), at)
    if ended:
        await _change(conn, ended, "supersede", actor, "valid_to = ?, superseded_by = ?", (at, new_id))
        await _change(
            conn, [new_id], "version", actor,
            "valid_from = coalesce(valid_from, ?), supersedes = coalesce(supersedes, ?)", (at, ended[0]),
        )
    elif later is not None and await _change(
        conn, [new_id], "supersede", actor, "valid_from = coalesce(valid_from, ?), valid_to = ?, superseded_by = ?",
        (at, valid_start(later), later["id"]),
    ):
        await _change(conn, [later["id"]], "version", actor, "supersedes = coalesce(supersedes, ?)", (new_id,))
    return ended


async def make_current(conn, entry_id: str, actor: str) -> list[str]:
    """Undo a supersession or a held conflict (see memory/sqlite/mutations.make_current); the ids changed."""
    img = (await _images(conn, [entry_id])).get(entry_id)
    if img is None:
        return []
    changed = []
    if await _change(conn, [entry_id], "make_current", actor, "valid_to = NULL, superseded_by = NULL, conflict_with = NULL"):
        changed.append(entry_id)
    successor = img["superseded_by"]
    if successor and await _change(conn, [successor], "unversion", actor, "supersedes = NULL"):
        changed.append(successor)
    return changed


async def reinforce(
    conn, entry_id: str, actor: str, *, importance_step: float, confirm: float | None, asserted: bool = False
) -> int:
    """A restated fact: importance and access bumped, ledgered ('reinforce'), as on SQLite (an
    ``asserted`` restatement lifts importance no higher than ASSERTED_IMPORTANCE_CAP)."""
    live = "SELECT 1 FROM memories WHERE id = $1 AND archived = 0 AND valid_to IS NULL FOR UPDATE"
    if await conn.fetchval(live, entry_id) is None:
        return 0  # archived or ended since it was found restated, as on SQLite
    ceiling = ASSERTED_IMPORTANCE_CAP if asserted else 1.0
    assignments = (
        "importance = greatest(importance, least(?::float8, importance + ?)), "
        f"access_count = {counted('1', 'least')}, last_accessed_at = ?"
    )
    params: list = [ceiling, importance_step, time.time()]
    if confirm is not None:
        assignments += ", confidence_source = 'user_confirmed', confidence = greatest(confidence, ?), conflict_with = NULL"
        params.append(confirm)
    return await _change(conn, [entry_id], "reinforce", actor, assignments, params)


async def _change(conn, ids: Sequence[str], op: str, actor: str, assignments: str, params: Sequence = ()) -> int:
    """``UPDATE memories SET <assignments>`` (``?`` placeholders) on ``ids``; one ledger row per changed row."""
    now = time.time()
    before = await _images(conn, ids)
    if not before:
        return 0
    present = list(before)
    await conn.execute(
        f"UPDATE memories SET {numbered(assignments)} WHERE id = ANY(${len(params) + 1}::text[])", *params, present
    )
    after = await _images(conn, present, lock=False)
    changed = [mid for mid in present if differs(before[mid], after[mid])]  # only these are stamped, as on SQLite
    if changed:
        await conn.execute("UPDATE memories SET updated_at = $1 WHERE id = ANY($2::text[])", now, changed)
    ledger = [(mid, op, actor, now, encode(before[mid]), encode(after[mid] | {"updated_at": now})) for mid in changed]
    await _append(conn, ledger)
    return len(ledger)


async def delete(conn, ids: Sequence[str], op: str, actor: str) -> int:
    """Hard-delete ``ids`` (their vectors go by ON DELETE CASCADE), one ledger row each."""
    now = time.time()
    before = await _images(conn, ids)
    if not before:
        return 0
    present = list(before)
    await conn.execute("DELETE FROM memories WHERE id = ANY($1::text[])", present)
    await _append(conn, [(mid, op, actor, now, encode(before[mid]), None) for mid in present])
    if op == "purge":
        await conn.execute(_ERASE_WORDS, present, ERASED)
    return len(present)


# A purged memory's images lose its words as on SQLite (memory/sqlite/mutations.py): the after image's
# become ERASED; the before image's too, marked "(earlier …)" where that row changed them.
_SAME = "after IS NULL OR before::jsonb -> '{f}' IS NOT DISTINCT FROM after::jsonb -> '{f}'"
_ERASE_WORDS = (
    "UPDATE memory_ledger SET "
    "before = jsonb_set(jsonb_set(before::jsonb, '{content}', "
    f"to_jsonb(CASE WHEN {_SAME.format(f='content')} THEN $2::text ELSE $2::text || ' (earlier text)' END)), '{{tags}}', "
    f"to_jsonb(CASE WHEN {_SAME.format(f='tags')} THEN '[]' ELSE '[\"' || $2::text || ' (earlier tags)\"]' END))::text, "
    "after = jsonb_set(jsonb_set(after::jsonb, '{content}', to_jsonb($2::text)), '{tags}', to_jsonb('[]'::text))::text "
    "WHERE memory_id = ANY($1::text[])"
)


async def touch_access(conn, buffered: AccessBuffer) -> None:
    """Fold read hits into access_count / last_accessed_at and the recalls into
    ``recall_activity`` (unledgered bookkeeping, as on SQLite)."""
    await conn.executemany(
        f"UPDATE memories SET access_count = {counted('$1::int8', 'least')}, "
        "last_accessed_at = greatest(coalesce(last_accessed_at, 0), $2) WHERE id = $3",
        [(n, at, mid) for mid, (n, at) in buffered.hits.items()],
    )
    await conn.executemany(
        "INSERT INTO recall_activity (day, recalls, hits) VALUES ($1, $2, $3) ON CONFLICT (day) DO UPDATE SET "
        "recalls = recall_activity.recalls + excluded.recalls, hits = recall_activity.hits + excluded.hits",
        [(day, recalls, hits) for day, (recalls, hits) in buffered.days.items()],
    )


DECIDE_LOCK = 0x41524344  # 'ARCD': one reconciled write into a pool at a time (a pool is one database)


async def took_decision_lock(conn) -> bool:
    """Take the pool's decision lock for ``conn``'s open transaction if free now (the server lets go of
    it with the transaction, so a process killed holding it holds nothing)."""
    return await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", DECIDE_LOCK)
