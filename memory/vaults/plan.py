"""What an index pass would do, as a value: planned by :mod:`memory.vaults.indexer`, read by
:mod:`memory.vaults.relink` to find the links it can change (its own module, so neither imports the other)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.vaults.manifest import FileRecord


@dataclass
class IndexPlan:
    """What an index pass would do; computing it never writes anything.

    Notes the pass leaves as the manifest has them are counted, not held: the
    notes after the pass are the manifest's records less ``removed_paths``,
    overlaid with ``read`` (see :func:`current_records`).
    """

    mode: str
    meta: dict[str, str]
    read: dict[str, FileRecord]  # every note read this pass (changed and touched), by path
    notes: int  # how many notes the vault holds after the pass
    recorded: int  # how many records the manifest held before it
    added: int  # changed notes whose row is new
    changed: list[FileRecord]  # re-read window by window at apply time: a parsed note is ~4 KB, a record ~0.4
    touched: list[FileRecord]
    scanned: int
    skipped: list[tuple[str, str]]
    frontmatter_problems: list[str]
    removed_ids: list[str]
    removed_paths: list[str]
    attachments: list[str]
    structural: bool  # notes added/removed/re-aliased or attachments changed: the set of names changed
    relink_all: bool = False  # attachments, resolution or identity changed, or links pending: resolve every link
    moved: set[str] = field(default_factory=set)  # keys of notes added, removed or re-aliased (unless relink_all)
