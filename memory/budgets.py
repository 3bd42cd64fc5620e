"""Per-tier timeout and breaker budgets from ``connections/memory-adapters.json``.

A keyword read hits local SQLite while a semantic read may wait on an
embedder, so each tier has separate budgets per operation. A missing file
means these defaults (programmatic wiring keeps working); a malformed one is
a :class:`ConfigError` naming the file and the field, never a silent default.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory.config import parse_json_file, read_utf8
from memory.errors import ConfigError
from memory.types import MemoryScope


MAX_TIMEOUT_MS = 3_600_000  # an hour
MAX_FAIL_THRESHOLD = 1_000
MAX_RESET_SECONDS = 86_400.0  # a day


class TierBudget(BaseModel):
    """Timeouts (milliseconds) and circuit-breaker settings for one tier.

    The defaults are generous for local SQLite on a busy laptop: a budget
    exists to stop a hung tier stalling a session, not to race healthy disks.
    """

    # strict: a quoted "5" or true is not a number (pydantic's lax mode read them as 5 and 1); JSON has no
    # Infinity, and a budget past an hour (a fail-fast past a day) stops no hung tier: both are refused.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    read_timeout_ms: int = Field(default=2_000, gt=0, le=MAX_TIMEOUT_MS)
    semantic_timeout_ms: int = Field(default=5_000, gt=0, le=MAX_TIMEOUT_MS)
    write_timeout_ms: int = Field(default=5_000, gt=0, le=MAX_TIMEOUT_MS)
    fail_threshold: int = Field(default=3, ge=1, le=MAX_FAIL_THRESHOLD)
    reset_after_seconds: float = Field(default=30.0, gt=0.0, le=MAX_RESET_SECONDS)


class ConnectionsConfig(BaseModel):
    """Budgets for every tier a federation may register.

    ``shared`` is keyed by pool name; a pool without an entry uses
    ``default_shared``. ``global`` is a Python keyword, hence ``global_``.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    private: TierBudget = Field(default_factory=TierBudget)
    global_: TierBudget = Field(default_factory=TierBudget, alias="global")
    shared: dict[str, TierBudget] = Field(default_factory=dict)
    default_shared: TierBudget = Field(default_factory=TierBudget)

    def for_tier(self, scope: MemoryScope, pool_name: str | None = None) -> TierBudget:
        if scope is MemoryScope.PRIVATE:
            return self.private
        if scope is MemoryScope.GLOBAL:
            return self.global_
        return self.shared.get(pool_name or "", self.default_shared)

    @classmethod
    def load(cls, path: Path) -> ConnectionsConfig:
        """Read ``path``; a missing file yields defaults, a malformed one raises."""
        try:
            text = read_utf8(path)
        except FileNotFoundError:
            return cls()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
        raw = parse_json_file(path, text, "fix the file")
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: the top level must be a JSON object")
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise ConfigError(f"{path}: {field}: {first['msg']}; fix the file (man/federation.md#resilience) "
                              "— it was not changed") from None
