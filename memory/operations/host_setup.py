"""Write (or only plan) the files a coding-agent host needs to use Arcana, never losing the user's.

Each file is read, checked and merged before anything is written, so a
malformed file stops the set-up with nothing changed. A file that would
change is first copied to ``NAME.bak-<UTC time>``; the new text replaces it
atomically; its unified diff is there for the caller to show. A file whose
data would not change is not touched, so running the set-up twice changes
nothing the second time.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memory import strict_json
from memory.errors import ConfigError, InvalidRequestError
from memory.home import staged_file
from memory.hosts import Host, claude_code
from memory.types import now_utc

MAX_CONFIG_BYTES = 4 << 20  # a host's config file is a few kilobytes; a bigger one is not one
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads pairs the halves it can; these are left alone


@dataclass
class PlannedFile:
    path: Path
    before: str | None  # the file's text now; None when there is no file
    original: dict[str, Any]  # what it holds now
    data: dict[str, Any]  # what it will hold
    indent: int | str = 2
    backup: Path | None = None

    @property
    def after(self) -> str:
        text = json.dumps(self.data, indent=self.indent, ensure_ascii=False) + "\n"
        # Trigger: a string of the user's holds a lone surrogate ("\ud800" in their file is valid JSON).
        # Why: UTF-8 cannot encode it, and the write died after the first file was written.
        # Outcome: it goes back out as the escape it came in as; every other character stays as it is.
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)

    @property
    def changed(self) -> bool:
        return self.before is None or self.original != self.data

    def diff(self) -> str:
        """The change as a unified diff (from /dev/null for a new file); empty when nothing changes."""
        if not self.changed:
            return ""
        old = [] if self.before is None else self.before.splitlines(keepends=True)
        lines = difflib.unified_diff(old, self.after.splitlines(keepends=True),
                                     "/dev/null" if self.before is None else str(self.path), str(self.path))
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def as_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "exists": self.before is not None, "changed": self.changed,
                "backup": None if self.backup is None else str(self.backup), "content": self.data}


def plan(host: Host, project: Path, *, launcher: list[str], home: Path, agent: str, server: str) -> list[PlannedFile]:
    """Every file ``host`` needs in ``project``, merged with what is there; nothing is written.

    ``launcher`` is how a host starts this Arcana (its absolute ``arcana``, or
    an interpreter with ``-m arcana_cli.main``); ``home`` goes into the
    server's ``env`` and the hooks' ``--home``, both absolute.
    """
    if not launcher or not os.path.isabs(launcher[0]):
        raise InvalidRequestError(f"the command a host runs must be an absolute path, not {launcher[:1]}")
    home_text = os.path.abspath(home)
    merges: dict[str, Callable[[dict], dict]] = {  # Host.CLAUDE_CODE is the one host so far
        claude_code.MCP_FILE: lambda data: claude_code.merge_mcp(
            data, server, claude_code.mcp_entry(launcher, home_text, agent)),
        claude_code.SETTINGS_FILE: lambda data: claude_code.merge_hooks(data, launcher, home_text, agent),
    }
    planned = []
    inside = Path(project).resolve()
    for relative, merge in merges.items():
        path = Path(os.path.abspath(project / relative))
        # A cloned project's `.mcp.json` or `.claude` may be a link to anywhere (~/.claude, a dotfile):
        # setup reads and writes only what resolves inside the project. A link within it stays linked.
        real = _resolved(path)
        if not real.is_relative_to(inside):
            raise InvalidRequestError(f"{path} leads outside {inside}, to {real}; host setup writes only "
                                      "inside the project: remove the link and run again; nothing was written")
        before, data = _read(path)
        try:
            merged = merge(data)
        except InvalidRequestError:  # the request, not the file, is what to change
            raise
        except ValueError as exc:
            raise ConfigError(f"{path}: {exc}; fix the file (or move it aside) and run again; nothing was written") from None
        planned.append(PlannedFile(path, before, data, merged, _indent_of(before)))
    return planned


def apply(files: list[PlannedFile], *, now: datetime | None = None) -> list[PlannedFile]:
    """Write every changed file, all or none: each one's backup and new text (a temp file beside it)
    are made first, and only once all are made are they renamed into place."""
    stamp = (now or now_utc()).strftime("%Y%m%dT%H%M%SZ")
    staged: list[tuple[Path, Path]] = []  # (temp file, the file it replaces)
    made: list[Path] = []  # folders and backups this run made, taken back if a file cannot be made
    try:
        for planned in files:
            if planned.changed:
                staged.append((_stage(planned, stamp, made), _target(planned)))
    except BaseException:
        # Trigger: one file could not be made (an immutable or read-only .claude, a full disk).
        # Why: the files before it were already replaced, the project left half set up (a server, no hooks).
        # Outcome: nothing is replaced; what this run made is removed and the error says where.
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()
        for planned in files:
            planned.backup = None
        raise
    for tmp, target in staged:
        os.replace(tmp, target)
    return files


def _target(planned: PlannedFile) -> Path:
    return planned.path.resolve() if planned.path.is_symlink() else planned.path  # a linked file stays linked


def _stage(planned: PlannedFile, stamp: str, made: list[Path]) -> Path:
    """The backup of ``planned``'s file (when there is one) and a temp file holding its new text; the temp's path."""
    target = _target(planned)
    folder = target.parent
    try:
        missing = [p for p in (folder, *folder.parents) if not p.exists()]
        folder.mkdir(parents=True, exist_ok=True)
        made.extend(reversed(missing))
        mode = 0o666 & ~_umask()
        if planned.before is not None:
            planned.backup = _free_name(target.with_name(f"{target.name}.bak-{stamp}"))
            made.append(planned.backup)
            shutil.copy2(target, planned.backup)
            mode = os.stat(target).st_mode & 0o7777
        return staged_file(target, planned.after, mode=mode)
    except OSError as exc:  # making a file in the folder failed: the folder is what to fix
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise OSError(exc.errno, f"{exc.strerror} (making {target.name}'s backup or new text in it; "
                      "nothing was written)", str(folder)) from None


def _resolved(path: Path) -> Path:
    """Where ``path`` leads. A link that leads back to itself (``.mcp.json -> .mcp.json``) is refused
    in one line: resolve() raised RuntimeError on it before Python 3.13 (a traceback)."""
    try:
        os.stat(path)
    except OSError as exc:  # a missing file is a new one; other faults are named when the file is read
        if exc.errno == errno.ELOOP:
            raise InvalidRequestError(f"{path} is a symbolic link that leads back to itself; remove the link and "
                                      "run again; nothing was written") from None
    return path.resolve()


def _read(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text and its JSON object; (None, {}) when there is no file."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None, {}
    except IsADirectoryError:
        raise ConfigError(f"{path} is a folder, not a file; move it aside and run again; nothing was written") from None
    except NotADirectoryError:
        raise ConfigError(f"{path.parent} is a file, not a folder; move it aside and run again; nothing was written") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror}); fix its permissions and run again") from None
    fix = "fix the file (or move it aside) and run again; nothing was written"
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES >> 20} MiB, not a host configuration; {fix}")
    # Trigger: a hand-edited file gives a key twice, NaN, 1e400 or a number of 5,000 digits.
    # Why: json kept the last key only and wrote NaN/Infinity back, so the merged file lost servers or
    # broke the host; the long number was a traceback. Outcome: refused, named, nothing written.
    try:
        text = strict_json.decode(raw)
        data = strict_json.loads(text) if text.strip() else {}
    except strict_json.JSONRefused as exc:
        raise ConfigError(f"{path}: {exc}; {exc.fix + ' and run again; nothing was written' if exc.fix else fix}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: holds a JSON {type(data).__name__}, expected an object; {fix}")
    return text, data


def _indent_of(text: str | None) -> int | str:
    """The indentation the file already uses (so a diff shows the change, not a reformat); 2 by default."""
    for line in (text or "").splitlines()[1:]:
        lead = line[: len(line) - len(line.lstrip())]
        if lead:
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def _free_name(path: Path) -> Path:
    candidate, number = path, 1
    while candidate.exists():
        candidate, number = path.with_name(f"{path.name}-{number}"), number + 1
    return candidate


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
