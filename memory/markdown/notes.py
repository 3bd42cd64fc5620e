"""A vault's notes as files: the folder walk, the skip rules and the note parser.

One ``.md``/``.markdown`` file is one note whose id is
``uuid5(NOTE_NAMESPACE, <root-relative POSIX path>)``, so a live read of the
folder (:class:`memory.adapters.markdown.MarkdownFolderAdapter`) and an
ingested copy of it (``arcana vault index``) share ids and the federation can
de-duplicate them. The adapter, the indexer, the watcher and the wikilink
extractor all read the folder through these functions, so they see it alike.
Nothing here ever writes to the folder.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
import unicodedata
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from memory.config import ExtractionSettings
from memory.types import EARLIEST, LATEST, ConfidenceSource, MemoryEntry, MemoryScope, MemoryType

# Fixed forever: changing it would change every note id and orphan every index.
NOTE_NAMESPACE = uuid.UUID("6f1d3c52-8a47-5b0e-9a41-0a7c5e2b9d13")
NOTE_SUFFIXES = (".md", ".markdown")
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
DEFAULT_IGNORE_GLOBS: tuple[str, ...] = ()
# Properties are a few lines; PyYAML reads about 50 KB a second of the worst YAML (a long flow list):
# a 1 MiB block took 22 s, every `vault check` and unindexed search again. A larger block is not read.
MAX_FRONTMATTER_CHARS = 64 * 1024
PROPERTY_NODES = 10_000  # values looked at for links in one note's properties (see _strings)

# Skip reasons, as reported by scans and `arcana vault check`.
HIDDEN, SYMLINK, TOO_LARGE, IGNORED, UNREADABLE, VANISHED, BINARY, BAD_NAME, NOT_REGULAR, BAD_TIME, WITHHELD = (
    "hidden",
    "symlink",
    "too_large",
    "ignored",
    "unreadable",
    "vanished",
    "binary",
    "name_not_utf8",
    "not_a_regular_file",
    "time_out_of_range",
    "withheld",
)


def printable_path(rel_path: str) -> str:
    """``rel_path`` with undecodable bytes (surrogate escapes) shown as ``\\xff``: safe to print, store or hash."""
    return os.fsencode(rel_path).decode("utf-8", "backslashreplace")


def _bad_name(name: str) -> bool:
    """A file name whose bytes are not UTF-8: it has no text path to index it under (Obsidian cannot open it either)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def note_id(rel_path: str) -> str:
    """The stable id of the note at root-relative POSIX path ``rel_path``."""
    return str(uuid.uuid5(NOTE_NAMESPACE, rel_path))


def is_note(name: str) -> bool:
    return name.lower().endswith(NOTE_SUFFIXES)


def note_title(rel_path: str) -> str:
    """The note's name as Obsidian shows it: the file name without its suffix, in NFC (see :func:`parse_note`)."""
    name = unicodedata.normalize("NFC", rel_path.rpartition("/")[2])
    stem, dot, suffix = name.rpartition(".")
    return stem if dot and f".{suffix.lower()}" in NOTE_SUFFIXES else name


# -- text: code masking, frontmatter, hashtags ---------------------------------

# A backtick fence's info string holds no backtick (CommonMark), so a line "```npm test``` then [[Link]]"
# is inline code, not a fence left open to the end of the note.
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}(?=[^`\n]*$)|~{3,})[^\n]*\n.*?(?:^[ \t]{0,3}\1[`~]*[ \t]*$|\Z)", re.M | re.S)
# A code span lives inside one paragraph: it may wrap a line but never crosses a blank line, so a
# stray backtick is a literal one and cannot swallow the links of the paragraphs after it.
_INLINE_CODE = re.compile(r"(`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)\1(?!`)", re.S)
_COMMENT = re.compile(r"%%.*?(?:%%|\Z)", re.S)  # Obsidian comments; an unclosed one runs to the end
_HASHTAG = re.compile(r"(?<![^\s(\[,;:!?\"'])#([\w/-]*[^\W\d_][\w/-]*)", re.UNICODE)
_HEADING_MARK = re.compile(r"^[ \t]{0,3}#{1,6}(?=[ \t]|$)", re.M)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def mask_code(text: str) -> str:
    """``text`` with fenced blocks, inline code spans and ``%%comments%%`` blanked
    (same length, newlines kept).

    Links and tags inside code are examples, and Obsidian neither renders nor
    links what sits in a comment; blanking instead of deleting keeps offsets
    and line structure for every later regex. Indented code blocks are not
    masked: without a full parser they cannot be told from nested list items,
    whose links are real.
    """

    def blank(match: re.Match) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    return _COMMENT.sub(blank, _INLINE_CODE.sub(blank, _FENCE.sub(blank, text)))


