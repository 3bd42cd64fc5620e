"""Obsidian ``[[wikilinks]]``, ``![[embeds]]`` and Markdown ``[links](Note.md)`` → ``references`` edges,
deterministically.

Resolution, in order, never fuzzy:

1. an empty target (``[[#Heading]]``, ``[[#^block]]``) is the note itself;
2. an exact root-relative path, case-insensitive, ``.md`` optional
   (``[[folder/Note]]``, and ``[[Note]]`` for a note at the root);
   ``./`` and ``../`` are taken relative to the linking note;
3. a path suffix on a ``/`` boundary (``[[sub/Note]]`` for ``a/sub/Note.md``);
4. a bare name by file name, case-insensitive, as Obsidian does;
5. a frontmatter alias, case-insensitive;
6. an existing non-Markdown file (``![[diagram.png]]``) is an *attachment*:
   resolved, but not an edge, since attachments are not notes.

More than one candidate at the first step that finds any is *ambiguous*;
none anywhere is *dangling*. Both are counted and listed, never guessed.
Self-links are resolved but write no edge.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from memory.graph.edges import REFERENCES, EdgeStore, MemoryEdge
from memory.markdown.notes import NOTE_SUFFIXES, ParsedNote, mask_code

if TYPE_CHECKING:
    from memory.adapters.markdown import MarkdownFolderAdapter

WIKILINK_SOURCE = "wikilink"

_LINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")

RESOLVED, SELF, ATTACHMENT, DANGLING, AMBIGUOUS = "resolved", "self", "attachment", "dangling", "ambiguous"


@dataclass(frozen=True)
class WikiLink:
    target: str  # the note or file part, before any '#'
    fragment: str | None = None  # heading, or '^block'
    alias: str | None = None
    embed: bool = False


def parse_wikilinks(body: str) -> list[WikiLink]:
    """Every wikilink in ``body`` outside code, in order of appearance."""
    links = []
    for match in _LINK.finditer(mask_code(body)):
        inner = match.group(2).replace("\\|", "|")
        target, _, alias = inner.partition("|")
        target, hash_, fragment = target.partition("#")
        links.append(
            WikiLink(
                target=target.strip(),
                fragment=fragment.strip() if hash_ else None,
                alias=alias.strip() or None,
                embed=match.group(1) == "!",
            )
        )
    return links


@dataclass(frozen=True)
class LinkSource:
    """One note as the resolver needs it: where it is, its id, its aliases, its link targets."""

    rel_path: str
    id: str
    aliases: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class LinkProblem:
    rel_path: str
    target: str
    candidates: tuple[str, ...] = ()


@dataclass
class EdgeIndexReport:
    """Outcome of a re-index pass. Counts are per link occurrence except ``edges_written``."""

    notes_scanned: int = 0
    links_found: int = 0
    resolved: int = 0
    dangling: int = 0
    ambiguous: int = 0
    edges_written: int = 0
    attachments: int = 0
    self_links: int = 0
    dangling_links: list[LinkProblem] = field(default_factory=list)
    ambiguous_links: list[LinkProblem] = field(default_factory=list)

    def describe(self) -> str:
        """The one wording of the link counts, for `vault index` and every `vault watch` line alike."""
        return (
            f"links: {self.links_found} found, {self.resolved} resolved, {self.attachments} attachments, "
            f"{self.dangling} dangling, {self.ambiguous} ambiguous; {self.edges_written} edges"
        )

    def counts(self) -> dict[str, int]:
        return {
            "notes_scanned": self.notes_scanned,
            "links_found": self.links_found,
            "resolved": self.resolved,
            "attachments": self.attachments,
            "self_links": self.self_links,
            "dangling": self.dangling,
            "ambiguous": self.ambiguous,
            "edges_written": self.edges_written,
        }


def _fold(text: str) -> str:
    """A name as links match it: case-insensitive, and NFC, as Obsidian normalises paths; macOS names
    files in NFD (``e`` + U+0301) while typed links are NFC (``é``), so ``[[Café]]`` must find either."""
    return unicodedata.normalize("NFC", text.lower())


def _strip_note_suffix(key: str) -> tuple[str, bool]:
    for suffix in NOTE_SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)], True
    return key, False


def _filed(note: LinkSource) -> tuple[str, list[str], str, list[str]]:
    """The keys a resolver files ``note`` under: its path (no note suffix), that path's suffixes on a
    ``/`` boundary, its file name and its aliases, all folded."""
    path = _strip_note_suffix(_fold(note.rel_path))[0]
    parts = path.split("/")
    suffixes = ["/".join(parts[start:]) for start in range(1, len(parts) - 1)]
    return path, suffixes, parts[-1], [_fold(alias.strip()) for alias in note.aliases]


def _written(target: str, source: LinkSource) -> str | None:
    """``target`` as written in ``source``, folded and root-relative; None for a path above the root."""
    text = target.replace("\\", "/").strip()
    if text.startswith(("./", "../")):
        text = posixpath.normpath(posixpath.join(posixpath.dirname(source.rel_path), text))
        if text.startswith("../"):
            return None
    return _fold(text.lstrip("/"))


def lookup_key(target: str, source: LinkSource) -> str | None:
    """The one key ``target`` (written in ``source``) is looked up by: a resolver holding every note filed
    under it (:func:`filed_under`) resolves it as one holding the whole vault does."""
    text = _written(target, source)
    return None if text is None else _strip_note_suffix(text)[0]


def filing_keys(note: LinkSource) -> set[str]:
    """Every key a resolver files ``note`` under: only links looked up by one of them can resolve to it, so
    adding, removing or re-aliasing it changes only those links."""
    path, suffixes, name, aliases = _filed(note)
    return {path, name, *suffixes, *aliases}


def filed_under(note: LinkSource, keys: set[str]) -> bool:
    """Whether a resolver files ``note`` under any of ``keys``: the notes a few links can resolve to, picked
    from a vault's manifest a page at a time instead of loading every note."""
    return not keys.isdisjoint(filing_keys(note))


