"""What `arcana doctor` checks. Each check is independent: one broken database
never stops the others from being examined (the tool that diagnoses must run)."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from pathlib import Path

from memory.home import Home

Progress = Callable[[int, int], None]


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def as_dict(self) -> dict:
        return asdict(self)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# Model files are public downloads (written by fastembed's own cache), not memory: not checked.
_PUBLIC_DIRS = ("models",)


def exposed_paths(home: Home) -> list[tuple[Path, int]]:
    """Every folder and file under the home that others could read or write, with its mode."""
    exposed = []
    for folder, dirs, files in os.walk(home.root):
        here = Path(folder)
        if here == home.root:
            dirs[:] = [d for d in dirs if d not in _PUBLIC_DIRS]
        for path in (here, *(here / name for name in files)):
            try:
                mode = stat.S_IMODE(os.lstat(path).st_mode)
            except OSError:
                continue  # vanished while we looked
            if mode & 0o077 and not path.is_symlink():
                exposed.append((path, mode))
    return exposed


def check_home(home: Home) -> list[Check]:
    if not home.root.exists():
        return [Check("home", False, f"{home.root} does not exist; run `arcana init`")]
    mode = _mode(home.root)
    checks = [
        Check("home permissions", mode & 0o077 == 0, f"{home.root} is {mode:o}" + ("" if mode & 0o077 == 0 else "; run chmod 700"))
    ]
    exposed = exposed_paths(home)
    shown = ", ".join(f"{path.relative_to(home.root)} ({mode:o})" for path, mode in exposed[:5] if path != home.root)
    more = f" and {len(exposed) - 5} more" if len(exposed) > 5 else ""
    checks.append(
        Check(
            "file permissions",
            not exposed,
            "every folder 700, every file 600"
            if not exposed
            else f"{len(exposed)} open to others: {shown}{more}; run `chmod -R go-rwx {home.root}`",
        )
    )
    return checks


def check_config(home: Home) -> list[Check]:
    from memory.agents import AgentRegistry, shared_name
    from memory.config import load_config
    from memory.errors import ConfigError

    checks = []
    try:
        load_config(home.config_path)
        checks.append(Check("config", True, f"{home.config_path}: valid" + ("" if home.config_path.exists() else " (defaults)")))
    except ConfigError as exc:
        checks.append(Check("config", False, str(exc)))
    roster = AgentRegistry(home).scan()
    shared = roster.shared_names()
    if not roster.unreadable and not shared:
        checks.append(Check("agent cards", True, f"{len(roster.cards)} agent(s)"))
    for card in roster.unreadable:  # each one its own row: the readable agents are checked on regardless
        checks.append(Check("agent cards", False, str(card)))
    for name, ids in shared.items():
        checks.append(Check("agent cards", False, str(shared_name(name, ids))))
    return checks


def check_side_files(home: Home) -> list[Check]:
    """The pieces beside the databases that the config names: each vault's state file and each pool's
    database (or its server URL). Damaged, they read as empty ("never indexed", no memories), so no
    other check sees them. Nothing is checked when the config itself fails its check."""
    from memory.config import load_config
    from memory.errors import ConfigError, UnsetVariableError
    from memory.vaults.state import damaged, load_state

    try:
        config = load_config(home.config_path)
    except ConfigError:
        return []
    checks = []
    for name in sorted(config.vaults):
        why = load_state(home.vault_state(name))[1]
        if why is not None:
            checks.append(Check(f"vault state {name}", False, damaged(home.vault_state(name), name, why)))
    if config.vaults and not checks:
        checks.append(Check("vault states", True, f"{len(config.vaults)} vault(s), every state file readable"))
    pools = []
    for name, settings in sorted(config.pools.items()):
        if settings.url is None and settings.url_env is None:
            if not home.pool_db(name).exists():
                pools.append(Check(f"pool {name}", False, f"its database {home.pool_db(name)} is missing: its memories "
                                   f"are gone; restore a backup (`arcana restore`) or `arcana pool remove {name}`"))
            continue
        try:
            settings.server_url(name)
        except (ConfigError, UnsetVariableError) as exc:  # a bad URL, or its variable not set here
            pools.append(Check(f"pool {name}", False, str(exc)))
    if config.pools and not pools:
        pools.append(Check("pools", True, f"{len(config.pools)} pool(s), each with its database or server URL"))
    return checks + pools


def check_restores(home: Home) -> list[Check]:
    """A failed row for each interrupted restore whose journal cannot be read (none otherwise: an
    interrupted restore with a sound journal was finished before doctor started)."""
    from memory.operations.restore_swap import damaged_journals

    return [Check("restore", False, said) for said in damaged_journals(home.root)]


def check_host_records(home: Home) -> list[Check]:
    """Each agent's host-save records (how far a session's transcript was stored): a damaged one
    stops every save of its session, so it is a failed row naming the file and the fix."""
    from memory.hosts.records import damaged_records

    agents = sorted(p for p in home.agents_dir.iterdir() if p.is_dir()) if home.agents_dir.is_dir() else []
    checks = [Check(f"host-save record {agent.name}", False, said) for agent in agents for said in damaged_records(agent)]
    if not checks and any((agent / "hosts").is_dir() for agent in agents):
        checks.append(Check("host-save records", True, "every host session's record reads"))
    return checks


def check_agent_folders(home: Home) -> Check:
    """Every folder under ``agents/`` has its card: one without is an orphan no command reaches.

    Trigger: ``agents/<id>/`` holds no ``agent.json`` (a card removed by hand, a folder copied in, or
    left by an older Arcana writing for an agent deleted meanwhile). Why: no agent uses its memory,
    yet backups carry it and doctor checked its database as if it were one. Outcome: named, with the fix.
    """
    if not home.agents_dir.is_dir():
        return Check("agent folders", True, "no agents yet")
    orphans = sorted(p for p in home.agents_dir.iterdir()
                     if p.is_dir() and not p.is_symlink() and not (p / "agent.json").is_file())
    if not orphans:
        return Check("agent folders", True, "every agent folder has its card")
    shown = ", ".join(str(p.relative_to(home.root)) + ("/ (memory.db)" if (p / "memory.db").exists() else "/")
                      for p in orphans[:5])
    more = f" and {len(orphans) - 5} more" if len(orphans) > 5 else ""
    return Check(
        "agent folders", False,
        f"{len(orphans)} without an agent.json, used by no agent: {shown}{more}; move each into "
        f"{home.root / 'trash'} (or put its agent.json back from the trash or a backup)",
    )


def check_sqlite() -> list[Check]:
    from memory.sqlite.connection import dbapi

    module = dbapi()
    conn = module.connect(":memory:")
    try:
        fts5 = bool(conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0])
        can_load = hasattr(conn, "enable_load_extension")
        vec = None
        if can_load:
            try:
                import sqlite_vec

                conn.enable_load_extension(True)
                sqlite_vec.load(conn)
                vec = conn.execute("SELECT vec_version()").fetchone()[0]
            except Exception as exc:  # report, never raise
                vec = f"failed: {exc}"
    finally:
        conn.close()
    return [
        Check("sqlite", True, f"SQLite {module.sqlite_version} via {module.__name__}"),
        Check("fts5", fts5, "available" if fts5 else "missing: keyword search cannot work"),
        Check(
            "sqlite-vec",
            bool(vec) and not str(vec).startswith("failed"),
            vec if vec else "cannot load extensions with this SQLite: semantic search falls back to keyword",
        ),
    ]


async def check_databases(home: Home, on_progress: Progress | None = None) -> list[Check]:
    """Version and ``quick_check`` of each database: the step that grows with the stores, hence the progress."""
    from memory.migrations.runner import head_version
    from memory.operations.schema import describe, read_version
    from memory.sqlite.connection import dbapi, reading

    checks = []
    head = head_version()
    databases = home.databases()
    for done, db in enumerate(databases):
        if on_progress is not None:
            on_progress(done, len(databases))
        name = f"db {db.relative_to(home.root)}"
        version, problem = read_version(db)
        if problem:
            checks.append(Check(name, False, problem))
            continue
        try:
            with reading(db) as conn:
                result = "; ".join(r[0] for r in conn.execute("PRAGMA quick_check(5)"))
        except dbapi().Error as exc:
            result = f"unreadable: {exc}"
        # A failed row names only what failed: "integrity ok" on a FAIL row reads as a pass.
        problems = [] if result == "ok" else [f"integrity check failed: {result}"]
        if version > head:
            problems.append(f"schema v{version} is {describe(version, head)} (v{head}): upgrade Arcana")
        if problems:
            checks.append(Check(name, False, "; ".join(problems)))
            continue
        detail = f"integrity ok, schema v{version}/{head}"
        if version < head:
            detail += f" ({describe(version, head)}: run arcana migrate up)"
        checks.append(Check(name, True, detail))
    if on_progress is not None:
        on_progress(len(databases), len(databases))
    return checks


async def check_servers(home: Home) -> list[Check]:
    """Schema version of each tier config puts on a PostgreSQL server, read without upgrading it.

    A pending one fails, whether or not an agent uses it: a SQLite file is upgraded (copied aside first)
    by the next command that opens it, a server tier only within the budget of whichever command meets
    it — a large pool's rewrite never fits and that command fails — so the fix is `arcana migrate up`.
    """
    from memory.config import load_config
    from memory.errors import ArcanaMemoryError
    from memory.operations.schema import server_versions

    try:
        config = load_config(home.config_path)
    except ArcanaMemoryError:
        return []  # the config check says why
    checks = []
    for row in await server_versions(home, config, actor="doctor"):
        name, version, head = f"db {row.database}", row.from_version, row.head
        if row.error is not None:  # an unset url_env or a bad URL: the pool and tier checks name it already
            continue
        if row.state == "current":
            checks.append(Check(name, True, f"schema v{version}/{head}"))
        elif row.state == "pending" and version == 0:
            checks.append(Check(name, True, "not created yet (made on first write)"))
        elif row.state == "pending":
            checks.append(Check(name, False, f"schema v{version}/{head} (pending: run `arcana migrate up`)"))
        elif row.state == "newer than this Arcana":
            checks.append(Check(name, False, f"schema is newer than this Arcana (v{head}): upgrade Arcana"))
        else:  # unreachable: the reason, password masked, and its fix
            checks.append(Check(name, False, row.state))
    return checks


async def check_vectors(home: Home, failed: Collection[Path] = ()) -> list[Check]:
    """Rows of a store with vectors that have none (a bulk write killed between its rows and their
    vectors), and, one failing check each, stores whose pinned vector index is damaged (an outside
    edit; ``quick_check`` does not see it)."""
    from memory.config import load_config
    from memory.operations.embedding_status import database_status
    from memory.operations.reindex import rebuild_command
    from memory.errors import ArcanaMemoryError
    from memory.store_kinds import StoreKind, kind_of

    try:
        embedding = bool(load_config(home.config_path).embedding.providers)
    except ArcanaMemoryError:
        embedding = False
    statuses = await database_status(home, skip=failed, repair=False)
    damaged = []
    for row in statuses:
        if row.damage is None and row.building is None:
            continue
        path = home.root / row.database
        kind = kind_of(home, path)
        name = row.agent if kind is StoreKind.PRIVATE else path.stem
        if row.damage is not None:
            how = rebuild_command(kind, name, row.model)
            damaged.append(Check(f"vector index {row.agent or row.database}", False,
                                 f"{row.database}: {row.damage}; rows are intact, rebuild it from them: {how}"))
        if row.building is not None:  # the store still answers on its old model; the home's others may not
            model, done = row.building["model"], row.building["vectors"]
            damaged.append(Check(f"re-embed {row.agent or row.database}", False,
                                 f"{row.database}: a re-embed to {model} stopped at {done} of {row.rows} rows "
                                 f"(recall still uses {row.model or 'no vectors'}); finish it: "
                                 f"{rebuild_command(kind, name, model)}"))
    # An agent's store that was never pinned lacks every vector when an embedder is configured:
    # its first batch's vectors were lost (killed) or never made (the embedder was down).
    gaps = [row for row in statuses
            if row.damage is None and row.missing and (row.model is not None or (embedding and row.agent is not None))]
    if not gaps:
        return [Check("vectors", True, "every row of every embedded store has its vector"), *damaged]
    shown = ", ".join(f"{row.agent or row.database}: {row.missing} of {row.rows}" for row in gaps[:5])
    return [Check("vectors", False, f"rows without a vector ({shown}); semantic recall misses them: run `arcana reindex`"),
            *damaged]


def check_rows(home: Home) -> list[Check]:
    """One failing check per store holding rows an outside edit left invalid (importance out of 0..1,
    an unknown type...): reads use the nearest bound or fail on that row, the file stays as it is."""
    from memory.sqlite.connection import dbapi, reading
    from memory.sqlite.rows import out_of_range, unreadable_ledger

    checks = []
    for db in home.databases():
        try:
            with reading(db) as conn:
                bad = out_of_range(conn)
                ledger = unreadable_ledger(conn)
        except dbapi().Error:
            continue  # unreadable or not a memory store: the database checks report it
        if ledger:  # append-only: no command rewrites a ledger row
            shown = ", ".join(f"{seq} (memory {memory_id})" for seq, memory_id in ledger)
            checks.append(Check(
                f"ledger {db.relative_to(home.root)}", False,
                f"ledger rows edited outside Arcana cannot be read: {shown}; memory history, revert and "
                "export --with-history of those memories fail on them, the memories themselves still answer: "
                "restore the home from a backup (`arcana restore BACKUP --force`) to be rid of them",
            ))
        if not bad:
            continue
        first_id, first = bad[0]
        if first.startswith("importance"):
            fix = f"`arcana memory set {first_id} --importance N`"
        else:  # a revert takes a ledger row's image, for a row that cannot be read too
            fix = f"`arcana memory history {first_id}`, then `arcana memory revert {first_id} --to SEQ`"
        shown = ", ".join(f"{entry_id} ({what})" for entry_id, what in bad)
        checks.append(Check(
            f"rows {db.relative_to(home.root)}", False,
            f"invalid stored values, edited outside Arcana: {shown}; reads use the nearest bound for a number "
            f"out of range and leave out a row they cannot read, and the file is unchanged: fix each, e.g. {fix}",
        ))
    return checks or [Check("rows", True, "every stored value is in range")]


def unwritable(db: Path) -> str | None:
    """Why ``db`` (or its folder, or its -wal/-shm file) cannot be written, or None: SQLite opens such a
    store read-only without a word, and only its first write fails. Nothing is written to find out."""
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        try:
            os.close(os.open(path, os.O_RDWR))
        except FileNotFoundError:
            continue  # no -wal or -shm while no one has the store open
        except OSError as exc:
            return f"{path.name}: {exc.strerror}"
    if not os.access(db.parent, os.W_OK):  # a write makes its -wal and -shm there
        return f"its folder: {os.strerror(13)}"
    return None


def check_writable(home: Home) -> list[Check]:
    """One failing check per store the system will not let Arcana write (an immutable file, a
    read-only mount or mode): reads go on, every write fails."""
    from memory.sqlite.connection import unwritable_fix

    checks = []
    for db in home.databases():
        why = unwritable(db)
        if why is not None:
            checks.append(Check(f"writable {db.relative_to(home.root)}", False,
                                f"the store cannot be written ({why}); {unwritable_fix(db)}"))
    return checks or [Check("writable", True, "every store can be written")]


def check_conflicts(home: Home) -> Check:
    """Open conflicts: agent-asserted claims held beside the user-confirmed fact they contradict.

    Informational (never a failure): each waits for an operator to confirm it
    (``memory set ID --current``) or drop it (``memory forget ID``).
    """
    from memory.sqlite.connection import dbapi, reading
    from memory.sqlite.versions import open_conflicts

    query = open_conflicts()
    total, where = 0, []
    for db in home.databases():
        try:
            with reading(db) as conn:
                count = conn.execute(query.sql, query.params).fetchone()[0]
        except dbapi().Error:
            continue  # unreadable or not a memory store: the database checks report it
        if count:
            total += count
            where.append(f"{db.relative_to(home.root)}: {count}")
    if not total:
        return Check("conflicts", True, "no open conflicts")
    return Check(
        "conflicts", True,
        f"{total} open conflict(s) ({'; '.join(where)}); see `arcana memory list --all`, then "
        "`arcana memory set ID --current` to accept a claim or `arcana memory forget ID` to drop it",
    )


def check_quarantine(home: Home) -> list[Check]:
    """One failing check per quarantined store, until the operator restores or dismisses it."""
    from memory.operations.quarantine import list_quarantined

    items = list_quarantined(home)
    if not items:
        return [Check("quarantine", True, "no quarantined stores")]
    return [
        Check(
            f"quarantine {item.id}",
            False,
            f"{item.database or 'a store'} was moved aside ({item.reason}); salvage it with "
            f"`arcana quarantine restore {item.id}` or drop it with `arcana quarantine dismiss {item.id} --yes`",
        )
        for item in items
    ]


async def round_trip() -> Check:
    """Write, search and read back on a throwaway store, as a user would."""
    from memory.adapters.opener import scratch_store
    from memory.types import MemoryEntry, MemoryQuery

    with tempfile.TemporaryDirectory(prefix="arcana-doctor-") as tmp:
        store = scratch_store(Path(tmp) / "doctor.db")
        try:
            entry = MemoryEntry(agent_id="doctor", content="doctor round trip: the kettle is blue")
            await store.write(entry)
            found = await store.search(MemoryQuery(agent_id="doctor", text="kettle blue"))
            ok = [e.id for e in found] == [entry.id]
            return Check("round trip", ok, "write → keyword search → read back" + ("" if ok else ": entry not found"))
        except Exception as exc:
            return Check("round trip", False, f"failed: {exc}")
        finally:
            await store.aclose()


async def check_embedders(home: Home) -> list[Check]:
    """Health of each configured embedder, in priority order (loads the model)."""
    from memory.config import load_config
    from memory.embedding.factory import build_gateway
    from memory.errors import ConfigError

    try:
        gateway = build_gateway(load_config(home.config_path).embedding, home)
    except ConfigError as exc:
        return [Check("embedders", False, str(exc))]
    if not gateway.embedders:
        return [Check("embedders", True, "none configured: recall is keyword-only")]
    return [
        Check(f"embedder {embedder.model_name}", healthy, message)
        for embedder, healthy, message in await gateway.health()
    ]


async def check_tiers(home: Home, failed: dict[Path, str] | None = None) -> list[Check]:
    """Every agent's federation tiers: health and circuit-breaker state.

    ``failed`` maps databases that failed their own check to that check's name:
    their tiers are reported failed too, so doctor never says a tier is ok next
    to a FAIL for the same file.
    """
    from memory.operations.tier_health import tier_reports

    return [Check(f"tier {r.tier}", r.ok, r.detail) for r in await tier_reports(home, failed=failed or {})]


async def run_checks(home: Home, on_progress: Progress | None = None) -> list[Check]:
    """Every check; ``on_progress(done, total)`` follows the databases' integrity checks."""
    checks = check_home(home) + check_restores(home) + check_config(home) + [check_agent_folders(home)]
    checks += check_side_files(home) + check_host_records(home)
    checks += check_sqlite()
    databases = await check_databases(home, on_progress)
    checks += databases
    checks += await check_servers(home)
    checks += check_quarantine(home)
    checks.append(check_conflicts(home))
    checks += check_rows(home)
    checks += check_writable(home)
    failed = {home.root / c.name.removeprefix("db "): c.name for c in databases if not c.ok}
    checks += await check_vectors(home, failed)
    checks.append(await round_trip())
    checks += await check_tiers(home, failed)
    checks += await check_embedders(home)
    return checks
