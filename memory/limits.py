"""How much text one memory may carry, and how many stores one import may name.

An unbounded memory costs every later read (FTS, recall, prompts) and once
cost a gigabyte of RAM to take in; 1 MiB is far above any fact or note a
memory should hold. Vault notes are bounded separately (``max_file_bytes``).
"""

from __future__ import annotations

from collections.abc import Iterable

from memory.errors import InvalidRequestError

MAX_CONTENT_BYTES = 1024 * 1024
# An `export --all` header's stores are made by its import, each an agent or a pool with its own
# database: a header of 2,000 labels and no memory made agents for ten minutes. A home of more
# stores than this exports them in parts (`export --agent` / `--pool`).
MAX_IMPORT_STORES = 1000


def content_too_large(size: int, limit: int) -> InvalidRequestError:
    return InvalidRequestError(
        f"memory content is {size:,} bytes, over the limit of {limit:,} bytes (memory.max_content_bytes); "
        "store a summary, or split it into several memories"
    )


def content_size(content: str, limit: int = MAX_CONTENT_BYTES) -> int:
    """``content``'s UTF-8 size, or its length when that proves it within ``limit`` (no encoding needed)."""
    # A character is at most 4 bytes: short texts need no encoding to be known small enough.
    return len(content) if len(content) * 4 <= limit else len(content.encode("utf-8", "surrogatepass"))


def check_content(contents: Iterable[str], limit: int | None) -> None:
    """Refuse (before anything is written) when any content is over ``limit`` UTF-8 bytes; None: no limit."""
    if limit is None:
        return
    for content in contents:
        if (size := content_size(content, limit)) > limit:
            raise content_too_large(size, limit)


def tags_size(tags: Iterable[str], limit: int = MAX_CONTENT_BYTES) -> int:
    """The UTF-8 size of ``tags`` together, or their length when that proves them within ``limit``."""
    tags = list(tags)
    length = sum(map(len, tags))
    return length if length * 4 <= limit else sum(len(tag.encode("utf-8", "surrogatepass")) for tag in tags)


def check_tags(tags: Iterable[str], limit: int | None) -> None:
    """Refuse tags that together are over ``limit`` UTF-8 bytes (as content is): a memory's tags go out
    with it on every recall, so a limit on its text that its tags could pass would bound nothing."""
    if limit is not None and (size := tags_size(tags, limit)) > limit:
        raise InvalidRequestError(
            f"memory tags are {size:,} bytes together, over the limit of {limit:,} bytes (memory.max_content_bytes)"
        )


def nul_field(content: str, tags: Iterable[str]) -> str | None:
    """'content' or 'tags' when it holds a NUL character, else None. PostgreSQL text cannot hold one (a pool
    refused the write as if the server were down) and jsonb cannot read one in a tag (one such row failed every
    tag-filtered read of its pool), so no engine takes it: a memory reads the same on every tier."""
    if "\x00" in content:
        return "content"
    return "tags" if any("\x00" in tag for tag in tags) else None


def nul_refused(field: str) -> InvalidRequestError:
    return InvalidRequestError(f"a NUL character (\\x00) in the memory's {field}, which no store keeps; remove it")


def check_entries(entries: Iterable, limit: int | None) -> None:
    """Refuse (before anything is written) when any memory's content, or its tags together, are over ``limit``,
    or either holds a NUL character."""
    for entry in entries:
        if (field := nul_field(entry.content, entry.tags)) is not None:
            raise nul_refused(field)
        if limit is None:
            continue
        check_content([entry.content], limit)
        if entry.tags:
            check_tags(entry.tags, limit)
