"""Export and import of memories: JSON Lines (lossless) and a Markdown folder (one note each).

Export is an operator action: every row leaves, hidden, private and archived
ones included and marked, read through the admission module's operator
audience. Import upserts by id through the ledger (op ``import``), so running
it twice changes nothing and a hidden memory stays hidden. Both directions
stream in bounded pages, so memory use does not grow with the store.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import struct
from bisect import bisect_left
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from memory.errors import ImportFormatError, MemoryStorageError, UnreadableRowError
from memory.home import private_dir
from memory.limits import MAX_CONTENT_BYTES, content_size, nul_field, nul_refused, tags_size
from memory.lines import LineTooLong, decode, loads, read_lines
from memory.locks import replaced_when_complete
from memory.operator.edits import GlobalCopies, Originals, keep_restrictions, withhold_carriers_of
from memory.sqlite import consolidation, mutations
from memory.sqlite.admission import where
from memory.sqlite.batches import select_in
from memory.sqlite.connection import transaction
from memory.sqlite.rows import keyset_page, row_to_entry
from memory.sqlite.vectors import pack, put_live_txn, read_meta
from memory.timespec import iso
from memory.types import TIME_FIELDS, Audience, LedgerRecord, MemoryEntry, MemoryQuery, MemoryScope, Visibility

FORMAT = "arcana-export"
VERSION = 1
PAGE = 1000  # rows per read page and per import transaction
# The longest export line read: a memory at the 1 MiB limit with a long history and a vector fits many
# times over; a longer line is named and skipped unread (it could only be refused after parsing).
LINE_BYTES = 64 * 1024 * 1024
MAX_DIMENSION = 8192  # the widest vector sqlite-vec indexes: a header model wider than that is not one
FRONTMATTER_BYTES = 64 * 1024  # a note may be this much larger than the content it carries


@dataclass(frozen=True)
class Target:
    """Where imported memories land: the identity fields a file cannot choose for itself. Each entry
    is marked ``imported``, so the store's own write never undoes an operator (mutations.upsert)."""

    scope: MemoryScope
    agent_id: str | None = None  # private: the owning agent
    pool_name: str | None = None  # shared: the pool
    owners: Mapping[str, str] = field(default_factory=dict)
    """A shared tier restored with its agents (``import`` of an ``--all`` file): each file agent id
    to the id that agent has here, so a global copy stays its original's (same id, same agent) and
    the agent's edits, and its deletion, still reach it."""

    def adopt(self, entry: MemoryEntry) -> MemoryEntry:
        update: dict[str, Any] = {"scope": self.scope, "pool_name": self.pool_name, "imported": True}
        if self.agent_id is not None:
            update["agent_id"] = self.agent_id
        elif entry.agent_id in self.owners:
            update["agent_id"] = self.owners[entry.agent_id]
        return entry.model_copy(update=update)


@dataclass
class ExportReport:
    memories: int = 0
    history_rows: int = 0
    vectors: int = 0
    stores: list[str] = field(default_factory=list)
    # Why each row an outside edit left unreadable was not exported (the rest of its store was).
    unreadable: list[str] = field(default_factory=list)
    notes_removed: int = 0  # a Markdown export's notes of memories deleted or purged since an earlier one

    def as_dict(self) -> dict:
        return {"memories": self.memories, "history_rows": self.history_rows, "vectors": self.vectors, "stores": self.stores,
                "unreadable": len(self.unreadable), "notes_removed": self.notes_removed}


@dataclass
class ImportReport:
    read: int = 0
    ops: dict[str, int] = field(default_factory=dict)  # insert / update / noop / visibility / ...
    vectors_kept: int = 0
    embedded: int = 0
    history_rows_skipped: int = 0  # kept in the file; the ledger records the import itself
    bad: list[tuple[str, str]] = field(default_factory=list)  # (line N or file, why)
    strict_refused: bool = False
    embed_notice: str | None = None
    kept_removed: int = 0  # memories this store had deleted or purged: they stay gone
    kept_newer: int = 0  # lines older than a change the store made since: its text / importance stand
    copies_changed: int = 0  # global copies rewritten or withdrawn to match
    carriers_withheld: int = 0  # digests and merges carrying what the import hid, archived or re-worded

    def as_dict(self) -> dict:
        return {
            "read": self.read,
            "ops": self.ops,
            "vectors_kept": self.vectors_kept,
            "embedded": self.embedded,
            "history_rows_not_replayed": self.history_rows_skipped,
            "bad": [{"where": w, "error": e} for w, e in self.bad],
            "imported": not self.strict_refused,
            "kept_removed": self.kept_removed,
            "kept_newer": self.kept_newer,
            "copies_changed": self.copies_changed,
            "carriers_withheld": self.carriers_withheld,
            "embed_notice": self.embed_notice,
        }


# -- reading a store ----------------------------------------------------------


