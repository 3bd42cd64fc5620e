"""Which folders are vaults: the ``vaults`` section of config.json, and each vault's files under the home."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from memory.agents import AgentRegistry
from memory.audit import AuditLog
from memory.config import ArcanaConfig, VaultConfig, editing_config, load_config
from memory.deadline import lock_wait
from memory.errors import InvalidRequestError, NotFoundError
from memory.home import Home, check_name, shown_name
from memory.limits import MAX_CONTENT_BYTES
from memory.locks import exclusive_within
from memory.markdown.obsidian import ExcludedFiles, excluded_files
from memory.types import MemoryScope
from memory.vaults.state import state_lock, update_state

REMOVE_WAIT_SECONDS = 30.0  # for an index run in flight to finish before its vault's index is deleted


@dataclass(frozen=True)
class Vault:
    """A registered vault and where its derived files live (never inside the folder)."""

    name: str
    config: VaultConfig
    home: Home

    @property
    def root(self) -> Path:
        return Path(self.config.path)

    def overlap(self) -> str | None:
        """Why this folder cannot be a vault of this home, or None: the two must not overlap.

        A folder that holds the home (where its walk and watch see it) would be written by every
        index (its database, state and lock files), and a watch would see those writes and index
        again, without end; a folder inside the home is the home's to back up, restore over and
        trash. A home in a dot-folder of the vault (``~/.arcana`` in a vault at ``~``) is apart:
        no walk or watch looks there.
        """
        root, home = self.root.resolve(), self.home.root.expanduser().resolve()
        if root == home:
            return f"{root} is the Arcana home: every index would write into the folder"
        if root in home.parents:
            if not any(part.startswith(".") for part in home.relative_to(root).parts):
                return f"{root} holds the Arcana home {home}: every index would write into the folder"
        elif home in root.parents:
            return f"{root} is inside the Arcana home {home}, which backup, restore and agent removal manage"
        return None

    def check_apart(self, done: str = "indexed") -> None:
        """ConfigError (exit 4) when a registered vault overlaps the home (a hand-edited config, a home
        moved since): nothing is indexed, watched or read (``done`` says which, for the message),
        so a search never scans the home's own files as notes; ``vault remove`` still forgets it."""
        problem = self.overlap()
        if problem is not None:
            from memory.errors import ConfigError

            raise ConfigError(f"vault '{self.name}': {problem}; nothing was {done} "
                              f"(`arcana vault remove {self.name}`, or keep the home elsewhere)")

    def registered(self) -> bool:
        """Whether the vault is still in the config (a watch outlives a `vault remove`)."""
        try:
            VaultRegistry(self.home).get(self.name)
        except NotFoundError:
            return False
        return True

    def record(self, **fields) -> str | None:
        """Update the state file while the vault is registered; a removed vault's state is never recreated.
        Returns the message to pass on when the file was found damaged and moved aside."""
        told = update_state(self.state_path, only_while=self.registered, **fields)
        if told is not None:
            AuditLog(self.home.audit_log).append("vault_state_moved_aside", vault=self.name, detail=told)
            told = f"vault '{self.name}': its state file {told}"
        return told

    @cached_property
    def obsidian_excluded(self) -> ExcludedFiles:
        return excluded_files(self.root)

    @property
    def ignore_globs(self) -> list[str]:
        """What is never indexed or read: the vault's ``ignore`` plus Obsidian's excluded files."""
        return [*self.config.ignore, *self.obsidian_excluded.globs]

    @property
    def max_note_bytes(self) -> int:
        """The largest note read: ``max_file_bytes``, but never past what one memory may hold."""
        return min(self.config.max_file_bytes, MAX_CONTENT_BYTES)

    @property
    def db_path(self) -> Path:
        return self.home.vault_db(self.name)

    @property
    def state_path(self) -> Path:
        return self.home.vault_state(self.name)

    @property
    def lock_path(self) -> Path:
        return self.home.locks_dir / f"vault-{self.name}.lock"

    @property
    def agent_name(self) -> str | None:
        """The attached agent's current name (the config holds its id), or what the config says if unknown."""
        if not self.config.agent:
            return None
        try:
            return AgentRegistry(self.home).resolve(self.config.agent).name
        except NotFoundError:
            return self.config.agent

    def identity(self) -> tuple[str, MemoryScope, str | None]:
        """(agent_id, scope, pool) stamped on every entry: a read-only shared tier.

        An agent-attached vault carries the agent's id; otherwise the pseudo
        agent ``vault:<name>``.
        """
        agent_id = f"vault:{self.name}"
        if self.config.agent:
            agent_id = AgentRegistry(self.home).resolve(self.config.agent).id
        return agent_id, MemoryScope.SHARED, self.config.pool


