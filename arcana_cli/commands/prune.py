from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out, QuietOpt
from memory.adapters.sqlite import SQLiteAdapter
from memory.locks import exclusive
from memory.stores import StoreKind, open_tier
from memory.types import PruneMode, PrunePolicy


def register(app: typer.Typer) -> None:
    @app.command("prune")
    def prune(
        ctx: typer.Context,
        agent: Annotated[str | None, typer.Option("--agent", "-a", help="Prune one agent (name or id).")] = None,
        all_: Annotated[bool, typer.Option("--all", help="Prune every agent.")] = False,
        pool: Annotated[list[str] | None, typer.Option("--pool", help="Prune a shared pool (repeatable).")] = None,
        global_: Annotated[bool, typer.Option("--global", help="Prune the global tier.")] = False,
        min_importance: Annotated[
            float | None, typer.Option("--min-importance", min=0.0, max=1.0, help="Floor: below it goes.")
        ] = None,
        max_entries: Annotated[int | None, typer.Option("--max-entries", min=0, help="Keep at most N live entries.")] = None,
        mode: Annotated[PruneMode | None, typer.Option("--mode", help="archive (default, restorable) or purge.")] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would go; change nothing.")] = False,
        json_: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Archive or purge low-value memories of agents, pools or the global tier. Pinned memories are never touched; safe under cron."""
        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=quiet or cli.quiet)
        defaults = cli.config.prune
        # The rule comes from the flags or, when none is given, from prune.* (by default: archive below 0.1).
        flagged = min_importance is not None or max_entries is not None
        floor, cap = (min_importance, max_entries) if flagged else (defaults.min_importance, defaults.max_entries)
        if floor is None and cap is None:
            raise typer.BadParameter(
                "no rule: pass --min-importance and/or --max-entries, or set prune.min_importance / prune.max_entries"
            )
        policy = PrunePolicy(min_importance=floor, max_entries=cap, mode=mode or defaults.mode, dry_run=dry_run)
        targets = _targets(cli, agent, all_, pool or [], global_)

        async def go():
            reports = []
            with exclusive(cli.home.locks_dir / "prune.lock", "prune"):
                for label, fields, store in targets:
                    try:
                        report = await store.prune(policy)
                    finally:
                        await store.aclose()
                    reports.append({**fields, **report.model_dump()})
                    if report.archived or report.purged:
                        cli.audit.append("prune", store=label, **report.model_dump(exclude={"victim_ids"}))
            return reports

        reports = run(go())
        if out.quiet and not json_:
            return  # cron: silence unless something went wrong
        agents = [r for r in reports if "agent" in r]
        shared = [r for r in reports if "agent" not in r]
        out.data(
            {"policy": policy.model_dump(mode="json"), "agents": agents, "tiers": shared},
            columns=("store", "scanned", "archived", "purged", "dry run"),
            rows=lambda: [
                (r.get("agent") or r["tier"], r["scanned"], r["archived"], r["purged"], r["dry_run"]) for r in reports
            ],
        )
        total = sum(r["archived"] + r["purged"] for r in reports)
        verb = "would remove" if dry_run else "removed"
        out.info(f"{verb} {total} memories across {len(reports)} store(s)" if total else "nothing to prune")


def _targets(cli, agent: str | None, all_: bool, pools: list[str], global_: bool) -> list[tuple]:
    """(audit label, report fields, store) for every store the options name.

    --agent and --all pick private stores (one of them, or neither when only
    shared tiers are pruned); --pool and --global add shared tiers.
    """
    from memory.federation.pools import PoolRegistry

    if not (agent or all_ or pools or global_):
        raise typer.BadParameter("say what to prune: --agent A, --all, --pool P or --global")
    targets = []
    if agent or all_:
        for card in cli.select_agents(agent, all_):
            store = SQLiteAdapter.for_agent(card.id, home=cli.home, actor="cli")
            targets.append((f"agent:{card.id}", {"agent": card.name, "agent_id": card.id}, store))
    registry = PoolRegistry(cli.home)
    for name in dict.fromkeys(pools):
        registry.show_settings(name)  # NotFoundError (exit 3) for an unknown pool
        store = open_tier(cli.home, StoreKind.POOL, name, config=cli.config, actor="cli")
        targets.append((f"pool:{name}", {"tier": f"pool:{name}"}, store))
    if global_ and cli.config.memory.global_server_url() is None and not cli.home.global_db.exists():
        global_ = False  # nothing promoted yet: nothing to prune there (cron stays quiet)
    if global_:
        store = open_tier(cli.home, StoreKind.GLOBAL, config=cli.config, actor="cli")
        targets.append(("global", {"tier": "global"}, store))
    return targets