class LinkResolver:
    """Maps link targets to note ids for one folder snapshot."""

    def __init__(self, notes: Sequence[LinkSource], attachments: Sequence[str] = ()):
        self.by_path: dict[str, list[LinkSource]] = defaultdict(list)
        self.by_suffix: dict[str, list[LinkSource]] = defaultdict(list)  # 'sub/note' for 'a/sub/note'
        self.by_name: dict[str, list[LinkSource]] = defaultdict(list)
        self.by_alias: dict[str, dict[str, LinkSource]] = defaultdict(dict)
        for note in notes:
            path, suffixes, name, aliases = _filed(note)
            self.by_path[path].append(note)
            for suffix in suffixes:
                self.by_suffix[suffix].append(note)
            self.by_name[name].append(note)
            for alias in aliases:
                self.by_alias[alias][note.rel_path] = note
        self._memo: dict[str, tuple[str, list[LinkSource]]] = {}
        self.attachment_paths = {_fold(a) for a in attachments}
        self.attachment_names = {_fold(a.rsplit("/", 1)[-1]) for a in attachments}

    def resolve(self, target: str, source: LinkSource) -> tuple[str, list[LinkSource]]:
        """(status, candidates) for ``target`` as written in ``source``."""
        if not target:
            return SELF, [source]
        if not target.startswith("."):  # only ./ and ../ depend on where the link is written
            memo = self._memo.get(target)
            if memo is None:
                memo = self._memo[target] = self._resolve(target, source)
            return memo
        return self._resolve(target, source)

    def _resolve(self, target: str, source: LinkSource) -> tuple[str, list[LinkSource]]:
        text = _written(target, source)
        if text is None:
            return DANGLING, []
        key, explicit_note = _strip_note_suffix(text)
        for found in self._note_candidates(key):
            if found:
                return (RESOLVED if len(found) == 1 else AMBIGUOUS), found
        if not explicit_note and self._is_attachment(text):
            return ATTACHMENT, []
        return DANGLING, []

    def _note_candidates(self, key: str):
        yield self.by_path.get(key, [])
        if "/" in key:
            yield self.by_suffix.get(key, [])
        else:
            yield self.by_name.get(key, [])
            yield list(self.by_alias.get(key, {}).values())

    def _is_attachment(self, text: str) -> bool:
        if text in self.attachment_paths:
            return True
        if "/" not in text:
            return text in self.attachment_names
        return any(path.endswith("/" + text) for path in self.attachment_paths)


@dataclass
class NoteLinks:
    """One note's links, resolved: its edges and its per-occurrence tally."""

    edges: list[MemoryEdge] = field(default_factory=list)
    found: int = 0
    resolved: int = 0
    attachments: int = 0
    self_links: int = 0
    dangling: list[LinkProblem] = field(default_factory=list)
    ambiguous: list[LinkProblem] = field(default_factory=list)

    def tally(self) -> tuple[int, int, int, int, int, int]:
        """found, resolved, attachments, self links, dangling, ambiguous: the row the vault manifest keeps per note."""
        return (self.found, self.resolved, self.attachments, self.self_links, len(self.dangling), len(self.ambiguous))


def resolve_note(resolver: LinkResolver, note: LinkSource) -> NoteLinks:
    """Resolve every link target of ``note``; duplicate links to one note make one edge."""
    out = NoteLinks()
    seen: set[str] = set()
    for target in note.targets:
        out.found += 1
        status, found = resolver.resolve(target, note)
        if status in (RESOLVED, SELF):
            out.resolved += 1
            dst = found[0]
            if dst.id == note.id:
                out.self_links += 1
            elif dst.id not in seen:
                seen.add(dst.id)
                out.edges.append(MemoryEdge(note.id, dst.id, REFERENCES, WIKILINK_SOURCE, 1.0))
        elif status == ATTACHMENT:
            out.attachments += 1
        elif status == AMBIGUOUS:
            out.ambiguous.append(LinkProblem(note.rel_path, target, tuple(sorted(n.rel_path for n in found))))
        else:
            out.dangling.append(LinkProblem(note.rel_path, target))
    return out


