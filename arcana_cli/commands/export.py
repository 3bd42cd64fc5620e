"""`arcana export` and `arcana import`: move memories between homes (JSON Lines or a Markdown folder)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import IO, Annotated

import typer

from arcana_cli import __version__, exit_codes
from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, confirm, err, given_path, held_by_others, left_out, piped_stdin
from memory.errors import MemoryStorageError, NotFoundError
from memory.home import private_dir
from memory.locks import replaced_when_complete
from memory.types import MemoryScope, pool_scope

AgentTargetOpt = Annotated[
    str | None, typer.Option("--agent", "-a", help="An agent's private memory (default: $ARCANA_AGENT, when no other store is named).")
]
PoolTargetOpt = Annotated[str | None, typer.Option("--pool", help="A shared pool's memory.")]
GlobalTargetOpt = Annotated[bool, typer.Option("--global", help="The global tier's memory.")]


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    markdown = "markdown"


def _default_agent(agent: str | None, *others: object) -> str | None:
    """``agent``, else ``ARCANA_AGENT`` when no other store is named: the variable is the default
    for --agent (the `memory` commands let --pool and --global win over it), never a second target
    beside the --pool, --global or --all a user typed, or an `export --all` file's own stores."""
    if agent or any(others):
        return agent
    return os.environ.get("ARCANA_AGENT") or None


def _one_target(agent: str | None, pool: str | None, global_: bool, all_: bool | None = None) -> None:
    """Exactly one store to work on; ``all_`` None means --all is not an option here."""
    given = [name for name, on in (("--agent", agent), ("--pool", pool), ("--global", global_), ("--all", all_)) if on]
    if len(given) != 1:
        choices = "--agent, --pool, --global" + (" or --all" if all_ is not None else "")
        raise typer.BadParameter(f"give exactly one of {choices} (got {', '.join(given) or 'none'})")


async def _open_shared(cli, stack: AsyncExitStack, kind, name: str | None = None, *, must_exist: bool = False):
    """A pool's or the global tier's store (a local file or a server), opened now and closed with ``stack``.

    ``must_exist``: a local tier with no database yet is NotFoundError (nothing to export).
    """
    from memory.adapters.opener import made_yet, open_tier
    from memory.store_kinds import StoreKind, store_path

    if must_exist and not made_yet(cli.home, cli.config, kind, name):
        label = f"pool:{name}" if kind is StoreKind.POOL else "global"
        raise NotFoundError(f"{label} has no memories yet ({store_path(cli.home, kind, name)})")
    store = open_tier(cli.home, kind, name, config=cli.config, actor="cli")
    stack.push_async_callback(store.aclose)
    await store.connect()
    return store


async def _agent_store(cli, stack: AsyncExitStack, card):
    """The agent's private store, closed with ``stack``. One that has stored nothing is read as an empty
    store made outside the home: opening its own would make memory.db, and an export is a read."""
    if cli.home.agent_db(card.id).exists():
        return await stack.enter_async_context(cli.private_store(card))
    from memory.adapters.opener import scratch_store

    store = scratch_store(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "memory.db")
    stack.push_async_callback(store.aclose)
    await store.connect()
    return store