def split_frontmatter(text: str, max_chars: int | None = None) -> tuple[dict[str, Any], str, bool]:
    """(frontmatter mapping, body, malformed) — never fatal. A block that is no YAML mapping (bad
    YAML, a list, prose between two ``---`` rules), or is longer than ``max_chars`` (not parsed at
    all), is not properties: the whole text is the body, so none of it is lost to search."""
    found = _front_block(text)
    if found is None:
        return {}, text, False
    block, body = found
    if max_chars is not None and len(block) > max_chars:
        return {}, text, True
    try:
        data = yaml.safe_load(block) if block.strip() else {}
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        # Not only bad syntax: PyYAML's constructors raise ValueError on a well-formed but impossible
        # value (`date: 2024-02-30`, a 5,000-digit int), and a deeply nested block exhausts the stack.
        return {}, text, True
    if data is None:
        return {}, body, False
    if not isinstance(data, dict):
        return {}, text, True
    return data, body, False


def _front_block(text: str) -> tuple[str, str] | None:
    """(block, body) of a leading ``---`` … ``---``/``...`` block, or None; an unterminated block is
    ordinary text (a thematic break)."""
    if not text.startswith("---"):
        return None
    first_nl = text.find("\n")
    if first_nl < 0 or text[:first_nl].strip() != "---":
        return None
    end = re.search(r"^(?:---|\.\.\.)[ \t]*$", text[first_nl + 1 :], re.M)
    if end is None:
        return None
    return text[first_nl + 1 : first_nl + 1 + end.start()], text[first_nl + 1 + end.end() :].lstrip("\n")


# A withholding property in a block YAML cannot read (`tags: [a` a line below it): it still withholds.
_WITHHOLDING_LINE = re.compile(
    r"^(?:visibility[ \t]*:[ \t]*[\"']?(?:hidden|private)|archived[ \t]*:[ \t]*[\"']?(?:true|yes|on))[\"']?[ \t]*(?:#.*)?$",
    re.I | re.M,
)
# An ended version, as the export writes one: both properties with a value (see :func:`withheld`).
_ENDED_LINES = tuple(re.compile(rf"^{name}[ \t]*:[ \t]*(?!(?:null|~|''|\"\")?[ \t]*(?:#.*)?$)\S", re.I | re.M)
                     for name in ("superseded_by", "valid_to"))


def hashtags(masked_body: str) -> list[str]:
    """Obsidian #tags (nested #a/b too) outside code; heading markers are not tags."""
    text = _HEADING_MARK.sub(" ", masked_body)
    return [m.group(1).strip("/") for m in _HASHTAG.finditer(text) if m.group(1).strip("/")]