def _history(raw, ids: Sequence[str]) -> tuple[dict[str, list[dict]], list[str]]:
    """The ledger rows of ``ids`` by memory, and why each row an outside edit left unreadable was left out."""
    found: dict[str, list[dict]] = {}
    unreadable: list[str] = []
    for r in select_in(raw, "SELECT * FROM memory_ledger WHERE memory_id IN ({marks}) ORDER BY seq", ids):
        try:
            record = LedgerRecord.from_row(r)
        except UnreadableRowError as exc:
            unreadable.append(str(exc))
            continue
        found.setdefault(r["memory_id"], []).append(
            {"op": r["op"], "actor": r["actor"], "at": r["at"], "before": record.before, "after": record.after}
        )
    return found, unreadable


async def newer_in_store(store, entries: Sequence[MemoryEntry]) -> dict[str, set[str]]:
    """id -> the fields of ``entries`` (stored already) that the store changed after the line's own
    ``updated_at``, other than by an import (:func:`memory.sqlite.mutations.newer_fields`): applying
    them would put back words an operator removed or undo their importance. Read before the write,
    for the count and the global copies; the write decides it again under its lock, so a change
    landing between stands too."""
    if not entries:
        return {}
    written = mutations.written_at(entries)
    since, ids = min(written.values()), list(written)
    server = _server(store)
    records = await (server.changes_since(store, ids, since) if server else store.run(mutations.changes_since, ids, since))
    return mutations.newer_fields(records, written)


def keep_newer(stored: MemoryEntry, incoming: MemoryEntry, fields: set[str]) -> MemoryEntry:
    """``incoming`` with the store's value for each of ``fields`` (see :func:`newer_in_store`)."""
    return incoming.model_copy(update={f: getattr(stored, f) for f in fields}) if fields else incoming


def _pin(raw) -> dict | None:
    meta = read_meta(raw)
    return None if meta is None else {"model": meta.model, "family": meta.family, "dimension": meta.dimension, "vec_table": meta.vec_table}


def _vectors(raw, table: str, seqs: Sequence[int]) -> dict[int, list[float]]:
    found = {}
    for rowid, blob in select_in(raw, f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({{marks}})", seqs):
        found[rowid] = [round(v, 7) for v in struct.unpack(f"{len(blob) // 4}f", blob)]
    return found


def _server(store) -> Any:
    """memory/postgres/transfer.py when ``store`` is on a server, else None (this module's SQLite side)."""
    from memory.adapters.opener import on_server

    if not on_server(store):
        return None
    from memory.postgres import transfer

    return transfer


async def vector_pin(store) -> dict | None:
    """The store's embedding pin (model, family, dimension) or None when nothing is embedded."""
    server = _server(store)
    return await (server.pin(store) if server else store.run(_pin))


async def iter_records(
    store, *, with_history: bool = False, with_vectors: bool = False, page: int = PAGE,
    unreadable: list[str] | None = None,
) -> AsyncIterator[dict]:
    """Every row of ``store`` (operator audience: any visibility, archived too), oldest first.

    A row an outside edit left unreadable fails the whole read, or with ``unreadable`` is left out and
    named there (:class:`~memory.errors.UnreadableRowError`'s message).

    Keyset pages by ``seq``, so a concurrent writer never makes a row appear
    twice and memory stays bounded by ``page``.
    """
    server = _server(store)
    if server:
        async for record in server.records(store, with_history=with_history, with_vectors=with_vectors, page=page):
            yield record
        return
    clause = where(MemoryQuery(), audience=Audience.OPERATOR, include_archived=True)
    pin = await store.run(_pin) if with_vectors else None
    if pin is not None and not await store.ensure_vec():
        pin = None  # sqlite-vec unavailable: rows still export, vectors cannot be read
    after = 0
    while True:
        rows = await store.run(keyset_page, after, clause.sql, clause.params, page)
        if not rows:
            return
        after = rows[-1]["seq"]
        ids = [r["id"] for r in rows]
        history, bad = await store.run(_history, ids) if with_history else ({}, [])
        if bad and unreadable is None:
            raise UnreadableRowError(bad[0])
        if bad:
            unreadable.extend(bad)  # the memory is exported with the rest of its history
        vectors = await store.run(_vectors, pin["vec_table"], [r["seq"] for r in rows]) if pin else {}
        sources = await store.run(consolidation.sources_of, ids)
        absorbed = await store.run(consolidation.sources_of, list(sources), False)
        digests = await store.run(consolidation.digests_among, list(sources))
        carried = await store.run(consolidation.consolidated_among, ids)
        for r in rows:
            try:
                record: dict[str, Any] = {"memory": row_to_entry(r).model_dump(mode="json")}
            except UnreadableRowError as exc:
                if unreadable is None:
                    raise
                unreadable.append(str(exc))  # the rest of the store is exported; the caller says what was not
                continue
            if r["id"] in sources:  # what a digest or summary carries: a hide of one of them reaches it
                record["sources"] = sources[r["id"]]
                # what an agent's claim only quotes: an import links it one way again (QUOTED_LINK)
                if quoted := [s for s in sources[r["id"]] if s not in absorbed.get(r["id"], ())]:
                    record["quoted"] = quoted
            if r["id"] in digests:  # an import links it as a digest again: never merged, condensed by prune
                record["digest"] = True
            if r["id"] in carried:  # archived into a merge or digest: it answers --as-of a time before it
                record["consolidated"] = True
            if with_history:
                record["history"] = history.get(r["id"], [])
            if r["seq"] in vectors:
                record["vector"] = vectors[r["seq"]]
            yield record


def header(what: dict, *, arcana_version: str, with_history: bool, with_vectors: bool, model: dict | None) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "arcana_version": arcana_version,
        "exported": what,
        "created_at": iso(datetime.now(UTC)),
        "with_history": with_history,
        "with_vectors": with_vectors,
        "model": None if model is None else {k: model[k] for k in ("model", "family", "dimension")},
    }