async def _sources(cli, stack: AsyncExitStack, agent, pool, global_, all_) -> tuple[list, dict, list]:
    """The (label, open store) pairs an export reads, the header's description of them, and the
    unreadable agent cards --all leaves out (the export says so and exits 4, never silently short)."""
    from memory.adapters.opener import server_url
    from memory.store_kinds import StoreKind

    sources, left = [], []
    if agent or all_:
        if all_:
            roster = cli.agents.scan()
            cards, left = roster.cards, roster.unreadable
        else:
            cards = [cli.agent(agent)]
        for card in cards:
            sources.append((f"agent:{card.name}", await _agent_store(cli, stack, card)))
        if agent:
            return sources, {"agent": cards[0].name, "agent_id": cards[0].id}, left
    from memory.federation.pools import PoolRegistry

    registry = PoolRegistry(cli.home)
    if pool:
        registry.show_settings(pool)  # NotFoundError for an unknown pool
    tiers = [(f"pool:{pool}", StoreKind.POOL, pool)] if pool else []
    if all_:
        local = {p.stem for p in cli.home.pools_dir.glob("*.db")}
        served = {n for n in registry.names() if server_url(cli.config, StoreKind.POOL, n)}
        tiers += [(f"pool:{name}", StoreKind.POOL, name) for name in sorted(local | served)]
    if global_ or (all_ and (server_url(cli.config, StoreKind.GLOBAL) or cli.home.global_db.exists())):
        tiers.append(("global", StoreKind.GLOBAL, None))
    for label, kind, name in tiers:
        sources.append((label, await _open_shared(cli, stack, kind, name, must_exist=True)))
    if not all_:
        return sources, ({"pool": pool} if pool else {"global": True}), left
    from memory.operations.restore_all import describe

    members = {name: registry.show_settings(name).members for label, kind, name in tiers if kind is StoreKind.POOL}
    stores = describe(cards, members, with_global=any(label == "global" for label, _, _ in tiers))
    return sources, {"all": [s[0] for s in sources], "stores": stores}, left


def _output_file(output: Path) -> tuple[Path, bool]:
    """Where a JSONL export is written, and whether it is renamed into place (a regular file, or none yet;
    through a symlink, its target). A pipe or device (/dev/stdout, /dev/null) is written as it is: renaming
    a file over it would replace the device itself. A folder is refused."""
    if output.is_dir():
        raise typer.BadParameter(
            f"{output} is a folder; give a file to write the JSON Lines to (or --format markdown to write notes into it)",
            param_hint="--output",
        )
    if output.exists() and not output.is_file():
        return output, False
    return (output.resolve() if output.is_symlink() else output), True


def _unwritable(output: Path, exc: OSError) -> typer.BadParameter:
    return typer.BadParameter(
        f"{output}: cannot write there ({exc.strerror or exc}); give a path in a folder you can write", param_hint="--output"
    )


def _output_path(value: str) -> Path | None:
    """``-o -`` is stdout, as no ``-o`` is: the convention, where a file named "-" surprised (``-o ./-``
    still names one)."""
    return None if value == "-" else given_path(value)


ExportJsonOpt = Annotated[bool, typer.Option("--json", help="Print a JSON summary on stdout (needs --output).")]


