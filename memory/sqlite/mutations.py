"""The one way in for writes: every change to ``memories`` goes through here.

Each mutator runs inside the caller's transaction on the raw connection, reads
the before image, applies the change, reads the after image and appends a
ledger row — so a mutation without a ledger row cannot commit. A test greps the
tree to prove no other module issues INSERT, UPDATE or DELETE on ``memories``.

Access tracking (:func:`touch_access`) is the one deliberate exception: it is
bookkeeping about reads, not a change to what is remembered, and ledgering it
would turn every recall into a ledger write.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence

from memory.access import AccessBuffer
from memory.sqlite import chunks, compact, context, vectors
from memory.sqlite.batches import batches, marks, select_in
from memory.sqlite.rows import COLUMNS, STORED_COLUMNS, entry_values, repaired, row_image
from memory.errors import InvalidRequestError, NotFoundError, StaleEditError, UnreadableRowError
from memory.ledger_image import encode
from memory.progress import Progress
from memory.promotion import ASSERTED_IMPORTANCE_CAP
from memory.types import MAX_ACCESS_COUNT, RESTRICTION, LedgerRecord, MemoryEntry, Visibility

MUTATION_WINDOW = 2_000  # ids whose before and after images one step of a large edit holds
_SKIP_COMPARE = {"updated_at", "access_count", "last_accessed_at"}
# Version links change only through supersede / make_current: a re-save of an
# entry object (which may predate its supersession) never resurrects it.
VERSION_LINKS = ("valid_from", "valid_to", "supersedes", "superseded_by")
# ``context`` and ``dated`` are written with every row but are not among its
# COLUMNS: derived (memory/sqlite/context.py), they are neither ledgered nor compared.
_WRITTEN = (*COLUMNS, "context", "dated")
_PLACEHOLDERS = ", ".join(f":{c}" for c in _WRITTEN)
_INSERT_NEW = f"INSERT INTO memories ({', '.join(_WRITTEN)}) VALUES ({_PLACEHOLDERS}) ON CONFLICT(id) DO NOTHING"
_UPSERT = f"""
INSERT INTO memories ({", ".join(_WRITTEN)}) VALUES ({_PLACEHOLDERS})
ON CONFLICT(id) DO UPDATE SET
    {", ".join(f"{c} = excluded.{c}" for c in _WRITTEN if c not in ("id", "access_count", "last_accessed_at"))}
"""


REFUSED = "refused"
"""The op of a write that reused an id another agent's row holds: nothing changed, nothing ledgered.
Ids are visible to every reader of a shared tier, so without this any agent could rewrite (and take
over) another's pool or promoted memory by reusing its id."""

GONE = "gone"
"""The op of an imported entry whose id this store removed (deleted, purged, withdrawn) and does not
hold again: nothing written, it stays gone (see :func:`upsert`)."""

_REMOVED = (
    "SELECT DISTINCT l.memory_id FROM memory_ledger l WHERE l.memory_id IN ({marks}) AND l.after IS NULL "
    "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = l.memory_id)"
)


def removed(raw, ids: Sequence[str]) -> set[str]:
    """The ids among ``ids`` that this store once held and removed and does not hold again."""
    return {r[0] for r in select_in(raw, _REMOVED, list(ids))}


NEWER_WINS = ("content", "type", "importance", "tags", "confidence", "confidence_source")
"""What an operator (`memory set`) or the agent (reconciliation) re-words or re-weighs. An import line
older than such a change keeps the store's value; restrictions follow :func:`never_looser` instead."""

_CHANGES_SINCE = (
    "SELECT * FROM memory_ledger WHERE memory_id IN ({marks}) "
    "AND op <> 'import' AND at > ? AND before IS NOT NULL AND after IS NOT NULL"
)


def newer_fields(records: Iterable[LedgerRecord], written: Mapping[str, float]) -> dict[str, set[str]]:
    """id -> the :data:`NEWER_WINS` fields and :data:`VERSION_LINKS` that ``records`` (changes made other
    than by an import) changed after ``written[id]``, the time the import's line was written: every
    engine's one rule."""
    newer: dict[str, set[str]] = {}
    for record in records:
        if record.at.timestamp() <= written[record.memory_id]:
            continue
        changed = set(record.changed_fields()).intersection((*NEWER_WINS, *VERSION_LINKS))
        if changed:
            newer.setdefault(record.memory_id, set()).update(changed)
    return newer


