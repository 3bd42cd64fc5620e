"""Shared pools: named stores — SQLite at ``pools/{name}.db`` or a database on a
PostgreSQL server (``pools.<name>.url`` / ``url_env``) — and who belongs to them.

Membership lives in one place, ``config.json``'s ``pools.<name>.members``
(agent ids, so a rename keeps it), which is what an agent's federation reads.
Removing a pool moves its database to the trash; nothing is deleted (a server
pool is only unregistered: its database belongs to the team, not this home).
A server URL is shown with its password masked, everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from memory.adapters.opener import open_store, open_tier
from memory.agent_links import names_agent
from memory.agents import AgentCard, AgentRegistry
from memory.config import ArcanaConfig, PoolSettings, editing_config, load_config
from memory.errors import ArcanaMemoryError, InvalidRequestError, NotFoundError
from memory.home import Home, check_name, file_id, shown_name, unusable_name
from memory.store_kinds import StoreKind


@dataclass
class PoolInfo:
    name: str
    database: str
    members: list[str]
    vaults: list[str] = field(default_factory=list)
    entries: int | None = None
    backend: str = "sqlite"
    reachable: bool | None = None  # server pools: could the server be reached (None: not asked)
    schema_version: int | None = None
    error: str | None = None  # why the pool could not be counted: a server out of reach (password masked), a bad file

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "backend": self.backend,
            "database": self.database,
            "members": self.members,
            "vaults": self.vaults,
            "entries": self.entries,
            "reachable": self.reachable,
            "schema_version": self.schema_version,
            "error": self.error,
        }


def pool_identity(home: Home, config: ArcanaConfig, name: str) -> tuple | None:
    """Which database pool ``name`` is now: its server settings, or its file (device, inode);
    None when no such pool is registered. A pool removed and created again under its name is
    another database, which a tier opened on the old one (kept open, its file in the trash) is not."""
    settings = config.pools.get(name)
    if settings is None:
        return None
    if settings.url is not None or settings.url_env is not None:
        return ("server", settings.url, settings.url_env)
    return ("file", file_id(home.pool_db(name)))


@dataclass(frozen=True)
class PoolRemoval:
    moved_to: Path | None  # the database in the trash (None: a server pool, or no file yet)
    detached_vaults: list[str]  # vaults that were attached to the pool, now attached to nothing


class PoolRegistry:
    """Create, inspect, remove pools and manage their members for one home."""

    def __init__(self, home: Home):
        self.home = home

    def _config(self) -> ArcanaConfig:
        return load_config(self.home.config_path)

    def _settings(self, config: ArcanaConfig, name: str) -> PoolSettings:
        if name not in config.pools:
            if why := unusable_name("pool", name):  # `pool create` refuses it: do not send the user there
                raise NotFoundError(f"no pool named {shown_name(name)} ({why}); see `arcana pool list`")
            raise NotFoundError(f"no pool named {shown_name(name)}; create it with `arcana pool create {name}`")
        return config.pools[name]

    async def create(self, name: str, *, url: str | None = None, url_env: str | None = None) -> PoolInfo:
        """Register the pool and create (or join, on a server) its migrated database.

        A server pool two homes create with the same URL is one pool: the
        second create finds the schema in place and only registers it here.
        """
        check_name("pool", name)
        taken = InvalidRequestError(f"a pool named {shown_name(name)} already exists; pick another name, or join it as it is")
        if name in self._config().pools:
            raise taken
        try:
            settings = PoolSettings(url=url, url_env=url_env)
        except ValidationError as exc:  # the message never echoes the URL
            raise InvalidRequestError(f"pool '{name}': {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        store = self._open(name, settings, "pool-create")
        try:
            await store.connect()
        finally:
            await store.aclose()
        with editing_config(self.home.config_path) as edit:  # the connect above is not held under the lock
            if name in edit.config.pools:
                raise taken
            edit.config.pools = {**edit.config.pools, name: settings}
        return await self.show(name)

    def _open(self, name: str, settings: PoolSettings, actor: str):
        return open_tier(self.home, StoreKind.POOL, name, config=ArcanaConfig(pools={name: settings}), actor=actor)

    def store(self, name: str, *, actor: str = "cli"):
        """The pool's store for an operator command (SQLite file or server database), not yet
        connected; NotFoundError when no such pool is registered."""
        return self._open(name, self.show_settings(name), actor)

    def show_settings(self, name: str) -> PoolSettings:
        """The pool's settings; NotFoundError when no such pool is registered."""
        return self._settings(self._config(), name)

    def names(self) -> list[str]:
        return sorted(self._config().pools)

    async def show(self, name: str, *, count: bool = True) -> PoolInfo:
        config = self._config()
        settings = self._settings(config, name)
        server = settings.url is not None or settings.url_env is not None
        info = PoolInfo(
            name=name,
            database=str(self.home.pool_db(name)),
            members=self._member_names(settings.members),
            vaults=sorted(v for v, vault in config.vaults.items() if vault.pool == name),
            backend="postgresql" if server else "sqlite",
        )
        if server:
            info.database = settings.url or f"${settings.url_env}"
            if count:
                await self._count_server(info, name, settings)
        elif count and self.home.pool_db(name).exists():
            store = open_store(self.home, StoreKind.POOL, name, actor="pool-show")
            try:
                info.entries = await store.count(include_archived=False)
            finally:
                await store.aclose()
        return info

    async def _count_server(self, info: PoolInfo, name: str, settings: PoolSettings) -> None:
        """Entries and schema version of a server pool; an unreachable server is reported, not raised."""
        try:
            store = self._open(name, settings, "pool-show")
            info.database = store.path
            try:
                info.entries = await store.count(include_archived=False)
                info.schema_version = await store.schema_version()
                info.reachable = True
            finally:
                await store.aclose()
        except Exception as exc:  # a pool list must still list the other pools
            info.reachable, info.error = False, str(exc)

    async def list(self) -> list[PoolInfo]:
        """Every pool, counted. A pool file that cannot be read (corrupt, a
        newer schema) is named in its own row, as a server out of reach is: one such pool made
        `pool list` exit 5 listing nothing, and `arcana ui`'s home page a 503."""
        listed = []
        for name in self.names():
            try:
                listed.append(await self.show(name))
            except ArcanaMemoryError as exc:
                info = await self.show(name, count=False)
                info.error = str(exc)
                listed.append(info)
        return listed

    def remove(self, name: str) -> PoolRemoval:
        """Drop the pool from the config, detach the vaults attached to it and move its database to
        the trash. A vault names its pool by name, so one left attached would join a new pool that
        reuses the name and show its notes to agents never given them."""
        self.show_settings(name)  # NotFoundError before any lock file is made
        with editing_config(self.home.config_path) as edit:
            config = edit.config
            settings = self._settings(config, name)
            detached = sorted(v for v, vault in config.vaults.items() if vault.pool == name)
            config.vaults = {
                v: vault.model_copy(update={"pool": None}) if vault.pool == name else vault for v, vault in config.vaults.items()
            }
            moved = None
            db = self.home.pool_db(name)
            if settings.url is None and settings.url_env is None and db.exists():
                moved = self.home.trash_place(f"pool-{name}")
                moved.mkdir(mode=0o700)
                for suffix in ("", "-wal", "-shm"):
                    part = Path(f"{db}{suffix}")
                    if part.exists():
                        part.replace(moved / part.name)
            config.pools = {k: v for k, v in config.pools.items() if k != name}
            config.memory.pools = [p for p in config.memory.pools if p != name]
        return PoolRemoval(moved, detached)

    def join(self, card: AgentCard, name: str) -> bool:
        """Make ``card`` a member of pool ``name``; False when it already was."""
        self.show_settings(name)  # NotFoundError before any lock file is made
        with editing_config(self.home.config_path) as edit:  # another command's change made meanwhile is kept
            config = edit.config
            settings = self._settings(config, name)
            if card.id in settings.members:
                return False
            config.pools = {**config.pools, name: settings.model_copy(update={"members": [*settings.members, card.id]})}
        return True

    def leave(self, card: AgentCard, name: str) -> bool:
        """Remove ``card`` from pool ``name``; False when it was not a member.

        A pool in ``memory.pools`` is every agent's: leaving it would change nothing the agent
        reads or writes, so it is refused rather than reported as done (or as never joined).
        """
        self.show_settings(name)  # NotFoundError before any lock file is made
        with editing_config(self.home.config_path) as edit:  # another command's change made meanwhile is kept
            config = edit.config
            settings = self._settings(config, name)
            if name in config.memory.pools:
                raise InvalidRequestError(
                    f"pool '{name}' is in memory.pools, which every agent belongs to, so '{card.name}' cannot leave it "
                    f"alone; nothing changed (take '{name}' out of memory.pools with `arcana config set`, "
                    "then `arcana agent join` the agents that stay)"
                )
            kept = [m for m in settings.members if not names_agent(m, card.id, card.name)]
            if len(kept) == len(settings.members):
                return False
            config.pools = {**config.pools, name: settings.model_copy(update={"members": kept})}
        return True

    def _member_names(self, members: list[str]) -> list[str]:
        by_id = {card.id: card.name for card in AgentRegistry(self.home).scan().cards}  # an unreadable one: its id
        return [by_id.get(member, member) for member in members]