@command("export", json=ExportJsonOpt)
async def export(
    cli: CliContext,
    out: Out,
    agent: AgentTargetOpt = None,
    pool: PoolTargetOpt = None,
    global_: GlobalTargetOpt = False,
    all_: Annotated[bool, typer.Option("--all", help="Every agent, pool and the global tier.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File (jsonl; - for stdout) or folder (markdown); default stdout (jsonl).",
                                   parser=_output_path)
    ] = None,
    format_: Annotated[ExportFormat, typer.Option("--format", "-f", help="jsonl (lossless) or markdown (a vault).")] = ExportFormat.jsonl,
    with_history: Annotated[bool, typer.Option("--with-history", help="Include each memory's ledger rows.")] = False,
    with_vectors: Annotated[bool, typer.Option("--with-vectors", help="Include the model pin and vectors.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Replace an existing --output file (or edited notes) without asking.")] = False,
) -> None:
    """Export memories (every field, hidden and archived ones marked) as JSON Lines or Markdown notes."""
    from memory.operations import export as core

    agent = _default_agent(agent, pool, global_, all_)
    _one_target(agent, pool, global_, all_)
    if out.json_mode and output is None:
        raise typer.BadParameter("--json prints a summary on stdout, where the export goes; give --output FILE (not -)", param_hint="--json")
    if format_ is ExportFormat.markdown and (output is None or all_ or with_vectors or with_history):
        raise typer.BadParameter(
            "markdown export writes one store into a folder: give --output DIR and one of --agent, --pool, --global "
            "(no --all, --with-vectors or --with-history)",
            param_hint="--format",
        )
    if format_ is ExportFormat.jsonl and output is not None:
        target, atomic = _output_file(output)
    async with AsyncExitStack() as stack:
        sources, what, left = await _sources(cli, stack, agent, pool, global_, all_)  # an unknown store: exit 3 before asking
        if format_ is ExportFormat.jsonl and output is not None and atomic and target.is_file() and target.stat().st_size:
            # Trigger: -o names a file that holds something (a user's notes.txt as much as an old export).
            # Why: the rename would replace it for good. Outcome: ask on a terminal, else --yes or exit 2.
            confirm(f"replace {output} (an existing file) with the export", yes)
        if format_ is ExportFormat.markdown and not yes and output.is_dir() and any(output.iterdir()):
            # Trigger: a folder that already holds notes (an earlier export a person has edited since).
            # Why: a note of the same name was overwritten with the store's text, the edit lost. Outcome:
            # replacing one that differs is asked for as above; new notes and unchanged ones need nothing.
            if replaced := await core.notes_replaced(sources[0][1], output):
                more = f" and {len(replaced) - 1} more" if len(replaced) > 1 else ""
                confirm(f"replace {len(replaced)} note(s) in {output} whose text differs from the export "
                        f"({replaced[0]}{more})", yes)
        total = 0
        for _, store in sources:
            total += await store.count()
        options = {"what": what, "arcana_version": __version__, "with_history": with_history, "with_vectors": with_vectors}
        with out.progress("exporting", total) as bar:
            if format_ is ExportFormat.markdown:
                try:
                    report = await core.export_markdown(sources[0][1], output, on_progress=bar.update)
                except OSError as exc:
                    raise _unwritable(output, exc) from None
            elif output is None:
                report = await core.export_jsonl(sources, sys.stdout, **options, on_progress=bar.update)
            elif not atomic:
                try:
                    with open(target, "w", encoding="utf-8", newline="\n") as handle:
                        report = await core.export_jsonl(sources, handle, **options, on_progress=bar.update)
                except BrokenPipeError:
                    raise
                except OSError as exc:  # /dev/full
                    raise _unwritable(output, exc) from None
            else:
                # Into ``target.partial`` (0600: it holds hidden memories), renamed into place when complete;
                # a second export to the same file meanwhile is exit 75, never mixed into this one.
                try:
                    private_dir(target.parent)
                    with replaced_when_complete(target, target.with_name(target.name + ".partial"),
                                                f"export to {output}") as handle:
                        report = await core.export_jsonl(sources, handle, **options, on_progress=bar.update)
                except OSError as exc:
                    raise _unwritable(output, exc) from None
    if out.json_mode:
        out.data({"output": str(output) if output else "-", "format": format_.value, **report.as_dict(),
                  "agents_left_out": [str(card) for card in left]})
    out.info(f"exported {report.memories} memories from {', '.join(report.stores) or 'nothing'}"
             + (f" to {output}" if output else ""))
    if report.notes_removed:
        out.info(f"removed {report.notes_removed} note(s) of memories deleted or purged since an earlier export")
    left_out(left)
    if report.unreadable:  # one row an outside edit broke does not stop the export; it is never silent
        for reason in report.unreadable:
            out.warn(f"not exported: {reason}")
        raise MemoryStorageError(
            f"{len(report.unreadable)} stored {'row' if len(report.unreadable) == 1 else 'rows'} could not be read "
            "and not exported (the rest were); "
            "fix them as `arcana doctor` says, then export again"
        )
    if left:
        raise typer.Exit(exit_codes.CONFIG)


STDIN = Path("/dev/stdin")


def _source(value: str) -> Path:
    """``-`` is stdin (``arcana export | arcana --home OTHER import -``); ``./-`` names a file."""
    return STDIN if value == "-" else given_path(value)