def _string_list(value: Any) -> tuple[list[str], bool]:
    """A frontmatter list-ish value as strings; (values, malformed)."""
    if value is None:
        return [], False
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v], False
    if isinstance(value, list):
        good = [str(v) for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        return good, len(good) != len(value)
    return [], True


def _aliases(value: Any) -> tuple[list[str], bool]:
    if isinstance(value, str):  # aliases are names, which may contain spaces
        return [value.strip()] if value.strip() else [], False
    return _string_list(value)


# -- the parsed note ----------------------------------------------------------


@dataclass(frozen=True)
class ParsedNote:
    """Everything the folder knows about one note, parsed once per (mtime, size)."""

    rel_path: str
    entry: MemoryEntry
    body: str
    aliases: tuple[str, ...]
    content_hash: str
    mtime_ns: int
    size: int
    frontmatter_problem: bool
    words: Counter = field(repr=False, compare=False)
    withheld: bool = False  # its frontmatter says hidden, private, archived or superseded (see :func:`withheld`)
    lowered: str = field(default="", repr=False, compare=False)  # content, lower-cased once per parse
    properties_text: str = field(default="", repr=False, compare=False)  # its properties' strings, for their [[links]]

    @property
    def id(self) -> str:
        return self.entry.id


@dataclass(frozen=True)
class NoteIdentity:
    """Who the entry belongs to: the fields a folder cannot say for itself."""

    agent_id: str
    scope: MemoryScope = MemoryScope.PRIVATE
    pool_name: str | None = None
    default_type: MemoryType = MemoryType.SEMANTIC


def parse_note(rel_path: str, data: bytes, mtime_ns: int, size: int, who: NoteIdentity) -> ParsedNote:
    """Parse one note's bytes into an entry. Never raises on content."""
    # NFC: text macOS wrote decomposed (e + U+0301) is the same words as typed text; a folder scan
    # splits "pâtissier" at the combining mark and never finds it otherwise.
    text = unicodedata.normalize("NFC", data.decode("utf-8", errors="replace")).lstrip("\ufeff").replace("\r\n", "\n")
    meta, body, unread = split_frontmatter(text, MAX_FRONTMATTER_CHARS)
    problem = unread
    masked = mask_code(body)
    tags, bad_tags = _string_list(meta.get("tags", meta.get("tag")))
    aliases, bad_aliases = _aliases(meta.get("aliases", meta.get("alias")))
    problem = problem or bad_tags or bad_aliases
    note_type = who.default_type
    if "type" in meta:
        # Only a string names a type: str() of anything else could be an alias bomb (nested *refs)
        # that expands to gigabytes of text.
        value = meta["type"]
        try:
            if not isinstance(value, str):
                raise ValueError(value)
            note_type = MemoryType(value.lower())
        except ValueError:
            problem = True
    importance = 0.5
    if "importance" in meta:
        value = meta["importance"]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
            importance = float(value)
        else:
            problem = True
    pinned = meta.get("pinned") is True
    if "pinned" in meta and not isinstance(meta["pinned"], bool):
        problem = True
    source, confidence = asserted(meta)
    title = note_title(rel_path)
    # The title leads the content: a note is found by its name, and an empty note is still a note.
    content = f"{title}\n\n{body.strip()}" if body.strip() else title
    modified = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    entry = MemoryEntry(
        id=note_id(rel_path),
        agent_id=who.agent_id,
        type=note_type,
        content=content,
        scope=who.scope,
        pool_name=who.pool_name,
        importance=importance,
        pinned=pinned,
        confidence=confidence,
        confidence_source=source,
        tags=tags + hashtags(masked),
        created_at=modified,
        updated_at=modified,
    )
    words = Counter(w.lower() for w in _WORD.findall(content + " " + " ".join(entry.tags)))
    return ParsedNote(
        rel_path=rel_path,
        entry=entry,
        body=body,
        aliases=tuple(aliases),
        content_hash=hashlib.sha256(data).hexdigest(),
        mtime_ns=mtime_ns,
        size=size,
        frontmatter_problem=problem,
        words=words,
        withheld=withheld(meta) or (unread and _withheld_unread(text)),
        lowered=content.lower(),
        properties_text="\n".join(_strings(meta)),
    )


def _strings(meta: dict[str, Any]) -> Iterator[str]:
    """The strings in a properties mapping, its lists and nested mappings: where Obsidian reads a
    property's links (``up: "[[Index]]"``, ``related: ["[[A]]", "[[B]]"]``). YAML aliases share
    nodes, so a 24 KB block can name 10**10 of them: at most PROPERTY_NODES are visited and
    MAX_FRONTMATTER_CHARS yielded (no more than a block holds without aliases)."""
    stack: list[Any] = [meta]
    visits = chars = 0
    while stack and visits < PROPERTY_NODES and chars < MAX_FRONTMATTER_CHARS:
        value = stack.pop()
        visits += 1
        if isinstance(value, str):
            chars += len(value)
            yield value
        elif isinstance(value, (dict, list)):  # visited plus stacked never passes PROPERTY_NODES
            items = list(value.values()) if isinstance(value, dict) else value
            stack.extend(reversed(items[: max(PROPERTY_NODES - visits - len(stack), 0)]))


_ASSERTED = (ConfidenceSource.AGENT, ConfidenceSource.INFERRED)


def asserted(meta: dict[str, Any]) -> tuple[ConfidenceSource, float]:
    """A note's source and confidence: the user's (``imported``, 1.0), unless its properties say an
    agent or a model asserted it, as `arcana export --format markdown` writes such a memory; then
    that source and the confidence stated (the default cap of an agent's claims when none is). A vault made of
    such an export must not vouch for the claim more than the store did (``--min-confidence``, the
    context a model reads); a property can only lower trust, never raise it."""
    said = meta.get("confidence_source")
    source = next((s for s in _ASSERTED if isinstance(said, str) and said.strip().lower() == s.value), None)
    if source is None:
        return ConfidenceSource.IMPORTED, 1.0
    value = meta.get("confidence")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return source, float(value)
    return source, ExtractionSettings().agent_confidence_cap


def withheld(meta: dict[str, Any]) -> bool:
    """Whether a note's properties withhold it from every read: ``visibility: hidden`` or ``private``,
    ``archived: true``, or a ``superseded_by`` with a ``valid_to``. `arcana export --format markdown`
    writes a memory an operator hid or forgot, and a version a newer one replaced, so; a vault made of
    such an export must not answer with it, as recall would not. A ``superseded_by`` alone is the
    user's own (a decision record naming the one that replaced it) and is read."""
    visibility = meta.get("visibility")
    ended = all(meta.get(name) is not None and str(meta[name]).strip() != "" for name in ("superseded_by", "valid_to"))
    return meta.get("archived") is True or (isinstance(visibility, str) and visibility.strip().lower() in ("hidden", "private")) or ended


def _withheld_unread(text: str) -> bool:
    """Whether frontmatter YAML could not read still says ``visibility: hidden``/``private``,
    ``archived: true``, or ``superseded_by`` and ``valid_to``, on lines of their own: a typo elsewhere
    in the block must not publish the note."""
    found = _front_block(text)
    return found is not None and (_WITHHOLDING_LINE.search(found[0]) is not None
                                  or all(line.search(found[0]) for line in _ENDED_LINES))


# -- the walk -----------------------------------------------------------------


@dataclass(frozen=True)
class FileStat:
    rel_path: str
    mtime_ns: int
    size: int


@dataclass
class FolderWalk:
    """What a walk found: candidate notes, attachments, and what it skipped and why."""

    notes: list[FileStat] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (rel_path, reason)


def _ignored(rel_path: str, globs: Sequence[str]) -> bool:
    """Whether a glob matches, blind to Unicode normalisation: macOS names folders in NFD while a typed
    glob, or Obsidian's excluded-files filter, is NFC; a mismatch would index the notes meant to stay out."""
    if not globs:
        return False
    path = unicodedata.normalize("NFC", rel_path)
    return any(fnmatch.fnmatchcase(path, unicodedata.normalize("NFC", g)) for g in globs)


def excluded(rel_path: str, globs: Sequence[str]) -> bool:
    """Whether the walk would keep out the note at ``rel_path``: the note or any folder on its way
    matches a glob (as in :func:`stat_note`)."""
    if not globs:
        return False
    parts = rel_path.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        if _ignored(prefix, globs) or (depth < len(parts) and _ignored(prefix + "/", globs)):
            return True
    return False


def walk_folder(root: Path, *, ignore_globs: Sequence[str] = (), max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FolderWalk:
    """List the notes under ``root`` without reading them; never follows symlinks.

    Ignore globs are fnmatch patterns over the root-relative POSIX path (``*``
    crosses ``/``); a directory that matches (e.g. ``Archive`` or
    ``Archive/*``) is not descended into.
    """
    found = FolderWalk()
    found.notes = list(walk_notes(root, found, ignore_globs=ignore_globs, max_file_bytes=max_file_bytes))
    found.attachments.sort()
    found.skipped.sort()
    return found


def walk_notes(
    root: Path, found: FolderWalk, *, ignore_globs: Sequence[str] = (), max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[FileStat]:
    """:func:`walk_folder`'s notes one at a time, in rel_path order, holding one directory listing per level.

    The order is the sorted order of the paths themselves (a directory sorts as
    its name plus ``/``), so a caller can merge it with a listing sorted by path
    (the vault manifest, read by keyset) without holding either. Attachments and
    skips go into ``found`` as they are met (unsorted).
    """
    levels: list[tuple[str, Iterator[os.DirEntry]]] = []
    listing = _listing(root, "", found)
    if listing is not None:
        levels.append(("", listing))
    while levels:
        prefix, entries = levels[-1]
        entry = next(entries, None)
        if entry is None:
            levels.pop()
            continue
        rel = f"{prefix}/{entry.name}" if prefix else entry.name
        if _bad_name(entry.name):
            found.skipped.append((printable_path(rel), BAD_NAME))
            continue
        try:
            if entry.name.startswith("."):
                found.skipped.append((rel, HIDDEN))
                continue
            if entry.is_symlink():
                found.skipped.append((rel, SYMLINK))
                continue
            if entry.is_dir(follow_symlinks=False):
                if _ignored(rel, ignore_globs) or _ignored(rel + "/", ignore_globs):
                    found.skipped.append((rel, IGNORED))
                else:
                    listing = _listing(root, rel, found)
                    if listing is not None:
                        levels.append((rel, listing))
                continue
            if not entry.is_file(follow_symlinks=False):
                if is_note(entry.name):  # a FIFO or device named like a note: never opened
                    found.skipped.append((rel, NOT_REGULAR))
                continue
            if _ignored(rel, ignore_globs):
                found.skipped.append((rel, IGNORED))
                continue
            if not is_note(entry.name):
                found.attachments.append(rel)
                continue
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            found.skipped.append((rel, VANISHED))
            continue
        except OSError:
            found.skipped.append((rel, UNREADABLE))
            continue
        if st.st_size > max_file_bytes:
            found.skipped.append((rel, TOO_LARGE))
            continue
        yield FileStat(rel, st.st_mtime_ns, st.st_size)


def _listing(root: Path, prefix: str, found: FolderWalk) -> Iterator[os.DirEntry] | None:
    """One directory's entries in path order (a directory as ``name/``), or None (noted in ``found``) if unreadable."""
    try:
        with os.scandir(root / prefix if prefix else root) as it:
            entries = list(it)
    except FileNotFoundError:
        if prefix:
            found.skipped.append((prefix, VANISHED))
        return None
    except OSError:
        found.skipped.append((prefix or ".", UNREADABLE))
        return None
    entries.sort(key=_path_key)
    return iter(entries)


def _path_key(entry: os.DirEntry) -> str:
    try:
        directory = entry.is_dir(follow_symlinks=False)
    except OSError:
        directory = False
    return entry.name + "/" if directory else entry.name


def stat_note(
    root: Path, rel_path: str, *, ignore_globs: Sequence[str] = (), max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> FileStat | str | None:
    """What a full walk would say of one path: a note's stat, a skip reason, or None (absent / not a note).

    Lets a watcher that knows which files changed look at just those, under
    exactly the walk's rules (hidden, ignored, symlinked anywhere on the way).
    """
    parts = rel_path.split("/")
    if any(part.startswith(".") for part in parts):
        return None
    if _bad_name(rel_path):
        return BAD_NAME
    if not is_note(parts[-1]):
        return None
    if excluded(rel_path, ignore_globs):
        return IGNORED
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        try:
            st = os.lstat(root / prefix)
        except FileNotFoundError:
            return None
        except OSError:
            return UNREADABLE
        if stat.S_ISLNK(st.st_mode):
            return SYMLINK
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_size > max_file_bytes:
        return TOO_LARGE
    return FileStat(rel_path, st.st_mtime_ns, st.st_size)


def read_note(root: Path, info: FileStat, who: NoteIdentity, max_file_bytes: int) -> ParsedNote | str:
    """Read and parse one note, or return the skip reason. Never follows a symlink."""
    read = read_note_bytes(root, info, max_file_bytes)
    if isinstance(read, str):
        return read
    data, mtime_ns = read
    # A modification time a memory cannot hold (`touch -d 2300-01-01`, a card from a camera with no clock)
    # failed the whole index, search and check with a line naming no file: only this note is skipped.
    if not EARLIEST.timestamp() * 1e9 <= mtime_ns < LATEST.timestamp() * 1e9:
        return BAD_TIME
    parsed = parse_note(info.rel_path, data, mtime_ns, len(data), who)
    return WITHHELD if parsed.withheld else parsed


def read_note_bytes(root: Path, info: FileStat, max_file_bytes: int) -> tuple[bytes, int] | str:
    """One note's (bytes, mtime_ns), or the skip reason: never through a symlink, never blocking on
    a FIFO, never more than ``max_file_bytes`` (a file grown since the walk is re-checked here)."""
    path = root / info.rel_path
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return VANISHED
    except OSError:
        return UNREADABLE
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return NOT_REGULAR
        if st.st_size > max_file_bytes:
            return TOO_LARGE
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_file_bytes + 1)
    except OSError:
        return UNREADABLE
    finally:
        os.close(fd)
    if len(data) > max_file_bytes:
        return TOO_LARGE
    if b"\x00" in data:  # anywhere, not only near the start: no store keeps a NUL (memory.limits.nul_field)
        return BINARY
    return data, st.st_mtime_ns