async def export_jsonl(
    sources: Sequence[tuple[str, Any]],
    out: IO[str],
    *,
    what: dict,
    arcana_version: str,
    with_history: bool = False,
    with_vectors: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> ExportReport:
    """Write a header line, then one JSON line per memory of each ``(label, store)``.

    With several sources, or an ``--all`` export (``what`` has ``all``), each line names its
    ``store``, so the file can be restored store by store; vectors are written
    only for the first source's model (a file carries one model pin).
    """
    report = ExportReport(stores=[label for label, _ in sources])
    labelled = len(sources) > 1 or "all" in what
    model = await vector_pin(sources[0][1]) if with_vectors and sources else None
    out.write(json.dumps(header(what, arcana_version=arcana_version, with_history=with_history,
                                with_vectors=with_vectors, model=model), ensure_ascii=False) + "\n")
    for label, store in sources:
        pin = await vector_pin(store) if with_vectors else None
        same_model = model is not None and pin is not None and (pin["model"], pin["dimension"]) == (
            model["model"], model["dimension"])
        async for record in iter_records(store, with_history=with_history, with_vectors=same_model,
                                         unreadable=report.unreadable):
            if labelled:
                record["store"] = label
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            report.memories += 1
            report.history_rows += len(record.get("history", ()))
            report.vectors += "vector" in record
            if on_progress is not None:
                on_progress(report.memories)
    return report


# -- reading a file -----------------------------------------------------------


def read_header(line: str | bytes) -> dict:
    """The header of an export, or :class:`ImportFormatError` naming what is wrong."""
    try:
        head = loads(line.decode("utf-8", "replace") if isinstance(line, bytes) else line)
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise ImportFormatError(f"line 1 is not an {FORMAT} header; is this a file written by `arcana export`?")
    version = head.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ImportFormatError(
            f"{FORMAT} format version {version!r} is newer than this Arcana reads ({VERSION}); upgrade Arcana"
        )
    if (problem := _bad_model(head.get("model"))) is not None:
        raise ImportFormatError(f"the header's \"model\" {problem}; export it again with `arcana export --with-vectors`")
    return head


def _bad_model(model: Any) -> str | None:
    """Why a header's embedding model (what its vectors were made with) is not one, or None."""
    if model is None:
        return None
    if not isinstance(model, dict):
        return f"is a {type(model).__name__}, not a model (name, family, dimension)"
    for key in ("model", "family"):
        if not isinstance(model.get(key), str) or not model[key].strip():
            return f"has no {key!r} name"
    dimension = model.get("dimension")
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= MAX_DIMENSION:
        return f"has dimension {dimension!r}, not a whole number from 1 to {MAX_DIMENSION}"
    return None


def jsonl_records(handle: IO[bytes]) -> Iterator[tuple[str, dict | str]]:
    """(``line N``, record dict or why it is bad) for every line after the header (already read).

    Lines are read bounded (:data:`LINE_BYTES`): a longer one is named and skipped unread.
    """
    for number, raw in read_lines(handle, LINE_BYTES, first=2):
        try:
            if isinstance(raw, LineTooLong):
                raise ValueError(str(raw))
            line = decode(raw)
            if not line.strip():
                continue
            record = loads(line)
        except ValueError as exc:
            yield f"line {number}", str(exc)
            continue
        if not isinstance(record, dict) or not isinstance(record.get("memory"), dict):
            yield f"line {number}", "not a memory record (no \"memory\" object)"
            continue
        yield f"line {number}", record


def _entry(record: dict, max_content_bytes: int | None = MAX_CONTENT_BYTES) -> MemoryEntry | str:
    try:
        if (number := _time_as_number(record["memory"])) is not None:
            return number
        entry = MemoryEntry.model_validate(record["memory"])
    except ValidationError as exc:
        return _invalid(exc)
    except RecursionError:
        return "nested too deeply to be a memory"
    if max_content_bytes is not None and (size := content_size(entry.content, max_content_bytes)) > max_content_bytes:
        return f"content is {size:,} bytes, over the limit of {max_content_bytes:,} (memory.max_content_bytes)"
    if max_content_bytes is not None and (size := tags_size(entry.tags, max_content_bytes)) > max_content_bytes:
        return f"tags are {size:,} bytes together, over the limit of {max_content_bytes:,} (memory.max_content_bytes)"
    if (field := nul_field(entry.content, entry.tags)) is not None:
        return str(nul_refused(field))
    return entry


def _invalid(exc: ValidationError) -> str:
    """Every field a record got wrong, in one line: a field it gave first (pydantic lists them in the
    model's order, so ``{"content": 42}`` was reported as "invalid agent_id: Field required")."""
    problems = sorted(exc.errors(), key=lambda e: e["type"] == "missing")  # stable: the model's order within
    return "invalid " + "; ".join(f"{'.'.join(map(str, e['loc'])) or 'memory'}: {e['msg']}" for e in problems)


def _time_as_number(memory: dict) -> str | None:
    """Why a time that is not ISO text (a number, or digits in a string) is refused, else None. Pydantic
    reads a number as epoch seconds, or past 2e10 as milliseconds (25000000000 became 1970-10-17):
    a silent rewrite. An export writes every time as ISO text."""
    for name in TIME_FIELDS:
        value = memory.get(name)
        if value is not None and (not isinstance(value, str) or _numeric(value)):
            shown = json.dumps(value, ensure_ascii=False)
            shown = shown if len(shown) <= 40 else shown[:40] + "…"
            return f"invalid {name}: {shown} is not an ISO 8601 time; give one such as 2024-05-01T12:00:00Z"
    return None


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _checked(record: dict, max_content_bytes: int | None) -> tuple[MemoryEntry, list[str], bool, list[str], bool] | str:
    """A record's memory, the ids it carries, whether it is a digest of them, those of them it only
    quotes and whether consolidation archived it, or why the record is bad."""
    entry = _entry(record, max_content_bytes)
    if isinstance(entry, str):
        return entry
    sources = _sources(record)
    if isinstance(sources, str):
        return sources
    digest = record.get("digest", False)
    if not isinstance(digest, bool):
        return "invalid digest: true (a digest consolidation wrote of its sources) or false"
    quoted = record.get("quoted", [])
    if not isinstance(quoted, list) or not all(isinstance(q, str) and q in sources for q in quoted):
        return "invalid quoted: a list of those of its sources an agent's claim only quotes"
    consolidated = record.get("consolidated", False)
    if not isinstance(consolidated, bool):
        return "invalid consolidated: true (archived into a merge or digest) or false"
    return entry, sources, digest, quoted, consolidated


def _sources(record: dict) -> list[str] | str:
    """The ids a record's memory carries the content of (its ``sources``), or why they are bad."""
    sources = record.get("sources")
    if sources is None:
        return []
    if not isinstance(sources, list) or not all(isinstance(s, str) and s for s in sources):
        return "invalid sources: a list of the memory ids it was made from"
    return sources


def _vector_of(record: dict, width: int | None) -> list[float] | None:
    """A record's vector, unit length, when it is one of ``width`` finite numbers; else None (embed it)."""
    vector = record.get("vector")
    if not isinstance(vector, list) or width is None or len(vector) != width:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vector):
        return None
    from memory.embedding.base import l2_normalize

    try:  # NaN, an infinity, a number past float range or all zeros: no direction to keep, so re-embed
        return l2_normalize([float(v) for v in vector])
    except (OverflowError, ValueError):
        return None


