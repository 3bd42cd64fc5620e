"""How far Arcana stored a host session's transcript: one small JSON record per host session, at
``<agent folder>/hosts/<host>/<session id>.json``. Read here (by a save, and by `arcana doctor`);
written only by ``runtime/host_save.py``."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from memory import strict_json
from memory.errors import ConfigError


class SaveRecord(NamedTuple):
    offset: int  # how far the transcript was stored
    stored: list[str]  # the uuids of the lines stored
    session: str | None = None  # the Arcana session a save was writing when it stopped (killed): resumed by the next


def read_record(path: Path) -> SaveRecord:
    """How far this host session's transcript was stored, the uuids of the lines it stored, and the
    session a save left unfinished; 0 and none when never. A damaged record is a ConfigError: read as
    0, every fact and the session of what was already saved would be stored again."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return SaveRecord(0, [])
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        record = strict_json.loads(strict_json.decode(raw))
    except strict_json.JSONRefused as exc:
        record = exc
    offset = record.get("offset", 0) if isinstance(record, dict) else None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        why = record if isinstance(record, Exception) else "not a record of how far the transcript was saved"
        raise ConfigError(f"{path}: {why}; remove it (the next save reads the transcript from its start, "
                          "storing again what was saved)")
    lines, session = record.get("stored", []), record.get("session")
    return SaveRecord(offset, [line for line in lines if isinstance(line, str)] if isinstance(lines, list) else [],
                      session if isinstance(session, str) else None)


def damaged_records(agent_dir: Path) -> list[str]:
    """What is wrong with each record of ``agent_dir`` that a save would refuse, and the fix."""
    found = []
    for path in sorted(agent_dir.glob("hosts/*/*.json")):
        try:
            read_record(path)
        except ConfigError as exc:
            found.append(str(exc))
    return found
