"""The audit log: one JSON object per line, rotated so it cannot grow without limit."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from memory.home import private_dir

MAX_BYTES = 5 * 1024 * 1024
KEEP = 3


class AuditLog:
    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES, keep: int = KEEP):
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep

    def append(self, event: str, **fields) -> None:
        """Append one event. Never raises: an unwritable log must not fail the caller."""
        record = {"at": time.time(), "event": event, **fields}
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        try:
            private_dir(self.path.parent)
            self._rotate_if_needed(len(line))
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
        except OSError:
            pass

    def _rotate_if_needed(self, incoming: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size + incoming <= self.max_bytes:
            return
        for index in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        stale = self.path.with_name(f"{self.path.name}.{self.keep + 1}")
        stale.unlink(missing_ok=True)

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