def readable_records(rows: Iterable) -> list[LedgerRecord]:
    """The ledger rows that read; one an outside edit broke says nothing either way."""
    records = []
    for row in rows:
        try:
            records.append(LedgerRecord.from_row(row))
        except UnreadableRowError:
            continue
    return records


def changes_since(raw, ids: Sequence[str], since: float) -> list[LedgerRecord]:
    """The changes to ``ids`` made after ``since`` other than by an import (see :func:`newer_fields`)."""
    return readable_records(select_in(raw, _CHANGES_SINCE, list(ids), after=(since,)))


def written_at(entries: Iterable[MemoryEntry]) -> dict[str, float]:
    """id -> when each import line was written (its ``updated_at``), for :func:`newer_fields`."""
    return {e.id: e.updated_at.timestamp() for e in entries}


def _newer_than_lines(raw, entries: Sequence[MemoryEntry]) -> dict[str, set[str]]:
    """:func:`newer_fields` for import lines, read in the write's transaction."""
    written = written_at(entries)
    return newer_fields(changes_since(raw, list(written), min(written.values())), written) if written else {}


def never_looser(old: dict, new: dict) -> None:
    """Make an import's image ``new`` of the row ``old`` no less restricted: the stricter visibility,
    pinned if either is (archived already is, for every write). Lifting one is ``memory set`` /
    ``memory restore``, never an import line."""
    new["visibility"] = max(old["visibility"], new["visibility"], key=RESTRICTION.__getitem__)
    new["pinned"] = max(int(old["pinned"]), int(new["pinned"]))


def linked_versions(old: dict, new: dict, *, imported: bool, newer: Collection[str] = ()) -> None:
    """Keep ``old``'s :data:`VERSION_LINKS` in ``new``, the image written over it, but for one change.

    An ``imported`` line that ends a version the store holds current ends it here too (its
    ``valid_to`` and ``superseded_by``): a later export of the same store brings what its source
    replaced since, and both versions staying current would answer recall twice. Ending is one way
    (an older line never brings an ended version back), and a version the store re-linked after the
    line was written (``newer``: ``memory revert``, a supersession here) keeps the store's links.
    """
    ends = (imported and new["superseded_by"] is not None and old["superseded_by"] is None
            and old["valid_to"] is None and not set(VERSION_LINKS).intersection(newer))
    ended = new["valid_to"], new["superseded_by"]
    for key in VERSION_LINKS:
        new[key] = old[key]
    if ends:
        new["valid_to"], new["superseded_by"] = ended


def _images(raw, ids: Sequence[str]) -> dict[str, dict]:
    rows = select_in(raw, f"SELECT {STORED_COLUMNS} FROM memories m WHERE m.id IN ({{marks}})", ids)
    return {row["id"]: row_image(row) for row in rows}


