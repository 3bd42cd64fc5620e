"""MarkdownFolderAdapter: a folder of Markdown notes (an Obsidian vault) as read-only memory.

The folder is read through :mod:`memory.markdown.notes` (the walk, the skip
rules, the parser), exactly as the vault indexer reads it; this module adds
the adapter's parse cache and its keyword ranking. Nothing here ever writes to
the folder.
"""

from __future__ import annotations

import asyncio
import math
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.errors import MemoryWriteError
from memory.markdown.notes import (
    DEFAULT_IGNORE_GLOBS,
    DEFAULT_MAX_FILE_BYTES,
    NoteIdentity,
    ParsedNote,
    note_title,
    read_note,
    walk_folder,
)
from memory.query_terms import query_tokens
from memory.types import HealthStatus, MemoryEntry, MemoryQuery, MemoryScope, MemoryType, RetrievalMode


@dataclass(frozen=True)
class FolderNote:
    """A note as a consumer sees it: the entry plus its root-relative path and aliases."""

    entry: MemoryEntry
    rel_path: str
    aliases: tuple[str, ...] = ()
    body: str = ""


@dataclass
class FolderScan:
    """The folder's current parsed view."""

    notes: list[ParsedNote]
    attachments: list[str]
    skipped: list[tuple[str, str]]

    @property
    def frontmatter_problems(self) -> list[str]:
        return [n.rel_path for n in self.notes if n.frontmatter_problem]


def relevance(note: ParsedNote, tokens: Sequence[str], lowered: str) -> float:
    """Lexical relevance: whole-word hits (damped by frequency) beat substring hits; title hits count double."""
    title = note_title(note.rel_path).lower()
    score = 0.0
    for token in tokens:
        hits = note.words.get(token, 0)
        if hits:
            score += 1.0 + math.log1p(hits) / 4
        elif token in lowered:
            score += 0.5
        else:
            continue
        if token in title:
            score += 1.0
    return score


class MarkdownFolderAdapter:
    """Read-only :class:`MemoryAdapter` over one folder of Markdown notes.

    The folder has no index of its own, so every retrieval mode is served by
    one keyword scan (a one-line notice says so for semantic/hybrid). A
    process-local cache keyed by path → (mtime, size) means each search
    restats the tree but re-reads only new or changed files.
    """

    read_only = True  # the folder is the user's: the federation refuses writes before they reach it

    def __init__(
        self,
        root: Path | str,
        agent_id: Any,
        *,
        scope: MemoryScope = MemoryScope.PRIVATE,
        pool_name: str | None = None,
        default_type: MemoryType = MemoryType.SEMANTIC,
        ignore_globs: Sequence[str] = DEFAULT_IGNORE_GLOBS,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        on_degraded: Callable[[str], None] | None = None,
    ):
        self.root = Path(root).expanduser()
        self.who = NoteIdentity(str(agent_id), scope, pool_name, default_type)
        self.ignore_globs = tuple(ignore_globs)
        self.max_file_bytes = max_file_bytes
        self.on_degraded = on_degraded
        self._cache: dict[str, ParsedNote] = {}

    async def connect(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def health_check(self) -> HealthStatus:
        """One stat and one access probe on the root — no walk — so it can serve as a recovery probe."""
        try:
            st = os.stat(self.root)
        except OSError as exc:
            return HealthStatus(healthy=False, message=f"{self.root}: {exc.strerror or exc}")
        if not stat.S_ISDIR(st.st_mode):
            return HealthStatus(healthy=False, message=f"{self.root}: not a directory")
        if not os.access(self.root, os.R_OK | os.X_OK):
            return HealthStatus(healthy=False, message=f"{self.root}: not readable")
        return HealthStatus(healthy=True, message=f"{self.root}: ok")

    async def write(self, entry: MemoryEntry) -> None:
        """Refuse: the folder is the user's source of truth, not a sink; a silent drop would hide data loss."""
        raise MemoryWriteError(f"{self.root}: a Markdown folder is read-only memory; write to another tier")

    def scan_sync(self) -> FolderScan:
        """Walk the folder, re-parsing only files whose (mtime, size) changed since the last scan."""
        walk = walk_folder(self.root, ignore_globs=self.ignore_globs, max_file_bytes=self.max_file_bytes)
        skipped = list(walk.skipped)
        fresh: dict[str, ParsedNote] = {}
        for info in walk.notes:
            cached = self._cache.get(info.rel_path)
            if cached is not None and (cached.mtime_ns, cached.size) == (info.mtime_ns, info.size):
                fresh[info.rel_path] = cached
                continue
            parsed = read_note(self.root, info, self.who, self.max_file_bytes)
            if isinstance(parsed, str):
                skipped.append((info.rel_path, parsed))
            else:
                fresh[info.rel_path] = parsed
        self._cache = fresh
        return FolderScan(notes=list(fresh.values()), attachments=walk.attachments, skipped=sorted(skipped))

    async def scan(self) -> FolderScan:
        return await asyncio.to_thread(self.scan_sync)

    async def notes(self) -> list[FolderNote]:
        """Every note with its on-disk path, from the same cached scan ``search`` uses."""
        scan = await self.scan()
        return [FolderNote(n.entry, n.rel_path, n.aliases, n.body) for n in scan.notes]

    async def get(self, entry_id: str) -> MemoryEntry | None:
        """The note with id ``entry_id`` (ids are one-way hashes, so this matches over the cached scan)."""
        scan = await self.scan()
        for note in scan.notes:
            if note.id == entry_id:
                return note.entry
        return None

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]:
        """Keyword scan ranked pinned → lexical relevance → importance → recency, ties by path."""
        if query.retrieval_mode is not RetrievalMode.keyword and query.text:
            self._notice(
                f"{self.root}: a Markdown folder has no semantic index; "
                f"{query.retrieval_mode.value} search served by keyword scan"
            )
        scan = await self.scan()
        tokens = query_tokens(query.text)
        ranked: list[tuple[tuple, MemoryEntry]] = []
        for note in scan.notes:
            entry = note.entry
            if not _passes(entry, query):
                continue
            score = 0.0
            if tokens:
                score = relevance(note, tokens, note.lowered)
                if score <= 0:
                    continue
            key = (not entry.pinned, -score, -entry.importance, -entry.updated_at.timestamp(), note.rel_path)
            ranked.append((key, entry))
        ranked.sort(key=lambda item: item[0])
        results = []
        for key, entry in ranked[: query.limit]:
            matched = ["keyword"] if tokens else []
            results.append(entry.model_copy(update={"score": -key[1], "matched_by": matched}))
        return results

    def _notice(self, message: str) -> None:
        if self.on_degraded is not None:
            self.on_degraded(message)


def _passes(entry: MemoryEntry, query: MemoryQuery) -> bool:
    """The query's metadata filters that mean something for a folder note."""
    if query.types and entry.type not in query.types:
        return False
    if query.tags and not set(query.tags) <= set(entry.tags):
        return False
    if query.since is not None and entry.created_at < query.since:
        return False
    if query.until is not None and entry.created_at > query.until:
        return False
    if query.as_of is not None and entry.created_at > query.as_of:  # a note has one version: written by then
        return False
    if query.min_confidence is not None and entry.confidence < query.min_confidence:
        return False
    if query.pool_name is not None and entry.pool_name != query.pool_name:
        return False
    return True