class VaultRegistry:
    def __init__(self, home: Home):
        self.home = home

    def _config(self):
        return load_config(self.home.config_path)

    def list(self) -> list[Vault]:
        config = self._config()
        return [Vault(name, cfg, self.home) for name, cfg in sorted(config.vaults.items())]

    def get(self, name: str) -> Vault:
        config = self._config()
        if name not in config.vaults:
            known = ", ".join(sorted(config.vaults)) or "none registered"
            raise NotFoundError(f"no vault named {shown_name(name)} (vaults: {known}); add one with `arcana vault add PATH --name N`")
        return Vault(name, config.vaults[name], self.home)

    def add(
        self,
        path: Path | str,
        name: str,
        *,
        agent: str | None = None,
        pool: str | None = None,
        ignore: list[str] | None = None,
        max_file_bytes: int | None = None,
    ) -> Vault:
        """Register ``path`` as vault ``name``; the folder is only stat-ed, never written."""
        check_name("vault", name)
        if agent and pool:
            raise InvalidRequestError("a vault attaches to an agent or to a pool, not both; give one of --agent or --pool")
        root = Path(path).expanduser().resolve()
        if not root.exists():
            raise NotFoundError(f"{root}: no such directory")
        if not root.is_dir():  # there, but not a folder: the path given is wrong, not missing
            kind = "a file, not a folder" if root.is_file() else "not a folder"
            raise InvalidRequestError(f"{root} is {kind}; give the folder of notes to index")
        if agent:
            agent = AgentRegistry(self.home).resolve(agent).id  # by id: a rename keeps it, a new namesake does not
        with editing_config(self.home.config_path) as edit:  # a vault added meanwhile (of this name or folder) is seen
            return self._register(edit.config, root, name, agent, pool, ignore, max_file_bytes)

    def settled(self, config: ArcanaConfig, name: str, field: str) -> ArcanaConfig:
        """``config``, whose vault ``name`` just had ``field`` set (`config set vaults.<name>.<field>`), held
        to what `vault add` holds that field to, an agent stored by id as it stores it: an unknown agent or
        pool attached nothing, silently, until an index failed on it. Only ``field`` is checked, so
        a bad value set by hand earlier can still be replaced (or cleared with null)."""
        vault = config.vaults.get(name)
        if vault is None or field not in ("agent", "pool", "path"):
            return config
        if field == "path":
            problem = Vault(name, vault, self.home).overlap()
            if problem is not None:
                raise InvalidRequestError(f"{problem}; nothing changed (keep the notes and the home apart)")
            return config
        if getattr(vault, field) is None:
            return config
        other = "pool" if field == "agent" else "agent"
        if getattr(vault, other) is not None:
            raise InvalidRequestError(f"vault '{name}' is attached to its {other} already; a vault attaches to an agent "
                                      f"or a pool: `arcana config set vaults.{name}.{other} null` first")
        if field == "pool":
            self._pool_exists(config, vault.pool)
            return config
        settled = vault.model_copy(update={"agent": AgentRegistry(self.home).resolve(vault.agent).id})
        return config.model_copy(update={"vaults": {**config.vaults, name: settled}})

    @staticmethod
    def _pool_exists(config: ArcanaConfig, pool: str | None) -> None:
        if pool is not None and pool not in config.pools:
            check_name("pool", pool)
            raise NotFoundError(f"no pool named {shown_name(pool)}; create it with `arcana pool create {pool}` first")

    def _register(self, config: ArcanaConfig, root: Path, name: str, agent, pool, ignore, max_file_bytes) -> Vault:
        self._pool_exists(config, pool)
        for other, cfg in config.vaults.items():
            if Path(cfg.path) == root:
                raise InvalidRequestError(
                    f"{root} is already registered as vault '{other}'; nothing changed "
                    f"(see `arcana vault list`, or `arcana vault remove {other}` first)"
                )
        if name in config.vaults:
            raise InvalidRequestError(
                f"a vault named {shown_name(name)} already exists ({config.vaults[name].path}); "
                f"choose another name, or `arcana vault remove {name}` first"
            )
        fields: dict = {"path": str(root), "agent": agent, "pool": pool, "ignore": list(ignore or [])}
        if max_file_bytes is not None:
            fields["max_file_bytes"] = max_file_bytes
        vault = Vault(name, VaultConfig(**fields), self.home)
        problem = vault.overlap()
        if problem is not None:
            raise InvalidRequestError(f"{problem}; nothing registered (keep the notes and the home apart)")
        config.vaults[name] = vault.config
        return vault

    def remove(self, name: str) -> list[Path]:
        """Unregister ``name`` and delete its derived index and state; the folder is never touched.

        An index run in flight finishes first (its writer lock, waited for up
        to :data:`REMOVE_WAIT_SECONDS`); a later one finds the vault gone, so
        neither leaves a removed vault's index behind.
        """
        vault = self.get(name)
        removed = []
        writer = exclusive_within(vault.lock_path, f"index of vault '{name}'", lock_wait(REMOVE_WAIT_SECONDS))
        with writer, state_lock(vault.state_path):  # a watch's state write waits, then sees the vault gone
            with editing_config(self.home.config_path) as edit:  # another command's change made meanwhile is kept
                edit.config.vaults.pop(name, None)
            for path in (vault.db_path, Path(f"{vault.db_path}-wal"), Path(f"{vault.db_path}-shm"), vault.state_path,
                         Path(f"{vault.state_path}.lock")):
                if path.exists():
                    path.unlink()
                    removed.append(path)
        return removed