# -- writing a store ----------------------------------------------------------


LEFT_OUT = frozenset({mutations.GONE, mutations.REFUSED})  # ops of lines the write did not take


def _import_txn(raw, entries: Sequence[MemoryEntry], actor: str, links: Sequence[tuple[str, str]] = (),
                digests: frozenset[str] = frozenset(), quoted: frozenset[tuple[str, str]] = frozenset(),
                consolidated: frozenset[str] = frozenset()) -> list[str]:
    """Upsert ``entries`` and record what they carry, from the lines the write took only: a refused
    line names another agent's row, which must not become a carrier of the file's memories. A
    digest's edges say it is one (:data:`consolidation.DIGEST_LINK`), as consolidation's do, and
    the ``quoted`` links of an agent's claim run one way (:data:`consolidation.QUOTED_LINK`); a new
    row ``consolidated`` archived is archived as consolidation's (a stored row keeps its archive)."""
    with transaction(raw):
        ops = mutations.upsert(raw, entries, actor, op="import")
        consolidation.mark_consolidated(raw, [e.id for e, op in zip(entries, ops, strict=True)
                                              if op == "insert" and e.archived and e.id in consolidated], actor)
        taken = [link for link in links if link[0] in
                 {entry.id for entry, op in zip(entries, ops, strict=True) if op not in LEFT_OUT}]
        consolidation.link_sources(raw, [link for link in taken if link[0] in digests], consolidation.DIGEST_LINK)
        consolidation.link_sources(raw, [link for link in taken if link in quoted], consolidation.QUOTED_LINK)
        consolidation.link_sources(raw, [link for link in taken if link[0] not in digests and link not in quoted], "import")
        return ops


