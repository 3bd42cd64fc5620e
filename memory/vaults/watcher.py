"""``arcana vault watch``: keep a vault's index following its folder.

Events are debounced by watchfiles and each batch triggers one incremental
index pass (which restats the tree, so no event is trusted for content and a
missed event is repaired by the next batch). The watcher wakes every
``poll_seconds`` to check the folder still is the folder it watches: if it
vanished it waits for it to return, then catches up. Every batch and every
index is stamped into the vault's state file so ``vault status`` can tell a
live watch from a dead one.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from contextlib import aclosing
from pathlib import Path

from memory.config import load_config
from memory.errors import NotFoundError
from memory.markdown.notes import is_note, printable_path
from memory.vaults.indexer import VaultIndexReport, embedding_gateway, failure, index_vault, summary
from memory.vaults.registry import Vault, VaultRegistry

DEFAULT_DEBOUNCE_MS = 1600
DEFAULT_STEP_MS = 300
POLL_SECONDS = 2.0
FULL_RESCAN_SECONDS = 600.0

Line = Callable[[str, dict], None]  # (one human line, the same event as data)


def _visible(root: Path) -> Callable:
    """A watchfiles filter dropping anything under a dot-path (.obsidian/ churns while Obsidian is open)."""
    root_text = str(root)

    def keep(_change, path: str) -> bool:
        rel = os.path.relpath(path, root_text)
        return not any(part.startswith(".") and part not in (".", "..") for part in rel.split(os.sep))

    return keep


def describe(vault: Vault, changes: int | None, report: VaultIndexReport) -> str:
    stamp = time.strftime("%H:%M:%S")
    what = "catch-up" if changes is None else f"{changes} change{'s' * (changes != 1)}"
    return (
        f"{stamp} vault {vault.name}: {what} → +{report.added} ~{report.updated} -{report.removed} "
        f"({report.unchanged} unchanged, {len(report.skipped)} skipped); {report.links.describe()} "
        f"({report.seconds * 1000:.0f} ms)"
    )


class _Removed(Exception):
    """The vault was removed while watched: stop, and do not recreate its index."""


def _current(vault: Vault, line: Line) -> Vault:
    """The vault as registered now. A watch outlives `config set` as it does `vault remove`: a pass
    made with the registration it started with would index notes the user has since excluded
    (``ignore``, Obsidian's filters), or stamp them for an agent they no longer belong to."""
    try:
        return VaultRegistry(vault.home).get(vault.name)
    except NotFoundError:
        line(
            f"{time.strftime('%H:%M:%S')} vault {vault.name}: removed from the config; no longer watching it",
            {"at": time.time(), "vault": vault.name, "event": "removed"},
        )
        raise _Removed from None


async def _index(
    vault: Vault, changes: int | None, line: Line, gateway, *, paths: list[str] | None = None, silent_if_idle: bool = False
) -> Vault:
    """One pass over the vault as registered now; returns that registration (its folder may have moved)."""
    vault = _current(vault, line)
    if changes:
        vault.record(last_event_at=time.time())
    try:
        report = await index_vault(vault, embed=gateway is not None, gateway=gateway, paths=paths)
    except Exception as exc:  # a watch never dies silently: say it, record it, keep watching
        _current(vault, line)  # removed while the pass waited for the index
        vault.record(last_error=str(exc), last_error_at=time.time())
        line(
            f"{time.strftime('%H:%M:%S')} index failed: {failure(vault.name, exc)}",
            {"at": time.time(), "vault": vault.name, "event": "error", "error": str(exc)},
        )
        return vault
    if report.changed or not silent_if_idle:
        data = {"at": time.time(), "vault": vault.name, "event": "index", "changes": changes}
        line(describe(vault, changes, report), data | {"report": summary(report)})
    return vault


def note_paths(root: Path, changes) -> list[str] | None:
    """Root-relative paths when every change is to a note file; None means "walk everything".

    Directory events (a folder renamed or deleted says nothing about its
    children) and attachments (which change how links resolve) need the full walk.
    """
    paths = []
    for _change, path in changes:
        rel = os.path.relpath(path, root)
        if rel.startswith("..") or not is_note(rel) or os.path.isdir(path) or printable_path(rel) != rel:
            return None
        paths.append(Path(rel).as_posix())
    return paths


def _identity(root: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        pass


async def watch_vault(
    vault: Vault,
    stop: asyncio.Event,
    line: Line,
    *,
    embed: bool = True,
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
    step_ms: int = DEFAULT_STEP_MS,
    poll_seconds: float = POLL_SECONDS,
) -> None:
    """Watch one vault until ``stop`` is set (or it is removed). Never modifies the folder."""
    gateway = embedding_gateway(load_config(vault.home.config_path), vault) if embed else None
    if told := vault.record(watch_pid=os.getpid(), watch_started_at=time.time(), watch_stopped_at=None):
        line(f"{time.strftime('%H:%M:%S')} {told}", {"at": time.time(), "vault": vault.name, "event": "state_damaged",
                                                       "detail": told})
    try:
        await _watch_loop(vault, stop, line, gateway, debounce_ms, step_ms, poll_seconds)
    except _Removed:
        return
    finally:
        vault.record(watch_pid=None, watch_stopped_at=time.time())


async def _watch_loop(
    vault: Vault, stop: asyncio.Event, line: Line, gateway, debounce_ms: int, step_ms: int, poll_seconds: float
) -> None:
    from watchfiles import awatch

    while not stop.is_set():
        vault = _current(vault, line)
        root = vault.root
        identity = _identity(root)
        if identity is None:
            vault.record(folder_missing_since=time.time())
            line(
                f"{time.strftime('%H:%M:%S')} vault {vault.name}: folder {root} is missing; waiting for it",
                {"at": time.time(), "vault": vault.name, "event": "missing", "path": str(root)},
            )
            while not stop.is_set() and _identity(root) is None:
                await _sleep_or_stop(stop, poll_seconds)
            vault.record(folder_missing_since=None)
            continue
        if (await _index(vault, None, line, gateway)).root != root:
            continue  # re-pointed (`config set vaults.NAME.path`): watch the folder registered now
        settled, last_full = False, time.monotonic()
        try:
            batches = awatch(
                root,
                watch_filter=_visible(root),
                debounce=debounce_ms,
                step=step_ms,
                stop_event=stop,
                rust_timeout=int(poll_seconds * 1000),
                yield_on_timeout=True,
                ignore_permission_denied=True,
            )
            async with aclosing(batches):  # a broken-off watch releases its inotify handles now
                async for changes in batches:
                    if _identity(root) != identity:
                        break  # gone, or replaced by another folder: re-establish the watch
                    if not changes:
                        # Changes made between the catch-up pass and the watch taking hold raised
                        # no event, and events can be dropped under load: a periodic full pass
                        # (cheap when nothing changed) repairs both.
                        if not settled or time.monotonic() - last_full > FULL_RESCAN_SECONDS:
                            settled, last_full = True, time.monotonic()
                            if (await _index(vault, None, line, gateway, silent_if_idle=True)).root != root:
                                break
                        continue
                    paths = note_paths(root, changes)
                    if paths is None:
                        last_full = time.monotonic()
                    if (await _index(vault, len(changes), line, gateway, paths=paths)).root != root:
                        break
        except* (FileNotFoundError, RuntimeError, OSError) as group:
            # watchfiles raises inside a task group; a path it cannot decode (a file name that is not
            # UTF-8) is one of these too. The catch-up pass that follows skips such a file with a reason.
            exc = _first(group)
            line(
                f"{time.strftime('%H:%M:%S')} vault {vault.name}: watch interrupted ({exc}); re-establishing",
                {"at": time.time(), "vault": vault.name, "event": "interrupted", "error": str(exc)},
            )
            await _sleep_or_stop(stop, poll_seconds)


def _first(group: BaseExceptionGroup) -> BaseException:
    """The first leaf of a (possibly nested) exception group: the error worth a line."""
    while isinstance(group, BaseExceptionGroup):
        group = group.exceptions[0]
    return group


async def watch_vaults(
    vaults: Sequence[Vault], stop: asyncio.Event, line: Line, ready: Callable[[], None] = lambda: None, **options
) -> None:
    """Watch several vaults at once; returns when ``stop`` is set. A vault that overlaps the home
    is refused before any watch starts (ConfigError), not left to fail beside the others; ``ready``
    is called once none is, so "watching" is never said of a watch that does not start."""
    for vault in vaults:
        vault.check_apart()
    ready()
    await asyncio.gather(*(watch_vault(v, stop, line, **options) for v in vaults))
