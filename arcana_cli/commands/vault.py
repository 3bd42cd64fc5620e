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

from arcana_cli import exit_codes
from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, YesOpt, confirm, emit, err, given_path, one_line, printable, to_jsonable
from arcana_cli.render import entry_json, snippet
from memory.errors import NotFoundError

NameArg = Annotated[str, typer.Argument(help="Vault name.")]
EmbedOpt = Annotated[
    bool, typer.Option("--embed/--keyword-only", help="Embed changed notes for semantic search (when an embedder is available).")
]


def _when(ts: float | None) -> str:
    if not ts:
        return "never"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _vaults(cli: CliContext):
    from memory.vaults.registry import VaultRegistry

    return VaultRegistry(cli.home)


def _chosen(cli: CliContext, name: str | None, all_: bool) -> list:
    """The vault NAME, or with --all every registered one."""
    if all_ == (name is not None):
        raise typer.BadParameter("give one vault NAME or --all", param_hint="NAME")
    registry = _vaults(cli)
    return registry.list() if all_ else [registry.get(name)]


def _describe(vault) -> dict:
    return {
        "name": vault.name,
        "path": str(vault.root),
        "agent": vault.agent_name,
        "agent_id": vault.config.agent,
        "pool": vault.config.pool,
        "ignore": vault.config.ignore,
        "obsidian_excluded": list(vault.obsidian_excluded.globs),
        "max_file_bytes": vault.config.max_file_bytes,
        "index": str(vault.db_path),
    }


@command("add")
def add(
    cli: CliContext,
    out: Out,
    path: Annotated[Path, typer.Argument(help="The notes folder (never modified).", parser=given_path)],
    name: Annotated[str, typer.Option("--name", "-n", help="A name for the vault.")],
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Attach to this agent.")] = None,
    pool: Annotated[str | None, typer.Option("--pool", help="Attach to this shared pool.")] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", help="fnmatch glob over the relative path to skip; repeatable.")
    ] = None,
) -> None:
    """Register a notes folder as a vault (run `vault index` next)."""
    cli.home.ensure()
    vault = _vaults(cli).add(path, name, agent=agent, pool=pool, ignore=ignore)
    out.data(_describe(vault), text=lambda: vault.name)
    excluded = vault.obsidian_excluded
    if excluded.globs:
        out.info(f"honouring {len(excluded.globs)} excluded-files filter(s) from Obsidian's settings")
    for problem in excluded.problems:
        out.warn(problem)
    out.info(f"added vault '{name}' at {vault.root}; index it with `arcana vault index {name}`")


@command("list")
def list_(cli: CliContext, out: Out) -> None:
    """List registered vaults."""
    vaults = _vaults(cli).list()
    out.data(
        [_describe(v) for v in vaults],
        columns=("name", "path", "attached to", "indexed"),
        rows=lambda: [
            (
                v.name,
                str(v.root),
                f"agent {v.agent_name}" if v.config.agent else (f"pool {v.config.pool}" if v.config.pool else "-"),
                "yes" if v.db_path.exists() else "no",
            )
            for v in vaults
        ],
    )


@command("status")
async def status(cli: CliContext, out: Out, name: NameArg) -> None:
    """Show a vault's folder, index and watch state (is the watch alive, when did it last see a change)."""
    from memory.vaults.status import vault_status

    report = await vault_status(_vaults(cli).get(name))
    watch = report.watch

    def text() -> str:
        damaged = report.state_damaged
        lines = [
            f"vault:          {report.name}",
            f"folder:         {report.path} ({'present' if report.folder_present else 'MISSING'})",
            f"index:          {report.index} ({report.notes_indexed} notes, {report.edges} links)",
            f"last indexed:   {'unknown: ' + damaged if damaged else _when(report.last_indexed_at)}",
            f"watch:          {'running (pid ' + str(watch.pid) + ')' if watch.running else 'unknown' if damaged else 'not running'}",
            f"last event:     {'unknown' if damaged else _when(watch.last_event_at)}",
        ]
        if report.last_error:
            lines.append(f"last error:     {report.last_error}")
        return "\n".join(lines)

    out.data(report.as_dict(), text=text)