def _append(raw, rows: list[tuple]) -> None:
    raw.executemany(
        "INSERT INTO memory_ledger (memory_id, op, actor, at, before, after) VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )


def change_label(before: dict, after: dict) -> str:
    """The ledger op an update is recorded as (every engine's ledger names changes alike)."""
    changed = {k for k in COLUMNS if before[k] != after[k]} - _SKIP_COMPARE
    if changed == {"visibility"}:
        return "visibility"
    if changed == {"pinned"}:
        return "pin"
    if changed == {"archived"}:
        return "restore" if not after["archived"] else "archive"
    return "update"


def valid_start(image: dict) -> float:
    """When a version began to hold: its ``valid_from``, else when it was said (``created_at``)."""
    return image["valid_from"] if image["valid_from"] is not None else image["created_at"]


def split_by_time(images: dict[str, dict], at: float) -> tuple[list[str], dict | None]:
    """The still-current versions a fact said at ``at`` ends (those that began by then), and the
    earliest one that began after it: an older statement arriving late ends *itself* there.

    A version that begins after this moment was stamped by a clock ahead of this one (a line from
    another machine, or this clock stepped back since): it is no newer than anything said now, so it
    is ended too, never kept current over the update replacing it."""
    now = time.time()
    current = [i for i in images.values() if i["valid_to"] is None and i["superseded_by"] is None]
    ended = [i["id"] for i in current if not at < valid_start(i) <= now]
    later = min((i for i in current if at < valid_start(i) <= now), key=valid_start, default=None)
    return ended, later


def supersede(raw, old_ids: Sequence[str], new_id: str, at: float, actor: str) -> list[str]:
    """End ``old_ids`` at ``at`` (when the new fact was said: its valid time) in favour of
    ``new_id``; both sides ledgered ('supersede' / 'version'). Returns the ids ended.

    Only still-current rows are ended, so a race with another writer never
    re-points a version that something else already replaced. A current
    version that began after ``at`` is newer than the new fact: it stays, and
    the new row becomes its predecessor instead, ended when it began.
    """
    ended, later = split_by_time(_images(raw, old_ids), at)
    if ended:
        update(raw, ended, "supersede", actor, "valid_to = ?, superseded_by = ?", (at, new_id))
        update(raw, [new_id], "version", actor, "valid_from = coalesce(valid_from, ?), supersedes = coalesce(supersedes, ?)", (at, ended[0]))
    elif later is not None and update(
        raw, [new_id], "supersede", actor, "valid_from = coalesce(valid_from, ?), valid_to = ?, superseded_by = ?",
        (at, valid_start(later), later["id"]),
    ):
        update(raw, [later["id"]], "version", actor, "supersedes = coalesce(supersedes, ?)", (new_id,))
    return ended


def make_current(raw, entry_id: str, actor: str) -> list[str]:
    """Undo a supersession or a held conflict: ``entry_id`` answers again, nothing else ends.

    Its successor stays current too and loses its ``supersedes`` link, since
    the two are no longer versions of one fact. Returns the ids changed.
    """
    image = _images(raw, [entry_id]).get(entry_id)
    if image is None:
        return []
    changed = []
    successor = image["superseded_by"]
    if update(raw, [entry_id], "make_current", actor, "valid_to = NULL, superseded_by = NULL, conflict_with = NULL"):
        changed.append(entry_id)
    if successor and update(raw, [successor], "unversion", actor, "supersedes = NULL"):
        changed.append(successor)
    return changed


_LIVE = "SELECT 1 FROM memories WHERE id = ? AND archived = 0 AND valid_to IS NULL"


def reinforce(
    raw, entry_id: str, actor: str, *, importance_step: float, confirm: float | None, asserted: bool = False
) -> int:
    """A restated fact: bump importance and access, ledgered even when importance is capped.

    ``confirm`` (the confidence of a user restating what the agent had
    asserted) raises the source to user_confirmed and clears a held claim's
    ``conflict_with``: the user has now said it (the reconciler ends the fact
    it was held against). An ``asserted`` restatement
    (an agent's or a model's) counts as an access but lifts importance no
    higher than :data:`ASSERTED_IMPORTANCE_CAP`, below the promotion threshold.
    """
    if raw.execute(_LIVE, (entry_id,)).fetchone() is None:
        return 0  # archived or ended since it was found restated (a prune between): the write is stored instead
    ceiling = ASSERTED_IMPORTANCE_CAP if asserted else 1.0
    assignments = (
        f"importance = max(importance, min(?, importance + ?)), access_count = {counted('1')}, last_accessed_at = ?"
    )
    params: list = [ceiling, importance_step, time.time()]
    if confirm is not None:
        assignments += ", confidence_source = 'user_confirmed', confidence = max(confidence, ?), conflict_with = NULL"
        params.append(confirm)
    return update(raw, [entry_id], "reinforce", actor, assignments, params)


def upsert(raw, entries: Sequence[MemoryEntry], actor: str, *, op: str | None = None) -> list[str]:
    """Insert or update ``entries`` by id; return the op per entry ('noop' when unchanged,
    :data:`REFUSED` for an id another agent's row holds).

    ``op`` names every ledger row this call writes (``import``) instead of the
    op read off the change, so the ledger says where a row came from.

    A None visibility keeps the stored value (``visible`` for a new row), so an
    automatic re-save never lifts an operator's private or hidden flag; nor does
    a write bring back an archived row (a forget stands until ``restore``). A new
    id is inserted straight away (no before image to read); only an existing
    one is read, compared and updated. Each row's indexed context is derived
    here, from the rows already written (earlier entries of the batch included).

    An ``imported`` entry never loosens (:func:`never_looser`) and never brings
    back a removed id (:data:`GONE`); with ``op`` ``import`` (an ``arcana import``
    line) it keeps what the store changed since the line was written
    (:func:`newer_fields`). All decided here, under the write lock, so an
    operator's edit made after the import read the row stands.
    """
    now = time.time()
    ops: list[str] = []
    ledger: list[tuple] = []
    sessions: set[tuple[str, str]] = set()
    reworded: list[str] = []
    gone = removed(raw, [entry.id for entry in entries if entry.imported])
    newer = _newer_than_lines(raw, [e for e in entries if e.imported]) if op == "import" else {}
    for entry in entries:
        if entry.imported and entry.id in gone:
            ops.append(GONE)
            continue
        values = entry_values(entry)
        indexed = context.derive(raw, entry)
        keep_visibility = values["visibility"] is None
        if keep_visibility:
            values["visibility"] = Visibility.VISIBLE.value
        if raw.execute(_INSERT_NEW, values | indexed).rowcount == 1:
            ops.append("insert")
            ledger.append((entry.id, op or "insert", actor, now, None, encode(values)))
            continue
        old = _images(raw, [entry.id])[entry.id]
        if old["agent_id"] != values["agent_id"]:
            ops.append(REFUSED)  # another agent's row: a write never changes who owns a memory
            continue
        if keep_visibility:
            values["visibility"] = old["visibility"]
        if entry.imported:
            never_looser(old, values)
        for name in newer.get(entry.id, ()):
            values[name] = old[name]
        values["archived"] = max(int(old["archived"]), values["archived"])  # only restore() un-archives
        values["access_count"] = old["access_count"]
        values["last_accessed_at"] = old["last_accessed_at"]
        linked_versions(old, values, imported=entry.imported, newer=newer.get(entry.id, ()))
        if all(old[k] == values[k] for k in COLUMNS if k not in _SKIP_COMPARE):
            ops.append("noop")
            continue
        values["updated_at"] = now
        raw.execute(_UPSERT, values | indexed)
        label = change_label(old, values)
        ops.append(label)
        ledger.append((entry.id, op or label, actor, now, encode(old), encode(values)))
        sessions |= _sessions_reworded([old], [values])
        reworded += [entry.id] if old["content"] != values["content"] else []
    _append(raw, ledger)
    _forget_embeddings(raw, reworded)
    _refresh_context(raw, sessions)
    return ops


def repair(raw, entry_id: str, seq: int, taken: Sequence[str], actor: str) -> int:
    """Revert ``entry_id``, a row an outside edit left unreadable, to ledger row ``seq``'s after image:
    its ``taken`` columns, and each other column that stops it reading (:func:`repaired`); its visibility
    never less restricted than a readable one it has. Ledgered ('revert'); 1 if it changed, else 0.

    The row is never read as an entry (it cannot be), only as stored: what a
    revert of a readable row does through :meth:`update`, for the one row it cannot.
    """
    current = _images(raw, [entry_id]).get(entry_id)
    if current is None:
        raise NotFoundError(f"no memory with id '{entry_id}'")
    row = raw.execute("SELECT * FROM memory_ledger WHERE seq = ? AND memory_id = ?", (seq, entry_id)).fetchone()
    if row is None:
        raise NotFoundError(f"the memory has no ledger row {seq}; see `arcana memory history {entry_id}`")
    image = LedgerRecord.from_row(row).after
    if image is None:
        raise InvalidRequestError(f"ledger row {seq} removed the memory; give a row that left it in place")
    image = dict(image)
    if "visibility" in taken and current["visibility"] in (v.value for v in Visibility):
        image["visibility"] = max(current["visibility"], image["visibility"], key=lambda v: RESTRICTION[Visibility(v)])
    values = repaired(current, image, taken)
    if not values:
        return 0
    return update(raw, [entry_id], "revert", actor, ", ".join(f"{c} = ?" for c in values), list(values.values()))


def differs(before: dict, after: dict) -> bool:
    """True when a row changed in anything but ``updated_at``: only then is it stamped and ledgered."""
    return any(before[k] != after[k] for k in COLUMNS if k != "updated_at")


def check_unchanged(raw, entry_id: str, seq: int) -> None:
    """Refuse (:class:`StaleEditError`) unless ``seq`` is ``entry_id``'s newest ledger row.

    Called inside the edit's own transaction (BEGIN IMMEDIATE holds the write
    lock), so no writer can slip in between the check and the change.
    """
    newest = raw.execute("SELECT max(seq) FROM memory_ledger WHERE memory_id = ?", (entry_id,)).fetchone()[0]
    if newest != seq:
        raise StaleEditError(stale_message(entry_id, seq, newest))


def stale_message(entry_id: str, seq: int, newest: int | None) -> str:
    now = "it is gone" if newest is None else f"its newest ledger row is now #{newest}"
    return (
        f"memory {entry_id} changed since it was shown (ledger row #{seq}; {now}); nothing was changed: "
        "look at it again and redo the edit"
    )


def update(raw, ids: Sequence[str], op: str, actor: str, assignments: str, params: Sequence = (),
           progress: Progress | None = None) -> int:
    """Apply ``UPDATE memories SET <assignments>`` to ``ids``, one ledger row per changed row.

    ``updated_at`` is stamped afterwards on the rows that really changed, so
    an edit that changes nothing (``--current`` on a current memory) leaves
    the row exactly as it was, with no ledger row. Ids are taken a window at
    a time (all in the caller's transaction), so archiving half a million-row
    store holds one window's images, not every row's; ``progress`` advances a window at a time.
    """
    now = time.time()
    changed = 0
    sessions: set[tuple[str, str]] = set()
    for window in batches(ids, MUTATION_WINDOW):
        changed += _update_window(raw, window, op, actor, assignments, params, now, sessions)
        if progress is not None:
            progress.advance(len(window))
    _refresh_context(raw, sessions)
    return changed


def _update_window(raw, ids: list[str], op: str, actor: str, assignments: str, params: Sequence, now: float,
                   sessions: set[tuple[str, str]]) -> int:
    before = _images(raw, ids)
    if not before:
        return 0
    present = list(before)
    for chunk in batches(present):
        raw.execute(f"UPDATE memories SET {assignments} WHERE id IN ({marks(chunk)})", (*params, *chunk))
    after = _images(raw, present)
    changed = [mid for mid in present if differs(before[mid], after[mid])]
    for chunk in batches(changed):
        raw.execute(f"UPDATE memories SET updated_at = ? WHERE id IN ({marks(chunk)})", (now, *chunk))
    ledger = [(mid, op, actor, now, encode(before[mid]), encode(after[mid] | {"updated_at": now})) for mid in changed]
    _append(raw, ledger)
    sessions |= _sessions_reworded([before[mid] for mid in changed], [after[mid] for mid in changed])
    _forget_embeddings(raw, [mid for mid in changed if before[mid]["content"] != after[mid]["content"]])
    return len(ledger)


# What a turn's neighbour indexes of it (memory/sqlite/context.py): its text, while it is visible and kept.
_CONTEXT_OF = ("content", "visibility", "archived")


def _sessions_reworded(before: Sequence[dict], after: Sequence[dict | None]) -> set[tuple[str, str]]:
    """The (agent, session) of each turn whose change (``after`` None: removed) alters what the turn
    after it holds as its context."""
    return {
        (old["agent_id"], old["source_session_id"])
        for old, new in zip(before, after, strict=True)
        if old["source_session_id"] and (new is None or any(old[k] != new[k] for k in _CONTEXT_OF))
    }


def _refresh_context(raw, sessions: set[tuple[str, str]], purged: Sequence[str] = ()) -> None:
    """Re-derive the context of the turns of ``sessions`` after one of them changed: a turn hidden,
    forgotten, purged or re-worded must not stay findable through the turn after it; the text of a
    ``purged`` turn leaves an archived turn's context too. The vector made from the old context goes
    with it (``arcana reindex`` embeds the new text)."""
    stale = context.rederived(raw, sorted(sessions), purged) if sessions else []
    if stale:
        raw.executemany("UPDATE memories SET context = ? WHERE seq = ?", stale)
        _forget_vectors(raw, vectors.vec_tables(raw), [seq for _, seq in stale])


def _forget_embeddings(raw, ids: list[str]) -> None:
    """Drop the vectors (and chunk vectors) of re-worded rows: made from the old text, they would
    still find a row by what it no longer says (a redacted secret). A vector write re-embeds them
    at once; an operator's edit leaves that to ``arcana reindex``."""
    if ids:
        seqs = [r[0] for r in select_in(raw, "SELECT seq FROM memories WHERE id IN ({marks})", ids)]
        _forget_vectors(raw, vectors.vec_tables(raw), seqs)
        chunks.forget(raw, seqs)


def _forget_vectors(raw, vec_tables: list[str], seqs: list[int]) -> None:
    if vec_tables:
        vectors.loaded(raw)
    for table in vec_tables:
        for chunk in batches(seqs):
            raw.execute(f"DELETE FROM {table} WHERE rowid IN ({marks(chunk)})", chunk)
        compact.forget(raw, table, seqs)


def delete(raw, ids: Sequence[str], op: str, actor: str, progress: Progress | None = None) -> int:
    """Hard-delete ``ids`` (and their vectors and chunk vectors), one ledger row each, a window at a
    time (see :func:`update`). ``op`` is 'delete' or 'purge'."""
    now = time.time()
    vec_tables = vectors.vec_tables(raw)
    deleted = 0
    sessions: set[tuple[str, str]] = set()
    purged: list[str] = []
    for window in batches(ids, MUTATION_WINDOW):
        deleted += _delete_window(raw, window, op, actor, now, vec_tables, sessions, purged)
        if progress is not None:
            progress.advance(len(window))
    _refresh_context(raw, sessions, purged)
    return deleted


def _delete_window(raw, ids: list[str], op: str, actor: str, now: float, vec_tables: list[str],
                   sessions: set[tuple[str, str]], purged: list[str]) -> int:
    before = _images(raw, ids)
    if not before:
        return 0
    present = list(before)
    for chunk in batches(present):
        seqs = [r[0] for r in raw.execute(f"SELECT seq FROM memories WHERE id IN ({marks(chunk)})", chunk)]
        _forget_vectors(raw, vec_tables, seqs)
        chunks.forget(raw, seqs)
        raw.execute(f"DELETE FROM memories WHERE id IN ({marks(chunk)})", chunk)
    _append(raw, [(mid, op, actor, now, encode(before[mid]), None) for mid in present])
    if op == "purge":
        _erase_words(raw, present)
        purged += [before[mid]["content"] for mid in present if before[mid]["source_session_id"]]
    sessions |= _sessions_reworded(list(before.values()), [None] * len(before))
    return len(present)


ERASED = "[purged]"
"""What a purged memory's ledger images hold instead of its text (its tags become ``[]``)."""

# The after image loses its words; the before image too, with its own marker where the row changed
# them, so `memory history` still names the fields each row changed.
_ERASED_BEFORE = "CASE WHEN json_extract(before, '$.{f}') IS json_extract(after, '$.{f}') OR after IS NULL THEN {same} ELSE {changed} END"
_ERASE_WORDS = (
    "UPDATE memory_ledger SET "
    "before = json_set(before, '$.content', "
    + _ERASED_BEFORE.format(f="content", same=f"'{ERASED}'", changed=f"'{ERASED} (earlier text)'")
    + ", '$.tags', "
    + _ERASED_BEFORE.format(f="tags", same="'[]'", changed=f"'[\"{ERASED} (earlier tags)\"]'")
    + f"), after = json_set(after, '$.content', '{ERASED}', '$.tags', '[]') WHERE memory_id IN ({{marks}})"
)


def _erase_words(raw, ids: list[str]) -> None:
    """Take the words of the purged ``ids`` out of every ledger image of them, earlier versions' too:
    a purge is for good, so nothing in the file may still hold the text (migration v11's trigger
    allows this update and no other). What was done, by whom and when stays."""
    for chunk in batches(ids):
        raw.execute(_ERASE_WORDS.format(marks=marks(chunk)), chunk)


def counted(step: str, smaller: str = "min") -> str:
    """``access_count`` plus ``step`` (SQL), saturating at :data:`MAX_ACCESS_COUNT` instead of overflowing
    (SQLite would store a float no read accepts; PostgreSQL refuses the statement). ``smaller``: the
    dialect's two-argument minimum (``least`` on PostgreSQL)."""
    return f"{smaller}(access_count, {MAX_ACCESS_COUNT} - {step}) + {step}"


def touch_access(raw, buffered: AccessBuffer) -> None:
    """Fold buffered read hits into access_count / last_accessed_at, and the recalls into
    ``recall_activity`` (unledgered bookkeeping).

    A narrow UPDATE of two non-indexed columns: the FTS trigger watches only
    content and tags, so this never rewrites the search index.
    """
    raw.executemany(
        f"UPDATE memories SET access_count = {counted('?1')}, last_accessed_at = max(coalesce(last_accessed_at, 0), ?2) "
        "WHERE id = ?3",
        [(n, at, mid) for mid, (n, at) in buffered.hits.items()],
    )
    raw.executemany(
        "INSERT INTO recall_activity (day, recalls, hits) VALUES (?, ?, ?) ON CONFLICT(day) DO UPDATE SET "
        "recalls = recalls + excluded.recalls, hits = hits + excluded.hits",
        [(day, recalls, hits) for day, (recalls, hits) in buffered.days.items()],
    )
