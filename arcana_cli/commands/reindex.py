from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arcana_cli import exit_codes
from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out, QuietOpt
from memory.errors import MemoryStorageError, NotFoundError
from memory.locks import exclusive


def register(app: typer.Typer) -> None:
    @app.command("reindex")
    def reindex_cmd(
        ctx: typer.Context,
        agent: Annotated[str | None, typer.Option("--agent", "-a", help="Reindex one agent (name or id).")] = None,
        all_: Annotated[
            bool, typer.Option("--all", help="Reindex every agent, every pool and the global tier.")
        ] = False,
        pool: Annotated[list[str] | None, typer.Option("--pool", help="Reindex a shared pool (repeatable).")] = None,
        global_: Annotated[bool, typer.Option("--global", help="Reindex the global tier.")] = False,
        embeddings: Annotated[
            bool, typer.Option("--embeddings", help="Only vectors: skip rebuilding the keyword index.")
        ] = False,
        re_embed: Annotated[
            bool, typer.Option("--re-embed", help="Rebuild every vector with --model, then re-pin to it.")
        ] = False,
        model: Annotated[
            str | None, typer.Option("--model", help="Model for --re-embed (a fastembed name, or ollama:NAME).")
        ] = None,
        json_: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Backfill missing vectors (and rebuild the keyword index) of agents, pools, global; safe under cron."""
        from memory.embedding.factory import build_embedder, build_gateway, vector_adapter
        from memory.reindex import reindex
        from memory.stores import open_database

        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=quiet or cli.quiet)
        if re_embed != bool(model):
            raise typer.BadParameter("--re-embed and --model go together", param_hint="--model")
        if not (agent or all_ or pool or global_):
            raise typer.BadParameter("say what to reindex: --agent A, --all, --pool P or --global")
        if agent and all_:
            raise typer.BadParameter("give --agent or --all, not both")
        cards = cli.select_agents(agent, all_) if agent or all_ else []
        shared = _shared_stores(cli, pool or [], global_, every=all_)
        config = cli.config.embedding
        target = build_embedder(model, config, cli.home) if model else None
        gateway = build_gateway(config, cli.home)  # one warm model for every store

        async def one(label: str, fields: dict, store) -> dict:
            vectors = vector_adapter(store, config, cli.home, notify=out.warn, gateway=gateway)
            with out.progress(f"{label}: embedding") as bar:
                try:
                    report = await reindex(vectors, keyword=not embeddings, reembed=target, on_progress=bar.update)
                except MemoryStorageError as exc:
                    return {**fields, "error": str(exc)}
            if report.repinned:
                cli.audit.append("reembed", store=label, model=target.model_name)
            return {**fields, **report.as_dict()}

        async def go():
            results = []
            with exclusive(cli.home.locks_dir / "reindex.lock", "reindex"):
                for card in cards:
                    async with cli.private_store(card) as store:
                        results.append(await one(card.name, {"agent": card.name, "agent_id": card.id}, store))
                for tier, path in shared:
                    store = open_database(cli.home, path, actor="cli")
                    try:
                        results.append(await one(tier, {"tier": tier}, store))
                    finally:
                        await store.aclose()
            return results

        results = run(go())
        for r in results:
            name = r.get("agent") or r["tier"]
            if "error" in r:
                out.warn(f"{name}: {r['error']}")
            for entry_id, reason in (r.get("vectors") or {}).get("skipped", []):
                out.warn(f"{name}: skipped {entry_id}: {reason}")
        if not (out.quiet and not json_):
            out.data(
                {"agents": [r for r in results if "agent" in r], "tiers": [r for r in results if "tier" in r]},
                columns=("store", "model", "index", "to embed", "embedded", "skipped", "error"),
                rows=lambda: [_row(r) for r in results],
            )
        if any("error" in r for r in results):
            raise typer.Exit(exit_codes.STORAGE)


def _shared_stores(cli, pools: list[str], global_: bool, *, every: bool) -> list[tuple[str, Path]]:
    """(tier label, database) of the pools and global tier named; ``every``: all that exist.

    An unknown pool is exit 3, and so is ``--global`` before the global tier
    exists (``--all`` then just has nothing global to do); a pool with no
    database yet has nothing to index and is left out.
    """
    from memory.federation.pools import PoolRegistry

    registry = PoolRegistry(cli.home)
    names = registry.names() if every else []
    for name in pools:
        registry.show_settings(name)  # NotFoundError (exit 3) for an unknown pool
    found = [
        (f"pool:{name}", cli.home.pool_db(name))
        for name in dict.fromkeys([*names, *pools])
        if cli.home.pool_db(name).exists()  # no memory yet: nothing to index
    ]
    if global_ and not cli.home.global_db.exists():
        raise NotFoundError("there is no global tier yet (it appears with the first promoted or global memory)")
    if (global_ or every) and cli.home.global_db.exists():
        found.append(("global", cli.home.global_db))
    return found


def _row(result: dict) -> tuple:
    vectors = result.get("vectors") or {}
    return (
        result.get("agent") or result["tier"],
        vectors.get("model"),
        vectors.get("vec_table"),
        vectors.get("total"),
        vectors.get("embedded"),
        len(vectors.get("skipped", [])),
        result.get("error", ""),
    )
