"""Tier health for ``arcana doctor``: every agent's tiers probed through the same
resilience wrappers recall uses, without repairing anything.

Probing opens no store with quarantine enabled and skips any database whose
schema is not current (opening it would migrate it; the database check
already reports those), so the tool that diagnoses never changes what it
diagnoses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from memory.adapters.opener import open_store, open_tier
from memory.adapters.postgres import PostgresAdapter
from memory.agents import AgentRegistry
from memory.budgets import ConnectionsConfig
from memory.config import load_config
from memory.errors import ConfigError, UnsetVariableError
from memory.federation.federation import MemoryFederation
from memory.federation.router import MemoryRouter
from memory.federation.shared_tiers import pool_configs
from memory.home import Home
from memory.migrations.runner import head_version
from memory.operations.schema import read_version
from memory.protocols import FileBacked
from memory.store_kinds import StoreKind


@dataclass
class TierReport:
    tier: str
    ok: bool
    detail: str


def _schema_blocker(path: Path | None) -> str | None:
    """Why the existing store at ``path`` must not be opened by a probe, or None."""
    if path is None:
        return None
    version, problem = read_version(path)
    if problem is None and 0 < version != head_version():
        return f"schema v{version}/{head_version()}: not probed (see the database check)"
    return None


async def _probe(tier) -> TierReport:
    """One real read (so a corrupt store trips its breaker), then the health check.

    The read is a lookup by id, not a search, so no access count is touched.
    """
    await tier.get("arcana-doctor-probe")
    status = await tier.health_check()
    detail = f"{'ok' if status.healthy else status.message}; breaker {tier.breaker.describe()}"
    return TierReport(tier.name, status.healthy, detail + ("; read-only" if tier.read_only else ""))


async def _probe_server(tier) -> TierReport:
    """A server tier: its schema read without upgrading it, then the same probe as any tier."""
    try:
        version, head = await tier.backend.pending_version()
    except Exception as exc:  # unreachable, login refused, or newer than this Arcana (password masked)
        return TierReport(tier.name, False, str(exc))
    where = f"postgresql {tier.backend.path}"
    if version == 0:
        return TierReport(tier.name, True, f"{where}: not created yet (made on first write)")
    if version != head:
        return TierReport(tier.name, False, f"{where}: schema v{version}/{head}: not probed (pending: run `arcana migrate up`)")
    report = await _probe(tier)
    return replace(report, detail=f"{where}, schema v{version}: {report.detail}")


async def tier_reports(home: Home, *, failed: dict[Path, str] | None = None) -> list[TierReport]:
    """One report per tier (private per agent, shared ones once); never raises for a bad tier.

    A tier whose database is in ``failed`` (path -> the check that failed it) is
    reported failed whatever its probe says: a lookup can succeed on a damaged file.
    """
    failed = failed or {}
    try:
        config = load_config(home.config_path)
        roster = AgentRegistry(home).scan()
        connections = ConnectionsConfig.load(home.connections_path)
        config.memory.global_server_url()  # an unset global_url_env: reported below, not raised mid-probe
    except (ConfigError, UnsetVariableError) as exc:
        return [TierReport("tiers", False, f"not probed: {exc}")]
    reports: dict[str, TierReport] = {
        f"private ({u.agent_id})": TierReport(f"private ({u.agent_id})", False, "not probed: its agent card is unreadable")
        for u in roster.unreadable
    }
    for card in roster.cards:
        private = open_store(home, StoreKind.PRIVATE, card.id, actor="doctor", repair=False)
        if config.memory.global_url is not None or config.memory.global_url_env is not None:
            global_ = open_tier(home, StoreKind.GLOBAL, config=config, actor="doctor")
        else:
            global_ = open_store(home, StoreKind.GLOBAL, actor="doctor") if home.global_db.exists() else None
        router = MemoryRouter(private=private, global_=global_, resilience=connections)
        router.private.name = f"private ({card.name})"
        try:
            pools = pool_configs(home, config, card, actor="doctor")
        except ConfigError as exc:  # e.g. a server pool's url_env is not set in this shell
            reports.setdefault("pools", TierReport("pools", False, f"not probed: {exc}"))
            pools = []
        for pool in pools:
            router.register_pool(pool.name, pool.adapter, read_only=pool.read_only or None, label=pool.label)
        try:
            for tier in router.tiers:
                if tier.name in reports:
                    continue
                path = tier.backend.path if isinstance(tier.backend, FileBacked) else None
                if isinstance(tier.backend, PostgresAdapter):
                    reports[tier.name] = await _probe_server(tier)
                elif path is not None and not path.exists():  # probing would create it
                    reports[tier.name] = TierReport(tier.name, True, "not created yet (made on first write)")
                elif blocker := _schema_blocker(path):
                    reports[tier.name] = TierReport(tier.name, False, blocker)
                else:
                    reports[tier.name] = await _probe(tier)
                if path is not None and Path(path) in failed and reports[tier.name].ok:
                    report = reports[tier.name]
                    report.ok, report.detail = False, f"{report.detail}; its database failed ({failed[Path(path)]})"
        finally:
            await MemoryFederation(router, on_degraded=lambda event: None).aclose()
    return list(reports.values())
