"""What coding-agent hosts read and write: their configuration shapes and their transcripts.

Pure: no store, no SQL, no file writes. ``operations/host_setup.py`` writes a
host's files; ``runtime/host_save.py`` stores what a transcript decided and
writes the records :mod:`memory.hosts.records` reads.
"""

from __future__ import annotations

from enum import StrEnum


class Host(StrEnum):
    """A coding-agent host whose configuration format is documented publicly."""

    CLAUDE_CODE = "claude-code"