@command("remove")
def remove(cli: CliContext, out: Out, name: NameArg, yes: YesOpt = False) -> None:
    """Unregister a vault and delete its index (the folder itself is never touched)."""
    registry = _vaults(cli)
    vault = registry.get(name)
    confirm(f"remove vault '{name}' and its index (the folder {vault.root} is not touched)", yes)
    removed = registry.remove(name)
    out.data({"removed": name, "deleted": [str(p) for p in removed], "folder": str(vault.root)}, text=lambda: name)


@command("index", quiet=True)
async def index(
    cli: CliContext,
    out: Out,
    name: Annotated[str | None, typer.Argument(help="Vault name (or --all).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Index every registered vault (for cron).")] = False,
    embed: EmbedOpt = True,
) -> None:
    """Bring a vault's index up to date: only changed notes are read and embedded."""
    from memory.errors import ArcanaMemoryError
    from memory.vaults.indexer import failure, index_vault

    cli.home.ensure()
    vaults = _chosen(cli, name, all_)
    reports, failures, rows = [], [], []
    for vault in vaults:
        try:
            with out.progress(f"indexing {vault.name}") as bar:
                reports.append(await index_vault(vault, embed=embed, config=cli.config, on_progress=bar.update,
                                                  notify=out.warn))
            rows.append(reports[-1].as_dict())
        except ArcanaMemoryError as exc:  # one vault's missing folder must not stop the others
            if not all_:
                raise
            failures.append(exc)
            rows.append({"vault": vault.name, "error": failure(vault.name, exc)})  # as `consolidate --all` lists one
            err(rows[-1]["error"])  # each one, even under --quiet: a failure is never silent
    for report in reports:
        for notice in report.notices:
            out.warn(notice)
    # --quiet (a cron line): the report every run is mail nobody reads; --json still asks for the data.
    data = rows if all_ else reports[0].as_dict()
    out.report(data, text=lambda: "\n".join(_index_text(r) for r in reports))
    if failures:
        raise typer.Exit(exit_codes.for_error(failures[0]))


WatchJsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object per batch (JSON Lines) on stdout.")]


@command("watch", json=WatchJsonOpt, quiet=True)
async def watch(
    cli: CliContext,
    out: Out,
    name: Annotated[str | None, typer.Argument(help="Vault name (or --all).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Watch every registered vault.")] = False,
    debounce: Annotated[int, typer.Option("--debounce", min=50, max=60_000, help="Longest wait (ms) to batch changes.")] = 1600,
    embed: EmbedOpt = True,
) -> None:
    """Keep vault indexes following their folders; one line per batch; Ctrl-C or SIGTERM stops."""
    from memory.vaults.watcher import DEFAULT_STEP_MS, watch_vaults

    cli.home.ensure()
    vaults = _chosen(cli, name, all_)
    if not vaults:
        raise NotFoundError("no vaults registered; add one with `arcana vault add PATH --name N`")

    def line(text: str, data: dict) -> None:
        """--json: every event is a line of data. Text: a pass is the watch's report (stdout, none under
        --quiet); anything else (an index failed, a folder missing, a state file moved aside) went wrong
        or changed the home, so stderr, --quiet or not."""
        if out.json_mode:
            emit(json.dumps(to_jsonable(data), ensure_ascii=False) + "\n")
        elif data["event"] != "index":
            sys.stderr.write(one_line(text) + "\n")
        elif not out.quiet:
            emit(printable(text) + "\n")

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await watch_vaults(
        vaults, stop, line, lambda: out.info(f"watching {', '.join(v.name for v in vaults)}; Ctrl-C to stop"),
        embed=embed, debounce_ms=debounce, step_ms=min(DEFAULT_STEP_MS, debounce),
    )
    out.info("watch stopped")


