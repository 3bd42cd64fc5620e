"""The ~/.arcana layout, resolved at call time so tests can point ARCANA_HOME anywhere."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def default_home() -> Path:
    env = os.environ.get("ARCANA_HOME")
    return Path(env).expanduser() if env else Path.home() / ".arcana"


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def resolve(cls, root: Path | str | None = None) -> Home:
        return cls(Path(root).expanduser() if root else default_home())

    @property
    def config_path(self) -> Path:
        return self.root / "config.json"

    @property
    def agents_dir(self) -> Path:
        return self.root / "agents"

    def agent_dir(self, agent_id: str) -> Path:
        return self.agents_dir / str(agent_id)

    def agent_db(self, agent_id: str) -> Path:
        return self.agent_dir(agent_id) / "memory.db"

    @property
    def global_db(self) -> Path:
        return self.root / "vector" / "global.db"

    @property
    def pools_dir(self) -> Path:
        return self.root / "pools"

    def pool_db(self, name: str) -> Path:
        return self.pools_dir / f"{name}.db"

    @property
    def vaults_dir(self) -> Path:
        return self.root / "vaults"

    @property
    def audit_log(self) -> Path:
        return self.root / "logs" / "audit.jsonl"

    @property
    def quarantine_dir(self) -> Path:
        return self.root / "quarantine"

    @property
    def trash_dir(self) -> Path:
        return self.root / "trash"

    @property
    def locks_dir(self) -> Path:
        return self.root / "locks"

    @property
    def backups_dir(self) -> Path:
        return self.root / "backups"

    @property
    def connections_path(self) -> Path:
        return self.root / "connections" / "memory-adapters.json"

    @property
    def models_cache(self) -> Path:
        return self.root / "models"

    def ensure(self) -> None:
        """Create the home (0700) and its fixed sub-directories; idempotent."""
        for directory in (self.root, self.agents_dir, self.root / "logs", self.locks_dir):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)

    def databases(self) -> list[Path]:
        """Every SQLite store under the home: agents, pools, global, vault indexes."""
        found = sorted(self.agents_dir.glob("*/memory.db"))
        found += sorted(self.pools_dir.glob("*.db"))
        found += sorted(self.vaults_dir.glob("*.db"))
        if self.global_db.exists():
            found.append(self.global_db)
        return found