@command("import")
async def import_(
    cli: CliContext,
    out: Out,
    source: Annotated[
        Path, typer.Argument(help="An `arcana export` file (- for stdin), or a folder of exported Markdown notes.",
                             parser=_source)
    ],
    agent: AgentTargetOpt = None,
    pool: PoolTargetOpt = None,
    global_: GlobalTargetOpt = False,
    strict: Annotated[bool, typer.Option("--strict", help="Import nothing if any line is bad.")] = False,
    embed: Annotated[bool, typer.Option("--embed/--no-embed", help="Embed memories that came without matching vectors.")] = True,
) -> None:
    """Import memories (upsert by id, visibility kept, ledgered as import); bad lines are named, exit 2.

    An `export --all` file is imported with no target: each store goes back to its own (agents and pools created).
    """
    with _spooled(source) as readable, _opened(readable) as handle:
        await _import(cli, out, readable, handle, Path("-") if source == STDIN else source, agent, pool, global_, strict, embed)


@contextmanager
def _spooled(source: Path) -> Iterator[Path]:
    """Stdin copied to a private temp file first: an import reads its records again from the top (after
    refusing a bad file, to embed), which a pipe cannot."""
    if source != STDIN:
        yield source
        return
    if (stdin := piped_stdin()) is None:
        raise typer.BadParameter("pipe the export on stdin, or give a file", param_hint="SOURCE")
    with tempfile.NamedTemporaryFile(prefix="arcana-import-", suffix=".jsonl") as spool:
        shutil.copyfileobj(stdin, spool)
        spool.flush()
        yield Path(spool.name)


@contextmanager
def _opened(source: Path) -> Iterator[IO[bytes] | None]:
    """``source`` opened once when it is a regular file: every pass over it (its header, `--strict`'s
    check, the import, an `--all` file's two) rewinds this one file, so the lines imported are the lines
    checked even when the path is replaced meanwhile (an export writing it again)."""
    if not source.is_file():
        yield None
        return
    with source.open("rb") as handle:
        yield handle


async def _import(cli: CliContext, out: Out, source: Path, handle: IO[bytes] | None, shown: Path, agent, pool,
                  global_, strict: bool, embed: bool) -> None:
    """:func:`import_` of ``source``, a file (open as ``handle``) or folder (named ``shown`` in messages)."""
    from memory.operations import export as core
    from memory.operations import restore_all
    from memory.operator.edits import GlobalCopies, Originals

    if not source.exists():
        raise typer.BadParameter(f"{shown} does not exist", param_hint="SOURCE")
    model, stores = None, None
    if not source.is_dir():  # refuse a foreign or future file before touching any store
        if handle is None:
            raise typer.BadParameter(f"{shown} is not a regular file or a folder", param_hint="SOURCE")
        head = core.read_header(handle.readline(core.LINE_BYTES))
        model, stores = head.get("model"), restore_all.stores_of(head)
    agent = _default_agent(agent, pool, global_, stores is not None)
    if stores is not None:
        if agent or pool or global_:
            raise typer.BadParameter(restore_all.refusal(str(shown), stores), param_hint="SOURCE")
        await _restore_all(cli, out, handle, stores, model=model, strict=strict, embed=embed, shown=shown)
        return
    if not (agent or pool or global_):
        raise typer.BadParameter(
            "give exactly one of --agent, --pool, --global (got none); only an `export --all` file is imported without one"
        )
    _one_target(agent, pool, global_, None)
    async with AsyncExitStack() as stack:
        if agent:
            card = cli.agent_to_store_for(agent)
            store = await stack.enter_async_context(cli.private_store(card))
            target = core.Target(MemoryScope.PRIVATE, agent_id=card.id)
            copies = GlobalCopies.of_home(cli.home, cli.config, actor="cli")
            stack.push_async_callback(copies.aclose)
            originals = None
        else:
            from memory.store_kinds import StoreKind

            if pool:
                from memory.federation.pools import PoolRegistry

                PoolRegistry(cli.home).show_settings(pool)
            store = await _open_shared(cli, stack, StoreKind.POOL if pool else StoreKind.GLOBAL, pool)
            target = core.Target(pool_scope(None, pool, MemoryScope.GLOBAL), pool_name=pool)
            copies = None
            originals = None if pool else Originals(cli.home, cli.config, actor="cli")
        gateway = _gateway(cli, embed)
        limit = cli.config.memory.max_content_bytes
        if source.is_dir():
            def records():
                return core.markdown_records(source, default_agent=target.agent_id or "imported", max_content_bytes=limit)

        else:
            records = _jsonl_reader(handle)

        with out.progress("importing") as bar:
            report = await core.import_records(
                records(), store, target, strict=strict, model=model, gateway=gateway,
                on_progress=bar.update, reopen=records, copies=copies, originals=originals, max_content_bytes=limit,
            )
    out.data(report.as_dict(), text=lambda: _summary(report))
    if report.embed_notice:
        out.warn(report.embed_notice)
    _bad_records(shown, report.bad, report.read, report.strict_refused, report.ops.get("refused", 0))