async def write_imported(store, entries: Sequence[MemoryEntry], links: Sequence[tuple[str, str]] = (),
                         digests: frozenset[str] = frozenset(),
                         quoted: frozenset[tuple[str, str]] = frozenset(),
                         consolidated: frozenset[str] = frozenset()) -> list[str]:
    """The import's write on either engine: upsert as ``import``, each line kept from loosening a row,
    bringing back a removed id or undoing a newer change, all decided under the write's lock
    (memory.sqlite.mutations.upsert); ``links``, what the lines carry (``digests``: the carriers that
    are digests), and ``consolidated``, the lines consolidation archived, on SQLite only. The op per line."""
    server = _server(store)
    return await (server.write(store, entries) if server
                  else store.run(_import_txn, entries, store.actor, links, digests, quoted, consolidated))


async def import_records(
    records: Iterable[tuple[str, dict | str]],
    store,
    target: Target,
    *,
    strict: bool = False,
    model: dict | None = None,
    gateway: Any = None,
    on_progress: Callable[[int], None] | None = None,
    reopen: Callable[[], Iterable[tuple[str, dict | str]]] | None = None,
    copies: GlobalCopies | None = None,
    originals: Originals | None = None,
    max_content_bytes: int | None = MAX_CONTENT_BYTES,
) -> ImportReport:
    """Upsert every good record into ``store`` as ``target``; report bad ones by where they are.

    An import never undoes an operator: a row it updates keeps a stricter
    visibility and its archive (:func:`keep_restrictions`), a memory this
    store deleted, purged or withdrew stays gone, and with ``copies`` (an
    agent's store) the global copies of the memories it changes follow
    first. New memories are not promoted: an import restores, it does not
    re-decide what the agent shares.

    ``strict`` validates everything first (``reopen`` gives the records again)
    and writes nothing when any is bad. Vectors that came with the file are
    kept when ``model`` matches the store's pin (or the store has none yet);
    with ``gateway`` the rest are embedded afterwards. A memory over
    ``max_content_bytes`` is a bad record, never stored.
    """
    report = ImportReport()
    if strict:
        for where_, record in records:
            problem = record if isinstance(record, str) else _checked(record, max_content_bytes)
            if isinstance(problem, str):
                report.bad.append((where_, problem))
        if report.bad:
            report.strict_refused = True
            return report
        records = reopen() if reopen is not None else ()
    server = _server(store)
    vectors = await (server.vector_sink(store, model) if server else _vector_sink(store, model, gateway))
    batch: list[tuple[MemoryEntry, list[float] | None]] = []
    carried: dict[str, list[str]] = {}  # the batch's consolidated memories: the ids each carries
    digests: set[str] = set()  # those of them that are digests
    quoted: set[tuple[str, str]] = set()  # the (claim, memory) links of what a claim only quotes
    consolidated: set[str] = set()  # the batch's memories consolidation archived
    page = server.PAGE if server else PAGE

    async def flush() -> None:
        removed = await store.removed([entry.id for entry, _ in batch])
        report.kept_removed += sum(entry.id in removed for entry, _ in batch)
        batch[:] = [(entry, vector) for entry, vector in batch if entry.id not in removed]
        stored = await store.admitted_by_id(
            MemoryQuery(), [entry.id for entry, _ in batch], audience=Audience.OPERATOR, include_archived=True
        )
        newer = await newer_in_store(store, [e for e, _ in batch if e.id in stored])
        report.kept_newer += sum(
            any(getattr(e, f) != getattr(stored[e.id], f) for f in newer.get(e.id, ())) for e, _ in batch
        )
        batch[:] = [(keep_restrictions(stored[e.id], keep_newer(stored[e.id], e, newer.get(e.id, set())))
                     if e.id in stored else e, v) for e, v in batch]
        entries = [entry for entry, _ in batch]
        if copies is not None:
            change = await copies.mirror(store, [e for e in entries if e.id in stored], "imported", before=stored)
            report.copies_changed += change.count if change is not None else 0
        # A global copy a line changes: its original follows, as for `memory set --global`. Its store is
        # locked before the copies change (locked elsewhere: the batch fails, nothing of it changed) and
        # until the original has followed, so no other writer comes in between.
        held = originals.held(originals.changed(stored, entries)) if originals is not None else nullcontext()
        async with held:
            # Sources are edges of SQLite stores only (a server keeps no consolidation edges).
            links = [(e.id, source) for e in entries for source in carried.get(e.id, ())]
            ops = await write_imported(store, entries, links, frozenset(digests), frozenset(quoted),
                                       frozenset(consolidated))
            for op in ops:
                if op == mutations.GONE:  # purged or deleted since the read above: the write left it out
                    report.kept_removed += 1
                else:
                    report.ops[op] = report.ops.get(op, 0) + 1
            # A line the write left out (gone, or refused: another agent's row in a shared tier) changed
            # nothing, so neither that row's vector nor what carries it may follow the line.
            batch[:] = [pair for pair, op in zip(batch, ops, strict=True) if op not in LEFT_OUT]
            written = [entry for entry, _ in batch]
            if not server:  # what carries a memory the import withheld (hid, archived, re-worded) follows, as for `memory set`
                report.carriers_withheld += await withhold_carriers_of(store, stored, written, "imported", copies=copies)
            if originals is not None:
                await originals.follow(stored, written, "imported")
        if vectors is not None:
            report.vectors_kept += await vectors([(e, v) for e, v in batch if v is not None])
        batch.clear()
        carried.clear()
        digests.clear()
        quoted.clear()
        consolidated.clear()
        if on_progress is not None:
            on_progress(report.read)

    for where_, record in records:
        if isinstance(record, str):
            report.bad.append((where_, record))
            continue
        checked = _checked(record, max_content_bytes)
        if isinstance(checked, str):
            report.bad.append((where_, checked))
            continue
        entry, sources, digest, quotes, archived_into = checked
        if sources:
            carried[entry.id] = sources
        quoted.update((entry.id, q) for q in quotes)
        if sources and digest:
            digests.add(entry.id)
        if archived_into:
            consolidated.add(entry.id)
        report.read += 1
        report.history_rows_skipped += len(record.get("history") or ())
        width = model["dimension"] if model else None
        batch.append((target.adopt(entry), _vector_of(record, width) if vectors is not None else None))
        if len(batch) >= page:
            await flush()
    if batch:
        await flush()
    if gateway is not None and report.read:
        from memory.adapters.opener import with_vectors

        try:
            filler = store.backfill(gateway=gateway) if server else with_vectors(store, gateway).backfill()
            report.embedded = (await filler).embedded
        except MemoryStorageError as exc:  # rows are in and keyword-searchable; `arcana reindex` embeds later
            report.embed_notice = str(exc)
    return report


