from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Annotated

import typer

from arcana_cli import exit_codes
from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import AgentOpt, Out, err, held_by_others, piped_stdin, text_or_stdin
from memory.errors import MemoryWriteError
from memory.limits import check_tags
from memory.types import MemoryEntry, MemoryScope, MemoryType, Visibility, pool_scope


@command("remember")
async def remember(
    cli: CliContext,
    out: Out,
    text: Annotated[str | None, typer.Argument(help="What to remember; '-' or omitted reads stdin.")] = None,
    agent: AgentOpt = ...,
    type_: Annotated[MemoryType, typer.Option("--type", "-t", help="Memory type.")] = MemoryType.SEMANTIC,
    importance: Annotated[float, typer.Option("--importance", "-i", min=0.0, max=1.0, help="0..1.")] = 0.5,
    pin: Annotated[bool, typer.Option("--pin", help="Pin: never pruned, ranked first.")] = False,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    visibility: Annotated[
        Visibility | None, typer.Option("--visibility", help="visible, private or hidden.")
    ] = None,
    scope: Annotated[
        MemoryScope | None,
        typer.Option("--scope", help="private (default), shared (needs --pool) or global.", show_default=False),
    ] = None,
    pool: Annotated[str | None, typer.Option("--pool", help="The shared pool to write to (implies --scope shared).")] = None,
    no_reconcile: Annotated[
        bool, typer.Option("--no-reconcile", help="Store as given: no noop, update or delete against what is known.")
    ] = False,
    from_: Annotated[
        str | None,
        typer.Option(
            "--from", metavar="FILE.jsonl",
            help="Import many: one JSON object per line (content; optional type, importance, tags, session, "
            "created_at, id); '-' reads stdin.",
        ),
    ] = None,
) -> None:
    """Store a memory for an agent and print its id (an unknown agent is created, and said so)."""
    from arcana_cli.federated import agent_federation

    if from_ is not None:
        if text is not None:
            raise typer.BadParameter("give TEXT or --from FILE, not both", param_hint="--from")
        if pin or tag or visibility is not None:
            raise typer.BadParameter("--pin, --tag and --visibility apply to one memory; put tags in the file", param_hint="--from")
    else:
        body = text_or_stdin(
            text, "TEXT", "nothing to remember: the text is empty", max_bytes=cli.config.memory.max_content_bytes
        )
        check_tags(tag or (), cli.config.memory.max_content_bytes)
    scope = pool_scope(scope, pool, MemoryScope.PRIVATE)
    cli.known_pool(pool)
    if from_ is not None:
        await _remember_from(
            cli, agent, out, from_, type_=type_, importance=importance, scope=scope, pool=pool, reconcile=not no_reconcile
        )
        return
    card = cli.agent_to_store_for(agent)
    entry = MemoryEntry(
        agent_id=card.id,
        type=type_,
        content=body,
        importance=importance,
        pinned=pin,
        tags=tag or [],
        visibility=visibility,
        scope=scope,
        pool_name=pool,
    )
    # Every tier stores the row either way; vectors are added where an embedder is up.
    async with agent_federation(cli, card, out) as federation:
        report = await federation.write(entry, reconcile=not no_reconcile)
    payload = {"agent": card.name, "agent_id": card.id, "scope": entry.scope.value, **report.as_dict()}
    if not report.accepted:
        if out.json_mode:  # a script reads which tiers failed and why (accepted: {}), then the exit code
            out.data({**payload, "stored": False})
        # The error line says why itself: under --quiet there are no warnings above it to point to.
        raise MemoryWriteError(f"memory not stored: every {entry.scope.value} tier failed ({_reasons(report.failed)})")
    for tier, why in report.failed.items():
        out.warn(f"tier {tier} did not store the memory ({why})")
    for warning in report.warnings:
        out.warn(warning)
    # "stored": a row was written; a noop only reinforced the one already there (its id, above).
    out.data({**payload, "stored": report.decision != "noop"}, text=lambda: report.entry_id)
    out.info(decision_words(report))


def _reasons(failed: dict) -> str:
    """Each failed tier and why, for the one error line."""
    return "; ".join(f"{tier}: {why}" for tier, why in failed.items())


