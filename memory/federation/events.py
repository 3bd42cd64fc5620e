"""Degradation notices: a thinned tier is reported, never swallowed."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from memory.audit import AuditLog


@dataclass(frozen=True)
class MemoryDegradedEvent:
    """One tier dropped out of one operation.

    ``op`` is read, write, promote (the global copy of a private entry) or get;
    ``reason`` is timeout, breaker_open, corruption or backend_error.
    """

    tier: str
    scope: str
    op: str
    reason: str
    detail: str = ""
    at: float = field(default_factory=time.time)

    def as_dict(self) -> dict:
        return asdict(self)


DegradedSink = Callable[[MemoryDegradedEvent], None]


def audit_sink(audit: AuditLog) -> DegradedSink:
    """Send each event to the (bounded, rotated) audit log as ``memory_degraded``."""

    def sink(event: MemoryDegradedEvent) -> None:
        fields = event.as_dict()
        fields.pop("at")
        audit.append("memory_degraded", **fields)

    return sink
