from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out, YesOpt
from arcana_cli.render import snippet
from memory.errors import NotFoundError

NameArg = Annotated[str, typer.Argument(help="Vault name.")]
EmbedOpt = Annotated[
    bool, typer.Option("--embed/--keyword-only", help="Embed changed notes for semantic search (when an embedder is available).")
]


def _when(ts: float | None) -> str:
    if not ts:
        return "never"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _vaults(cli):
    from memory.vaults.registry import VaultRegistry

    return VaultRegistry(cli.home)


def _describe(vault) -> dict:
    return {
        "name": vault.name,
        "path": str(vault.root),
        "agent": vault.config.agent,
        "pool": vault.config.pool,
        "ignore": vault.config.ignore,
        "obsidian_excluded": list(vault.obsidian_excluded.globs),
        "max_file_bytes": vault.config.max_file_bytes,
        "index": str(vault.db_path),
    }


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Markdown folders (Obsidian vaults) as searchable, read-only memory.", no_args_is_help=True)
    app.add_typer(group, name="vault")

    @group.command("add")
    def add(
        ctx: typer.Context,
        path: Annotated[Path, typer.Argument(help="The notes folder (never modified).")],
        name: Annotated[str, typer.Option("--name", "-n", help="A name for the vault.")],
        agent: Annotated[str | None, typer.Option("--agent", "-a", help="Attach to this agent.")] = None,
        pool: Annotated[str | None, typer.Option("--pool", help="Attach to this shared pool.")] = None,
        ignore: Annotated[
            list[str] | None, typer.Option("--ignore", help="fnmatch glob over the relative path to skip; repeatable.")
        ] = None,
        json_: JsonOpt = False,
    ) -> None:
        """Register a notes folder as a vault (run `vault index` next)."""
        cli = ctx_of(ctx)
        cli.home.ensure()
        vault = _vaults(cli).add(path, name, agent=agent, pool=pool, ignore=ignore)
        out = Out(json_mode=json_, quiet=cli.quiet)
        out.data(_describe(vault), text=lambda: vault.name)
        excluded = vault.obsidian_excluded
        if excluded.globs:
            out.info(f"honouring {len(excluded.globs)} excluded-files filter(s) from Obsidian's settings")
        for problem in excluded.problems:
            out.warn(problem)
        out.info(f"added vault '{name}' at {vault.root}; index it with `arcana vault index {name}`")

    @group.command("list")
    def list_(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """List registered vaults."""
        cli = ctx_of(ctx)
        vaults = _vaults(cli).list()
        Out(json_mode=json_, quiet=cli.quiet).data(
            [_describe(v) for v in vaults],
            columns=("name", "path", "attached to", "indexed"),
            rows=lambda: [
                (
                    v.name,
                    str(v.root),
                    f"agent {v.config.agent}" if v.config.agent else (f"pool {v.config.pool}" if v.config.pool else "-"),
                    "yes" if v.db_path.exists() else "no",
                )
                for v in vaults
            ],
        )

    @group.command("status")
    def status(ctx: typer.Context, name: NameArg, json_: JsonOpt = False) -> None:
        """Show a vault's folder, index and watch state (is the watch alive, when did it last see a change)."""
        from memory.vaults.status import vault_status

        cli = ctx_of(ctx)
        data = run(vault_status(_vaults(cli).get(name)))
        watch = data["watch"]

        def text() -> str:
            lines = [
                f"vault:          {data['name']}",
                f"folder:         {data['path']} ({'present' if data['folder_present'] else 'MISSING'})",
                f"index:          {data['index']} ({data['notes_indexed']} notes, {data['edges']} links)",
                f"last indexed:   {_when(data['last_indexed_at'])}",
                f"watch:          {'running (pid ' + str(watch['pid']) + ')' if watch['running'] else 'not running'}",
                f"last event:     {_when(watch['last_event_at'])}",
            ]
            if data.get("last_error"):
                lines.append(f"last error:     {data['last_error']}")
            return "\n".join(lines)

        Out(json_mode=json_, quiet=cli.quiet).data(data, text=text)

    @group.command("remove")
    def remove(ctx: typer.Context, name: NameArg, yes: YesOpt = False, json_: JsonOpt = False) -> None:
        """Unregister a vault and delete its index (the folder itself is never touched)."""
        from arcana_cli.commands.memory_cmd import confirm

        cli = ctx_of(ctx)
        registry = _vaults(cli)
        vault = registry.get(name)
        confirm(f"remove vault '{name}' and its index (the folder {vault.root} is not touched)", yes)
        removed = registry.remove(name)
        out = Out(json_mode=json_, quiet=cli.quiet)
        out.data({"removed": name, "deleted": [str(p) for p in removed], "folder": str(vault.root)}, text=lambda: name)

    @group.command("index")
    def index(
        ctx: typer.Context,
        name: Annotated[str | None, typer.Argument(help="Vault name (or --all).")] = None,
        all_: Annotated[bool, typer.Option("--all", help="Index every registered vault (for cron).")] = False,
        embed: EmbedOpt = True,
        json_: JsonOpt = False,
    ) -> None:
        """Bring a vault's index up to date: only changed notes are read and embedded."""
        from memory.errors import ArcanaMemoryError
        from memory.vaults.indexer import index_vault

        cli = ctx_of(ctx)
        cli.home.ensure()
        out = Out(json_mode=json_, quiet=cli.quiet)
        registry = _vaults(cli)
        if all_ == (name is not None):
            raise typer.BadParameter("give one vault NAME or --all", param_hint="NAME")
        vaults = registry.list() if all_ else [registry.get(name)]
        reports, failures = [], []
        for vault in vaults:
            try:
                with out.progress(f"indexing {vault.name}") as bar:
                    reports.append(run(index_vault(vault, embed=embed, config=cli.config, on_progress=bar.update)))
            except ArcanaMemoryError as exc:  # one vault's missing folder must not stop the others
                if not all_:
                    raise
                failures.append(exc)
                out.warn(f"vault '{vault.name}': {exc}")
        for report in reports:
            for notice in report.notices:
                out.warn(notice)
        if all_:
            out.data([r.to_json() for r in reports], text=lambda: "\n".join(_index_text(r) for r in reports))
        else:
            out.data(reports[0].to_json(), text=lambda: _index_text(reports[0]))
        if failures:
            raise failures[0]

    @group.command("watch")
    def watch(
        ctx: typer.Context,
        name: Annotated[str | None, typer.Argument(help="Vault name (or --all).")] = None,
        all_: Annotated[bool, typer.Option("--all", help="Watch every registered vault.")] = False,
        debounce: Annotated[int, typer.Option("--debounce", min=50, max=60_000, help="Longest wait (ms) to batch changes.")] = 1600,
        embed: EmbedOpt = True,
        json_: Annotated[bool, typer.Option("--json", help="One JSON object per batch (JSON Lines) on stdout.")] = False,
    ) -> None:
        """Keep vault indexes following their folders; one line per batch; Ctrl-C or SIGTERM stops."""
        from memory.vaults.watcher import DEFAULT_STEP_MS, watch_vaults

        cli = ctx_of(ctx)
        cli.home.ensure()
        registry = _vaults(cli)
        if all_ == (name is not None):
            raise typer.BadParameter("give one vault NAME or --all", param_hint="NAME")
        vaults = registry.list() if all_ else [registry.get(name)]
        if not vaults:
            raise NotFoundError("no vaults registered; add one with `arcana vault add PATH --name N`")
        out = Out(quiet=cli.quiet)

        def line(text: str, data: dict) -> None:
            sys.stdout.write((json.dumps(data, ensure_ascii=False) if json_ else text) + "\n")
            sys.stdout.flush()

        async def go() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            out.info(f"watching {', '.join(v.name for v in vaults)}; Ctrl-C to stop")
            await watch_vaults(vaults, stop, line, embed=embed, debounce_ms=debounce, step_ms=min(DEFAULT_STEP_MS, debounce))
            out.info("watch stopped")

        run(go())

    @group.command("links")
    def links(
        ctx: typer.Context,
        note: Annotated[str, typer.Argument(help="A note: its name, alias or relative path.")],
        vault_name: Annotated[str | None, typer.Option("--vault", "-v", help="Which vault (default: the one holding NOTE).")] = None,
        json_: JsonOpt = False,
    ) -> None:
        """Show a note's outgoing links and its backlinks."""
        from memory.vaults.links import note_links

        cli = ctx_of(ctx)
        registry = _vaults(cli)
        vaults = [registry.get(vault_name)] if vault_name else registry.list()
        data = run(note_links(vaults, note))
        Out(json_mode=json_, quiet=cli.quiet).data(
            data,
            columns=("direction", "note"),
            rows=lambda: [("→ links to", p) for p in data["outgoing"]] + [("← linked from", p) for p in data["backlinks"]],
        )

    @group.command("check")
    def check(ctx: typer.Context, name: NameArg, json_: JsonOpt = False) -> None:
        """List dangling and ambiguous links, skipped files and bad frontmatter (reads only)."""
        from memory.vaults.indexer import check_vault

        cli = ctx_of(ctx)
        plan, report = run(check_vault(_vaults(cli).get(name)))
        data = {
            "vault": name,
            "links": report.counts(),
            "dangling": [{"note": p.rel_path, "target": p.target} for p in report.dangling_links],
            "ambiguous": [{"note": p.rel_path, "target": p.target, "candidates": list(p.candidates)} for p in report.ambiguous_links],
            "skipped": [{"path": p, "reason": r} for p, r in plan.skipped],
            "frontmatter_problems": plan.frontmatter_problems,
        }
        rows = (
            [("dangling", d["note"], f"[[{d['target']}]]") for d in data["dangling"]]
            + [("ambiguous", a["note"], f"[[{a['target']}]] → {', '.join(a['candidates'])}") for a in data["ambiguous"]]
            + [(f"skipped ({s['reason']})", s["path"], "") for s in data["skipped"]]
            + [("frontmatter", p, "malformed or invalid field ignored") for p in data["frontmatter_problems"]]
        )
        out = Out(json_mode=json_, quiet=cli.quiet)
        out.data(data, columns=("problem", "file", "detail"), rows=lambda: rows)
        if not rows:
            out.info(f"vault '{name}': {report.links_found} links, all resolved; nothing skipped")

    @group.command("search")
    def search(
        ctx: typer.Context,
        name: NameArg,
        query: Annotated[str, typer.Argument(help="What to look for.")],
        limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000, help="Most results.")] = 10,
        mode: Annotated[str, typer.Option("--mode", help="keyword, semantic or hybrid.")] = "hybrid",
        expand: Annotated[bool, typer.Option("--expand/--no-expand", help="Add notes one wikilink away.")] = True,
        json_: JsonOpt = False,
    ) -> None:
        """Search one vault (its index, or the folder itself if not indexed yet)."""
        from memory.types import MemoryQuery, RetrievalMode
        from memory.vaults.search import search_vault

        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        try:
            retrieval = RetrievalMode(mode)
        except ValueError:
            raise typer.BadParameter("use keyword, semantic or hybrid", param_hint="--mode") from None
        vault = _vaults(cli).get(name)
        started = time.perf_counter()
        hits = run(search_vault(vault, MemoryQuery(text=query, retrieval_mode=retrieval, limit=limit), expand=expand, config=cli.config, notify=out.warn))
        results = [
            {
                "id": e.id,
                "path": hits.paths.get(e.id),
                "score": None if e.score is None else round(e.score, 6),
                "matched_by": e.matched_by,
                "tags": e.tags,
                "content": e.content,
                "snippet": e.snippet or e.content,
            }
            for e in hits.entries
        ]
        out.data(
            {"vault": name, "query": query, "source": hits.source, "results": results},
            columns=("score", "via", "note", "text"),
            rows=lambda: [
                ("-" if r["score"] is None else f"{r['score']:.3f}", "+".join(r["matched_by"]), r["path"] or r["id"][:8], snippet(r["snippet"], 60))
                for r in results
            ],
        )
        if not results:
            out.info("no notes matched")
        out.info(f"{len(results)} result(s) in {(time.perf_counter() - started) * 1000:.0f} ms")


def _index_text(report) -> str:
    links = report.links
    skipped = ", ".join(f"{n} {reason}" for reason, n in report.skipped_counts().items()) or "none"
    return "\n".join(
        [
            f"vault {report.vault}: scanned {report.scanned} notes in {report.seconds:.2f}s",
            f"  added {report.added}, updated {report.updated}, removed {report.removed}, unchanged {report.unchanged}",
            f"  skipped: {skipped}",
            f"  embedded {report.embedded} ({report.embedding})",
            f"  links: {links.links_found} found, {links.resolved} resolved, {links.attachments} attachments, "
            f"{links.dangling} dangling, {links.ambiguous} ambiguous; {links.edges_written} edges",
        ]
    )