def add_to_report(report: EdgeIndexReport, links: NoteLinks) -> None:
    report.links_found += links.found
    report.resolved += links.resolved
    report.attachments += links.attachments
    report.self_links += links.self_links
    report.dangling += len(links.dangling)
    report.ambiguous += len(links.ambiguous)
    report.dangling_links += links.dangling
    report.ambiguous_links += links.ambiguous


def link_graph(
    notes: Sequence[LinkSource], attachments: Sequence[str] = (), *, per_note: dict[str, NoteLinks] | None = None
) -> tuple[list[MemoryEdge], EdgeIndexReport]:
    """Resolve every note's link targets; return the wikilink edges and the tally (and, if asked, each note's)."""
    resolver = LinkResolver(notes, attachments)
    report = EdgeIndexReport(notes_scanned=len(notes))
    edges: list[MemoryEdge] = []
    for note in notes:
        links = resolve_note(resolver, note)
        edges += links.edges
        add_to_report(report, links)
        if per_note is not None:
            per_note[note.rel_path] = links
    return edges, report


def link_targets(body: str) -> tuple[str, ...]:
    """The targets of ``body``'s wikilinks and Markdown links, as a :class:`LinkSource` carries them."""
    return tuple(link.target for link in parse_wikilinks(body)) + markdown_link_targets(body)


def note_targets(note: ParsedNote) -> tuple[str, ...]:
    """A note's link targets: its body's, then its properties' wikilinks (``up: "[[Index]]"``), as Obsidian
    links them."""
    return link_targets(note.body) + tuple(link.target for link in parse_wikilinks(note.properties_text))


# [text](target "title") and ![alt](<a b.png>): what Obsidian writes with "Use [[Wikilinks]]" off.
_MD_LINK = re.compile(r"\[[^\[\]\n]*\]\(\s*(<[^<>\n]*>|[^\s()<>]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # http:, mailto:, obsidian:, file: — not a note of the vault


def markdown_link_targets(body: str) -> tuple[str, ...]:
    """The note or file part of each Markdown link in ``body`` outside code, URL-decoded
    (``My%20Note.md``), as wikilink targets resolve: a URL with a scheme is no target."""
    targets = []
    for match in _MD_LINK.finditer(mask_code(body)):
        raw = match.group(1)
        raw = raw[1:-1] if raw.startswith("<") else raw
        if _SCHEME.match(raw):
            continue
        targets.append(unquote(raw.partition("#")[0]).strip())
    return tuple(targets)


class WikilinkEdgeExtractor:
    """Extract ``[[wikilink]]`` edges from a folder into an :class:`EdgeStore`: the one writer of them.

    :meth:`reindex` reads the folder through ``reader``; the vault indexer,
    which keeps its own manifest of each note's targets, passes no reader and
    hands :meth:`replace_all` / :meth:`replace_notes` the notes it already has.
    """

    def __init__(self, reader: MarkdownFolderAdapter | None, edges: EdgeStore):
        self.reader = reader
        self.edges = edges

    async def reindex(self) -> EdgeIndexReport:
        """Scan the folder, resolve every wikilink, and make the result the whole wikilink edge set."""
        if self.reader is None:
            raise ValueError("reindex() reads the folder: construct the extractor with a MarkdownFolderAdapter")
        scan = await self.reader.scan()
        sources = [LinkSource(n.rel_path, n.id, n.aliases, note_targets(n)) for n in scan.notes]
        return await self.replace_all(sources, scan.attachments)

    async def replace_all(
        self, sources: Sequence[LinkSource], attachments: Sequence[str] = (), *, per_note: dict[str, NoteLinks] | None = None
    ) -> EdgeIndexReport:
        """Resolve every note's links and make them the whole wikilink edge set (a structural change)."""
        edges, report = link_graph(sources, attachments, per_note=per_note)
        report.edges_written = await self.edges.replace_source(WIKILINK_SOURCE, edges)
        return report

    async def replace_notes(
        self, resolver: LinkResolver, notes: Sequence[LinkSource], *, gone: Sequence[str] = ()
    ) -> dict[str, NoteLinks]:
        """Re-resolve only ``notes`` (those whose links may have changed) and rewrite just their outgoing
        edges, dropping those of the notes ``gone`` (ids)."""
        results = {note.rel_path: resolve_note(resolver, note) for note in notes}
        await self.edges.replace_outgoing(
            WIKILINK_SOURCE, [note.id for note in notes] + list(gone), [e for links in results.values() for e in links.edges]
        )
        return results