def _gateway(cli, embed: bool):
    if not (embed and cli.config.embedding.providers):
        return None
    from memory.embedding.factory import build_gateway

    return build_gateway(cli.config.embedding, cli.home)


def _jsonl_reader(handle: IO[bytes]):
    """A function that reads the file's records again from the top, past its header (one pass at a time)."""
    from memory.operations import export as core

    def records():
        handle.seek(0)
        core.read_header(handle.readline(core.LINE_BYTES))
        return core.jsonl_records(handle)

    return records


async def _restore_all(cli, out: Out, handle: IO[bytes], stores: list, *, model, strict: bool, embed: bool,
                       shown: Path) -> None:
    """An `export --all` file: every store it holds back into its own store of this home."""
    from memory.operations import restore_all

    with out.progress("importing") as bar:
        report = await restore_all.restore(
            cli.home, cli.config, stores, _jsonl_reader(handle), strict=strict, model=model,
            gateway=_gateway(cli, embed), actor="cli", on_progress=bar.update,
        )
    out.data(report.as_dict(), text=lambda: "\n".join(
        f"{s.store}{' (created)' if s.created else ''}: {_summary(s.report)}" for s in report.stores
    ) + (f"\nrejoined {report.joined} pool memberships" if report.joined else ""))
    for part in report.stores:
        if part.report.embed_notice:
            out.warn(f"{part.store}: {part.report.embed_notice}")
    _bad_records(shown, report.all_bad, report.read, report.strict_refused,
                 sum(part.report.ops.get("refused", 0) for part in report.stores))


def _bad_records(source: Path, bad: list, read: int, refused: bool, held: int) -> None:
    """Name the bad lines, and the lines refused as another agent's (``held``); either exits 2."""
    for where, why in bad:
        err(f"{source}: {where}: {why}")
    if held:
        held_by_others(held, source)
    if bad:
        verdict = "nothing was imported (--strict)" if refused else f"the other {read - held} were imported"
        err(f"{len(bad)} bad record(s) in {source}; {verdict}; fix or remove them and import again")
    if bad or held:
        raise typer.Exit(exit_codes.USAGE)


def _summary(report) -> str:
    ops = ", ".join(f"{n} {op}" for op, n in sorted(report.ops.items())) or "nothing"
    kept = f"; {report.kept_removed} deleted or purged here stay gone" if report.kept_removed else ""
    kept += (f"; {report.kept_newer} changed here since the file was written keep their newer text and importance "
             "(`arcana memory set` changes them)" if report.kept_newer else "")
    copies = f"; {report.copies_changed} global copies followed" if report.copies_changed else ""
    carriers = (f"; also withheld {report.carriers_withheld} consolidated memories that carry what it withheld"
                if report.carriers_withheld else "")
    return (f"imported {report.read} memories: {ops}; vectors kept {report.vectors_kept}, "
            f"embedded {report.embedded}{kept}{copies}{carriers}")


def register(app: typer.Typer) -> None:
    add_commands(app, export, import_)