def decision_words(report) -> str:
    """The reconciliation decision in words ("updated: supersedes 3f2a9c1e")."""
    short = ", ".join(i[:8] for i in report.supersedes)
    if report.decision == "noop":
        ends = f", confirmed: supersedes {short}" if short else ""  # a held claim the user has now said
        return f"already known: reinforced {report.entry_id[:8]}{ends}"
    if report.decision == "update":
        return f"updated: supersedes {short}"
    if report.decision == "delete":
        return f"retracted: ends {short}"
    if report.conflict_with:
        return f"added beside {report.conflict_with[:8]}: conflicts with a user-confirmed memory, which keeps answering"
    return "added"


@contextmanager
def _open_lines(source: str):
    """The --from file (or stdin) as a binary stream, read a bounded line at a time."""
    if source == "-":
        if (stdin := piped_stdin()) is None:
            raise typer.BadParameter("pipe the JSON lines on stdin, or give a file", param_hint="--from")
        yield stdin
        return
    try:
        handle = open(source, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise typer.BadParameter(f"{source}: no such file", param_hint="--from") from None
    except OSError as exc:
        raise typer.BadParameter(f"{source}: cannot read it ({exc.strerror})", param_hint="--from") from None
    with handle:
        yield handle


async def _remember_from(cli: CliContext, agent: str, out: Out, source: str, *, type_, importance, scope, pool, reconcile) -> None:
    """``remember --from``: every good line stored, every bad one named; exit 2 if any was bad.

    The file is streamed a window at a time (memory.operations.bulk_import.stream), never held whole.
    """
    from arcana_cli.federated import agent_federation
    from memory.operations.bulk_import import line_limit, remember_many, stream
    from memory.operator.edits import GlobalCopies
    from memory.lines import read_lines

    limit = cli.config.memory.max_content_bytes
    with _open_lines(source) as handle:
        card = cli.agent_to_store_for(agent)  # once the file opens: a wrong path creates no agent
        windows = stream(read_lines(handle, line_limit(limit)), card.id, max_content_bytes=limit,
                         type=type_, importance=importance, scope=scope, pool_name=pool)
        copies = GlobalCopies.of_home(cli.home, cli.config, actor="cli")  # opened only if a line reaches a copy
        try:
            async with agent_federation(cli, card, out) as federation:
                with out.progress("remembering") as bar:
                    report = await remember_many(federation, windows, reconcile=reconcile, on_progress=bar.update,
                                                 copies=copies)
        finally:
            await copies.aclose()
    for tier, why in report.failed.items():
        out.warn(f"tier {tier} did not store the memories ({why})")
    for warning in report.warnings:
        out.warn(warning)
    for bad in report.bad:
        out.warn(str(bad))
    name = "stdin" if source == "-" else source
    out.data(
        {"agent": card.name, "agent_id": card.id, "source": name, **report.as_dict()},
        text=lambda: f"{report.written} written, {report.unchanged} unchanged, {report.bad_total} bad line(s); "
        + (f"{report.restated} already known (reinforced); " if report.restated else "")
        + (f"{report.repeated} repeated id(s), the last line of each stands; " if report.repeated else "")
        + (f"{report.kept_removed} deleted or purged here stay gone; " if report.kept_removed else "")
        + (f"also withheld {report.carriers_withheld} consolidated memories that carry the words re-worded; "
           if report.carriers_withheld else "")
        + ", ".join(f"{n} {kind}" for kind, n in report.decisions.items()),
    )
    if report.bad_total > len(report.bad):
        out.warn(f"... and {report.bad_total - len(report.bad)} more bad line(s) not listed")
    if report.not_stored:
        # Trigger: a pool or global tier (the only one these lines go to) failed for some batches, e.g. its
        # server stopped mid-run. Why: a run that left lines out is not a success, as a single remember
        # whose every tier failed is not. Outcome: exit 5; the batches stored stay, a re-run adds the rest.
        raise MemoryWriteError(
            f"{report.not_stored} of the lines not stored: every tier they go to failed ({_reasons(report.failed)}); "
            "run it again once the tier is back (stored lines stay unchanged)"
        )
    if report.held_by_others:
        held_by_others(report.held_by_others, name)
    if report.bad:
        err(
            f"{report.bad_total} bad line(s) in {name}, first {report.bad[0]}; "
            "every other line is stored: fix those lines and run again (stored lines stay unchanged)"
        )
    if report.bad or report.held_by_others:
        raise typer.Exit(exit_codes.USAGE)


def register(app: typer.Typer) -> None:
    add_commands(app, remember)
