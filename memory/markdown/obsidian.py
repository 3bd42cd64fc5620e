"""Obsidian's own excluded files (Settings → Files and links → Excluded files).

Obsidian keeps them in the vault's ``.obsidian/app.json`` as
``userIgnoreFilters``: a note the user hid from Obsidian's search should not
surface in an agent's recall either, so Arcana adds them to the vault's own
``ignore`` globs. Obsidian matches a filter as a path prefix, or as a regular
expression when it is written ``/…/``. A prefix becomes a glob. A regex is
reported and not applied, because it cannot be expressed as a glob. The file
is Obsidian's, so a damaged one is reported and otherwise ignored, never fatal;
like a note it is never read through a symlink, and a FIFO or device is not
opened for reading.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memory import strict_json

APP_JSON = Path(".obsidian") / "app.json"
MAX_APP_JSON_BYTES = 1024 * 1024  # Obsidian's own is a few hundred bytes


@dataclass(frozen=True)
class ExcludedFiles:
    globs: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def _read_app_json(root: Path) -> bytes | None:
    """``.obsidian/app.json``'s bytes, or None when absent. Read as notes are: never through a symlink
    (the folder's or the file's), never blocking on a FIFO, never more than MAX_APP_JSON_BYTES."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        folder = os.open(root / APP_JSON.parent, flags | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(root / APP_JSON.parent):
            raise OSError(f"{APP_JSON.parent} is a symlink, which is never followed") from exc
        raise
    try:
        try:
            fd = os.open(APP_JSON.name, flags, dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if os.path.islink(root / APP_JSON):
                raise OSError("it is a symlink, which is never followed") from exc
            raise
    finally:
        os.close(folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("it is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_APP_JSON_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_APP_JSON_BYTES:
        raise OSError(f"it is over {MAX_APP_JSON_BYTES // (1024 * 1024)} MiB")
    return data


def excluded_files(root: Path) -> ExcludedFiles:
    """The vault's Obsidian exclusions as ignore globs, plus what could not be applied."""
    path = root / APP_JSON
    try:
        raw = _read_app_json(root)
        if raw is None:
            return ExcludedFiles()
        data = strict_json.loads(strict_json.decode(raw))
    except (OSError, strict_json.JSONRefused) as exc:
        return ExcludedFiles(problems=(f"{path}: unreadable ({exc}); Obsidian's excluded files are not applied",))
    filters = data.get("userIgnoreFilters", []) if isinstance(data, dict) else None
    if not isinstance(filters, list):
        return ExcludedFiles(problems=(f"{path}: userIgnoreFilters is not a list; Obsidian's excluded files are not applied",))
    globs, problems = [], []
    for item in filters:
        if not isinstance(item, str) or not item.strip("/ "):
            problems.append(f"{path}: excluded-files entry {item!r} is not a path; skipped")
        elif len(item) > 2 and item.startswith("/") and item.endswith("/"):
            problems.append(
                f"{path}: the regex filter {item!r} is not applied; add an equivalent glob to the "
                "vault's `ignore` list in config.json (`vaults.<name>.ignore`)"
            )
        else:
            globs.append(_literal(item) + "*")
    return ExcludedFiles(tuple(globs), tuple(problems))


def _literal(prefix: str) -> str:
    """``prefix`` as an fnmatch pattern that matches exactly those characters."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in prefix)
