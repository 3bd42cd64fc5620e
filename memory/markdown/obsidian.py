"""Obsidian's own excluded files (Settings → Files and links → Excluded files).

Obsidian keeps them in the vault's ``.obsidian/app.json`` as
``userIgnoreFilters``: a note the user hid from Obsidian's search should not
surface in an agent's recall either, so Arcana adds them to the vault's own
``ignore`` globs. Obsidian matches a filter as a path prefix, or as a regular
expression when it is written ``/…/``. A prefix becomes a glob. A regex is
reported and not applied, because it cannot be expressed as a glob. The file
is Obsidian's, so a damaged one is reported and otherwise ignored, never fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

APP_JSON = Path(".obsidian") / "app.json"


@dataclass(frozen=True)
class ExcludedFiles:
    globs: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def excluded_files(root: Path) -> ExcludedFiles:
    """The vault's Obsidian exclusions as ignore globs, plus what could not be applied."""
    path = root / APP_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ExcludedFiles()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
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