@command("links")
async def links(
    cli: CliContext,
    out: Out,
    note: Annotated[str, typer.Argument(help="A note: its name, alias or relative path.")],
    vault_name: Annotated[str | None, typer.Option("--vault", "-v", help="Which vault (default: the one holding NOTE).")] = None,
) -> None:
    """Show a note's outgoing links and its backlinks."""
    from memory.vaults.links import note_links

    registry = _vaults(cli)
    vaults = [registry.get(vault_name)] if vault_name else registry.list()
    report = await note_links(vaults, note)
    out.data(
        report.as_dict(),
        columns=("direction", "note"),
        rows=lambda: [("→ links to", p) for p in report.outgoing] + [("← linked from", p) for p in report.backlinks],
    )


@command("check")
async def check(cli: CliContext, out: Out, name: NameArg) -> None:
    """List dangling and ambiguous links, skipped files and bad frontmatter (reads only)."""
    from memory.vaults.indexer import check_vault

    plan, report = await check_vault(_vaults(cli).get(name))
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
    out.data(data, columns=("problem", "file", "detail"), rows=lambda: rows)
    if not rows:
        out.info(f"vault '{name}': {report.links_found} links, all resolved; nothing skipped")


@command("search")
async def search(
    cli: CliContext,
    out: Out,
    name: NameArg,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000, help="Most results.")] = 10,
    mode: Annotated[
        str | None,
        typer.Option("--mode", help="keyword, semantic or hybrid [default: recall.mode, else hybrid].", show_default=False),
    ] = None,
    expand: Annotated[bool, typer.Option("--expand/--no-expand", help="Add notes one wikilink away.")] = True,
) -> None:
    """Search one vault (its index, or the folder itself if not indexed yet)."""
    from memory.types import MemoryQuery, RetrievalMode
    from memory.vaults.search import search_vault

    if not query.strip():  # as recall refuses one: an empty "$Q" would list notes scored 0 as if they matched
        raise typer.BadParameter(f"the query is empty; give words to look for, e.g. `arcana vault search {name} \"deploys\"`",
                                 param_hint="QUERY")
    try:
        retrieval = cli.config.recall.mode_for(RetrievalMode(mode) if mode else None)
    except ValueError:
        raise typer.BadParameter("use keyword, semantic or hybrid", param_hint="--mode") from None
    vault = _vaults(cli).get(name)
    started = time.perf_counter()
    query_ = MemoryQuery(text=query, retrieval_mode=retrieval, limit=limit)
    hits = await search_vault(vault, query_, expand=expand, config=cli.config, notify=out.warn)
    # recall's result shape, plus the note's path in the vault
    results = [{**entry_json(e), "path": hits.paths.get(e.id)} for e in hits.entries]
    out.data(
        {"vault": name, "query": query, "source": hits.source, "results": results},
        columns=("score", "via", "note", "text"),
        rows=lambda: [
            ("-" if e.score is None else f"{e.score:.3f}", "+".join(e.matched_by), hits.paths.get(e.id) or e.id[:8], snippet(e.snippet or e.content, 60))
            for e in hits.entries
        ],
    )
    if not results:
        out.info("no notes matched")
    out.info(f"{len(results)} result(s) in {(time.perf_counter() - started) * 1000:.0f} ms")


def _index_text(report) -> str:
    skipped = ", ".join(f"{n} {reason}" for reason, n in report.skipped_counts().items()) or "none"
    return "\n".join(
        [
            f"vault {report.vault}: scanned {report.scanned} notes in {report.seconds:.2f}s",
            f"  added {report.added}, updated {report.updated}, removed {report.removed}, unchanged {report.unchanged}",
            f"  skipped: {skipped}",
            f"  embedded {report.embedded} ({report.embedding})",
            f"  {report.links.describe()}",
        ]
    )


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Markdown folders (Obsidian vaults) as searchable, read-only memory.", no_args_is_help=True)
    app.add_typer(group, name="vault")
    add_commands(group, add, list_, status, remove, index, watch, links, check, search)