async def _vector_sink(store, model: dict | None, gateway: Any = None):
    """A writer for supplied vectors when the file's model fits the store, else None (re-embed).

    A store with no pin yet is pinned to the file's model by the first vector kept, so with a
    ``gateway`` (the embedders of this home) that has a healthy embedder, they are kept only when
    one can embed queries for that model at that dimension: a file from a home with another model,
    or claiming a width its model does not have, would otherwise pin the store to vectors no query
    here can be compared with, and semantic search would fall back to keyword for good.
    """
    if model is None or not await store.ensure_vec():
        return None
    from memory.embedding.base import EmbeddingMeta, content_hash, l2_normalize

    pin = await store.run(_pin)
    if pin is not None and (pin["model"], pin["dimension"]) != (model["model"], model["dimension"]):
        return None
    # The pin is decided again under the write lock (a store pinned meanwhile wins, as for any vector write).
    candidate = EmbeddingMeta(model["model"], model["family"], model["dimension"], "", datetime.now(UTC).timestamp())
    if pin is None and gateway is not None and await gateway.resolve(candidate) is None and await gateway.resolve(None):
        return None  # this home embeds with another model (or width): its own vectors, not the file's

    async def put(pairs: list[tuple[MemoryEntry, list[float]]]) -> int:
        if not pairs:
            return 0
        indexed = await store.run(_indexed_texts, [e.id for e, _ in pairs])
        rows = [
            (indexed[e.id][0], pack(l2_normalize(v)), content_hash(indexed[e.id][1]), model["model"])
            for e, v in pairs
            if e.id in indexed
        ]
        _, written = await store.run(put_live_txn, candidate, rows)
        return written or 0

    return put


