from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli import exit_codes
from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out, QuietOpt
from memory.errors import MemoryStorageError
from memory.locks import exclusive


def register(app: typer.Typer) -> None:
    @app.command("reindex")
    def reindex_cmd(
        ctx: typer.Context,
        agent: Annotated[str | None, typer.Option("--agent", "-a", help="Reindex one agent (name or id).")] = None,
        all_: Annotated[bool, typer.Option("--all", help="Reindex every agent.")] = False,
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
        """Backfill missing vectors (and rebuild the keyword index); safe under cron."""
        from memory.embedding.factory import build_embedder, vector_adapter
        from memory.reindex import reindex

        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=quiet or cli.quiet)
        if re_embed != bool(model):
            raise typer.BadParameter("--re-embed and --model go together", param_hint="--model")
        cards = cli.select_agents(agent, all_)
        config = cli.config.embedding
        target = build_embedder(model, config, cli.home) if model else None

        async def go():
            results = []
            with exclusive(cli.home.locks_dir / "reindex.lock", "reindex"):
                for card in cards:
                    async with cli.private_store(card) as store:
                        vectors = vector_adapter(store, config, cli.home, notify=out.warn)
                        with out.progress(f"{card.name}: embedding") as bar:
                            try:
                                report = await reindex(
                                    vectors, keyword=not embeddings, reembed=target, on_progress=bar.update
                                )
                            except MemoryStorageError as exc:
                                results.append({"agent": card.name, "agent_id": card.id, "error": str(exc)})
                                continue
                    results.append({"agent": card.name, "agent_id": card.id, **report.as_dict()})
                    if report.repinned:
                        cli.audit.append("reembed", agent_id=card.id, model=target.model_name)
            return results

        results = run(go())
        for r in results:
            if "error" in r:
                out.warn(f"{r['agent']}: {r['error']}")
            for entry_id, reason in (r.get("vectors") or {}).get("skipped", []):
                out.warn(f"{r['agent']}: skipped {entry_id}: {reason}")
        if not (out.quiet and not json_):
            out.data(
                {"agents": results},
                columns=("agent", "model", "index", "to embed", "embedded", "skipped", "error"),
                rows=lambda: [_row(r) for r in results],
            )
        if any("error" in r for r in results):
            raise typer.Exit(exit_codes.STORAGE)


def _row(result: dict) -> tuple:
    vectors = result.get("vectors") or {}
    return (
        result["agent"],
        vectors.get("model"),
        vectors.get("vec_table"),
        vectors.get("total"),
        vectors.get("embedded"),
        len(vectors.get("skipped", [])),
        result.get("error", ""),
    )