def _indexed_texts(raw, ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """id -> (seq, the text its vector is made from), so a supplied vector counts as current."""
    from memory.sqlite.context import EMBEDDED_TEXT_SQL

    rows = select_in(raw, f"SELECT id, seq, {EMBEDDED_TEXT_SQL} FROM memories WHERE id IN ({{marks}})", ids)
    return {r[0]: (r[1], r[2]) for r in rows}


# -- Markdown: one note per memory --------------------------------------------

# Every stored field but the content (the body): derived from the model, so a field added to
# MemoryEntry (a version link, a flag recall reads) can never be left out of a note again.
_FRONT_FIELDS = tuple(name for name, f in MemoryEntry.model_fields.items() if not f.exclude and name != "content")
_SLUG = re.compile(r"[^\w]+", re.UNICODE)


_ID_IN_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")


def note_name(entry: MemoryEntry) -> str:
    """A readable file name that is unique because the id is: the memory's first words, then its id.

    A hidden or private memory's note is ``memory-<id>.md``: a file name is read by anyone who lists
    the folder (a file manager, a sync service, a shell's completion), so it carries no withheld words.
    An id that is not a plain file-name word (a ``/``, a dot, a long one) is
    replaced by its sha256, so no two memories of a store share a note and no
    id can name a path outside the folder.
    """
    shown = entry.visibility is Visibility.VISIBLE
    words = (_SLUG.sub("-", entry.content[:48].lower()).strip("-") if shown else "") or "memory"
    return f"{words}-{_name_ident(entry.id)}.md"


def _name_ident(memory_id: str) -> str:
    """The part of a note's name after its words: the id, or the id's sha256."""
    return memory_id if _ID_IN_NAME.fullmatch(memory_id) else "sha256-" + hashlib.sha256(memory_id.encode()).hexdigest()


_WORDS = re.compile(r"\w+(?:-\w+)*")  # what _SLUG leaves of a memory's first words


class EarlierNotes:
    """The notes an earlier export left in a folder, found again by the id their names end with.

    A note is named by the memory's first words, so a memory whose text changed since gets a new name
    and its old note would stay beside it (and an import of the folder bring the old words back); a
    memory purged since gets no note at all, and its old one would stay for a vault of the folder to
    answer with. The export's own note is told by its name (words, then this memory's id) and by its
    frontmatter id; any other file, a person's own note included, is never one.
    """

    def __init__(self, folder: Path):
        self.folder = folder
        names: list[str] = []
        try:
            with os.scandir(folder) as listing:
                for item in listing:
                    name = item.name
                    if not name.startswith(".") and name.endswith(".md") and item.is_file(follow_symlinks=False):
                        names.append(name[::-1])
        except (FileNotFoundError, NotADirectoryError):
            pass
        # Reversed and sorted, the notes ending "-<id>.md" are one run that bisection finds: a string a note,
        # where a map of every name's suffixes held about twelve (245 MB for a folder of 100,000 notes).
        names.sort()
        self._reversed = names
        self._settled = bytearray(len(names))  # a byte a note: this export wrote or replaced it

    def _ending(self, ident: str) -> Iterator[int]:
        """The positions of the names in the folder that end with ``-<ident>.md``."""
        key = f"-{ident}.md"[::-1]
        at = bisect_left(self._reversed, key)
        while at < len(self._reversed) and self._reversed[at].startswith(key):
            yield at
            at += 1

    def settle(self, name: str) -> None:
        """Mark ``name`` as this export's own (written or replaced): it is no leftover."""
        at = bisect_left(self._reversed, name[::-1])
        if at < len(self._reversed) and self._reversed[at] == name[::-1]:
            self._settled[at] = 1

    def _is_note_of(self, name: str, memory_id: str) -> bool:
        """Whether ``name`` is an export's note of ``memory_id``: its words, that id's ending, that id inside."""
        ident = _name_ident(memory_id)
        path = self.folder / name
        if not name.endswith(f"-{ident}.md") or not _WORDS.fullmatch(name[: -len(ident) - 4]) or path.is_symlink():
            return False
        return _front_id(path) == memory_id

    def stale(self, entry: MemoryEntry, name: str) -> list[Path]:
        """This memory's notes in the folder under another name than ``name`` (its note now)."""
        found = []
        for at in self._ending(_name_ident(entry.id)):
            other = self._reversed[at][::-1]
            if other != name and self._is_note_of(other, entry.id):
                found.append(self.folder / other)
        return found

    def leftovers(self) -> Iterator[tuple[str, str]]:
        """(name, id) of each export-named note this export did not write or replace (its memory left
        the store, or another store's export made it; a person's note holds no such name and id)."""
        for at, reversed_name in enumerate(self._reversed):
            name = reversed_name[::-1]
            if self._settled[at] or not _WORDS.fullmatch(name[:-3]):
                continue
            memory_id = _front_id(self.folder / name)
            if memory_id is not None and self._is_note_of(name, memory_id):
                yield name, memory_id


def _front_id(path: Path) -> str | None:
    """The ``id`` in a note's frontmatter, or None (unreadable, a symlink, no such string)."""
    from memory.markdown.notes import split_frontmatter

    if path.is_symlink():
        return None
    try:
        front, _, _ = split_frontmatter(path.read_bytes().decode("utf-8", "replace"))
    except OSError:
        return None  # unreadable: it cannot be shown to be a memory's note, so it stays
    found = front.get("id")
    return found if isinstance(found, str) else None


async def removed_notes(store, earlier: EarlierNotes, *, remove: bool) -> list[str]:
    """The notes in the folder of memories ``store`` deleted or purged since (it once held each id and
    holds it no more), deleted from the folder when ``remove``: a purge is for good, so its words leave
    the export too. Notes of ids this store never held (another store's, a person's) are not touched."""
    found: list[str] = []
    page: list[tuple[str, str]] = []

    async def settle() -> None:
        gone = await store.removed([memory_id for _, memory_id in page])
        for name, memory_id in page:
            if memory_id in gone:
                if remove:
                    (earlier.folder / name).unlink(missing_ok=True)
                found.append(name)
        page.clear()

    for item in earlier.leftovers():
        page.append(item)
        if len(page) >= PAGE:
            await settle()
    if page:
        await settle()
    return found


# What an export record says beside the memory's own fields (iter_records): a note keeps each under its
# name, so a Markdown round trip links and archives as a JSON Lines one does.
_CARRIED = ("sources", "digest", "quoted", "consolidated")


def note_text(entry: MemoryEntry, record: Mapping[str, Any]) -> str:
    """YAML frontmatter with every field and what ``record`` (the export record of ``entry``) carries
    (the ids a consolidated memory carries, whether it is a digest of them, those of them a claim only
    quotes, whether consolidation archived it), then the content exactly as stored."""
    import yaml

    data = entry.model_dump(mode="json")
    front = {k: data[k] for k in _FRONT_FIELDS} | {k: record[k] for k in _CARRIED if k in record}
    return "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n\n" + entry.content + "\n"


async def export_markdown(store, folder: Path, *, on_progress: Callable[[int], None] | None = None) -> ExportReport:
    """Write one note per memory of ``store`` into ``folder`` (a vault a person can read and edit).

    The notes hold hidden and private memories: a folder made here is 0700 and every note 0600.
    """
    private_dir(folder)
    report = ExportReport(stores=[str(store.path)])
    earlier = EarlierNotes(folder)
    async for record in iter_records(store, unreadable=report.unreadable):
        entry = MemoryEntry.model_validate(record["memory"])
        name = note_name(entry)
        write_private(folder / name, note_text(entry, record))
        earlier.settle(name)
        for stale in earlier.stale(entry, name):  # its note under its old words: replaced by the one above
            stale.unlink(missing_ok=True)
            earlier.settle(stale.name)
        report.memories += 1
        if on_progress is not None:
            on_progress(report.memories)
    report.notes_removed = len(await removed_notes(store, earlier, remove=True))
    return report


async def notes_replaced(store, folder: Path) -> list[str]:
    """The names of the notes in ``folder`` that an export of ``store`` would replace with other text: a
    person's edit of an earlier export, or a note of their own by that name, and an earlier export's note
    of a memory whose words (so its note's name) changed since. A note the export would write
    as it is, or a name not there yet, loses nothing. Reads the store once more; call it only when the
    folder holds something."""
    if not folder.is_dir():
        return []
    replaced: list[str] = []
    earlier = EarlierNotes(folder)
    async for record in iter_records(store, unreadable=[]):
        entry = MemoryEntry.model_validate(record["memory"])
        path = folder / note_name(entry)
        replaced += [stale.name for stale in earlier.stale(entry, path.name)]  # renamed: its text goes too
        if path.is_symlink() or not path.is_file():
            continue  # nothing there, or what write_private refuses to replace anyway
        try:
            differs = path.read_bytes() != note_text(entry, record).encode("utf-8")
        except OSError:
            differs = True  # unreadable: it cannot be shown to be the same
        if differs:
            replaced.append(path.name)
    return replaced


def write_private(path: Path, text: str) -> None:
    """Write ``path`` as 0600 through a hidden partial file renamed over it once complete (a failed write
    leaves the old note whole); a symlink in its place is refused, never followed or replaced."""
    if path.is_symlink():
        raise OSError(errno.ELOOP, "a symlink is in the note's place", str(path))
    with replaced_when_complete(path, path.with_name(f".{path.name}.partial"), f"export of note {path.name}") as handle:
        handle.write(text)


def markdown_records(
    folder: Path, *, default_agent: str, max_content_bytes: int = MAX_CONTENT_BYTES
) -> Iterator[tuple[str, dict | str]]:
    """Records from a folder of notes: frontmatter fields plus the body as content.

    The folder is walked and read under the vault's rules (memory/markdown/notes.py):
    symlinks, FIFOs and other non-regular files, names that are not UTF-8,
    hidden files and files too large to hold a memory are skipped and named,
    never opened. A note a person added without an id gets the vault's
    path-derived id, so re-importing it is still an upsert.
    """
    from memory.markdown.notes import note_id, read_note_bytes, split_frontmatter, walk_folder

    most = max_content_bytes + FRONTMATTER_BYTES
    walk = walk_folder(folder, max_file_bytes=most)
    for rel, why in walk.skipped:
        yield rel, f"skipped ({why})"
    for info in walk.notes:
        read = read_note_bytes(folder, info, most)
        if isinstance(read, str):
            yield info.rel_path, f"skipped ({read})"
            continue
        try:
            text = read[0].decode("utf-8").lstrip("\ufeff").replace("\r\n", "\n")
        except UnicodeDecodeError as exc:
            yield info.rel_path, f"unreadable ({exc})"
            continue
        meta, body, malformed = split_frontmatter(text)
        if malformed:
            yield info.rel_path, "malformed frontmatter (not a YAML mapping)"
            continue
        content = body[:-1] if body.endswith("\n") else body
        memory = {k: _plain(v) for k, v in meta.items() if k in _FRONT_FIELDS}
        memory.setdefault("id", note_id(info.rel_path))
        memory.setdefault("agent_id", default_agent)
        memory["content"] = content
        # A note of one's own may hold a ``sources`` property of another kind ("sources: Wikipedia"): only
        # a list of ids, as an export writes it, says what a consolidated memory carries. ``quoted`` and
        # ``consolidated`` are checked as a line's are (_checked): a bad one makes a bad note; none, no link.
        sources = _sources(meta)
        carries = {"sources": sources, "digest": meta.get("digest") is True} if sources and isinstance(sources, list) else {}
        carries |= {k: meta[k] for k in ("quoted", "consolidated") if k in meta}
        yield info.rel_path, {"memory": memory} | carries


def _plain(value: Any) -> Any:
    """YAML turns an ISO timestamp into a datetime (a bare day into a date); give pydantic what the JSON path gives it."""
    return value.isoformat() if isinstance(value, date) else value
