from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, YesOpt, confirm
from arcana_cli.render import LIST_COLUMNS, age, entry_json, list_rows, snippet, version_json, version_state
from memory.errors import NotFoundError, UnreadableRowError
from memory.types import Audience, MemoryQuery, MemoryType, Visibility

IdArg = Annotated[str, typer.Argument(help="Memory id (or a unique prefix of 6+ characters).")]
WhoseOpt = Annotated[
    str | None, typer.Option("--agent", "-a", help="Agent name or id: its private memory.", envvar="ARCANA_AGENT")
]
PoolOpt = Annotated[str | None, typer.Option("--pool", help="A shared pool's memories instead (wins over --agent).")]
GlobalOpt = Annotated[bool, typer.Option("--global", help="The global tier's memories instead (wins over --agent).")]


def target_store(cli: CliContext, agent: str | None, pool: str | None, global_: bool):
    """The store an operator command works on, behind a :class:`MemoryEditor` (decided in the core)."""
    from memory.operator.edits import OperatorTarget, open_editor

    return open_editor(cli.home, cli.config, OperatorTarget(agent, pool, global_), actor="cli")


def edit_json(report) -> dict:
    """An applied edit for --json: the id, whether it changed, what each copy did, and the
    consolidated memories that carry it (``reached``), each as an edit of its own."""
    data = {"id": report.entry_id, "changed": report.changed, "copies": [c.as_dict() for c in report.copies]}
    return {**data, "reached": [edit_json(r) for r in report.carriers]} if report.carriers else data


@command("list")
async def list_(
    cli: CliContext,
    out: Out,
    agent: WhoseOpt = None,
    pool: PoolOpt = None,
    global_: GlobalOpt = False,
    all_: Annotated[bool, typer.Option("--all", help="Include private, hidden and superseded memories (marked).")] = False,
    archived: Annotated[bool, typer.Option("--archived", help="Include archived memories.")] = False,
    type_: Annotated[list[MemoryType] | None, typer.Option("--type", "-t", help="Only these types.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=10_000, help="Most rows to show.")] = 50,
) -> None:
    """List an agent's (or a pool's) current memories: pinned, then importance, then newest."""
    from memory.operator.edits import NoStoreYet

    query = MemoryQuery(types=type_ or None, limit=limit)
    try:
        async with target_store(cli, agent, pool, global_) as editor:
            # Filtered in SQL, before the limit; a listing is not a recall hit.
            audience = Audience.OPERATOR if all_ else Audience.LISTING
            entries = await editor.store.search(query, audience=audience, include_archived=archived)
            await editor.name_sources(entries)
    except NoStoreYet:
        if pool or global_:  # a shared tier with no store is said (exit 3), as before
            raise
        entries = []  # an agent that has stored nothing yet lists nothing
    out.data([entry_json(e) for e in entries], columns=LIST_COLUMNS, rows=lambda: list_rows(entries))


@command("show")
async def show(cli: CliContext, out: Out, memory_id: IdArg, agent: WhoseOpt = None, pool: PoolOpt = None, global_: GlobalOpt = False) -> None:
    """Show one memory in full, whatever its visibility."""
    async with target_store(cli, agent, pool, global_) as editor:
        entry = await editor.resolve(memory_id)
    data = entry_json(entry)
    out.data(
        data,
        text=lambda: "\n".join(
            [f"{k}: {v}" for k, v in data.items() if k != "content"] + [f"age: {age(entry.created_at)}", "", entry.content]
        ),
    )


async def _edit(
    cli: CliContext, out: Out, memory_id: str, agent, pool, global_, op: str, verb: str, changes: dict | None = None,
    *, changes_for=None,
):
    """Every mutating command: resolve, then one core call that reaches every copy. ``changes_for(editor,
    entry)`` reads an ``update``'s changes off the resolved memory, in the same editor."""
    from memory.operator.edits import Edit, withheld_count

    async with target_store(cli, agent, pool, global_) as editor:
        entry = await editor.resolve(memory_id)
        if changes_for is not None:
            changes = await changes_for(editor, entry)
        edit = Edit(op, changes=changes or {})
        report = await editor.apply(entry.id, edit, verb=verb)
    if edit.op in ("update", "make_current"):
        reached = {k: v for k, v in edit_json(report).items() if k in ("copies", "reached")}
        out.data({**entry_json(report.entry), **reached}, text=lambda: report.entry_id)
        if edit.op == "make_current":
            short = report.entry_id[:8]
            out.info(f"{short} is current again" if report.changed else f"{short} was already current")
    else:
        out.data(edit_json(report), text=lambda: report.entry_id)
        out.info(f"{verb} {report.entry_id}" if report.changed else f"{report.entry_id} was already {verb}")
    if reached := withheld_count(report.carriers):  # --current and restore bring back what was withdrawn with it
        done = {"make_current": "made current again", "restore": "restored"}.get(edit.op, "withheld")
        out.info(f"also {done} {reached} consolidated memories that carry it or that it carries")
    for copy in report.copies:
        if copy.changed and copy.op in ("withdraw", "promote"):
            out.info(f"{report.entry_id}: {'withdrawn from' if copy.op == 'withdraw' else 'promoted to'} the {copy.tier} tier")
        elif copy.op == "refused":
            out.info(f"{report.entry_id}: not promoted: the {copy.tier} tier holds that id for another agent")
    return report


@command("forget")
async def forget(cli: CliContext, out: Out, memory_id: IdArg, agent: WhoseOpt = None, pool: PoolOpt = None, global_: GlobalOpt = False) -> None:
    """Archive a memory (and its global copy): hidden from recall, kept, restorable."""
    await _edit(cli, out, memory_id, agent, pool, global_, "archive", "archived")


@command("restore")
async def restore(cli: CliContext, out: Out, memory_id: IdArg, agent: WhoseOpt = None, pool: PoolOpt = None, global_: GlobalOpt = False) -> None:
    """Bring an archived memory back into recall."""
    await _edit(cli, out, memory_id, agent, pool, global_, "restore", "restored")


@command("purge")
async def purge(
    cli: CliContext, out: Out, memory_id: IdArg, agent: WhoseOpt = None, pool: PoolOpt = None, global_: GlobalOpt = False,
    yes: YesOpt = False,
) -> None:
    """Delete a memory and its global copy for good, words and all (their ledger history keeps what was done)."""
    if not yes:  # what is asked about exists (else exit 3, as every destructive command), and is named whole
        async with target_store(cli, agent, pool, global_) as editor:
            memory_id = (await editor.resolve(memory_id)).id
        confirm(f"purge memory {memory_id}", yes)
    report = await _edit(cli, out, memory_id, agent, pool, global_, "purge", "purged")
    if report.changed:
        _name_backups(cli, out, agent, pool, global_)


def _name_backups(cli: CliContext, out: Out, agent, pool, global_) -> None:
    """Say which backups may still hold the purged text: a purge never rewrites them."""
    from memory.operations.backup import backups_holding
    from memory.operator.edits import OperatorTarget

    if held := backups_holding(cli.home, cli.config, OperatorTarget(agent, pool, global_)):
        named = ", ".join(map(str, held[:3])) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        out.warn(f"{len(held)} backup(s) made before this purge may still hold its text ({named}); "
                 "delete them (rm -r) to be rid of it, or keep them as the way back")


@command("set")
async def set_(
    cli: CliContext,
    out: Out,
    memory_id: IdArg,
    agent: WhoseOpt = None,
    pool: PoolOpt = None,
    global_: GlobalOpt = False,
    importance: Annotated[float | None, typer.Option("--importance", "-i", min=0.0, max=1.0, help="New importance, 0..1.")] = None,
    type_: Annotated[MemoryType | None, typer.Option("--type", "-t", help="New type.")] = None,
    visibility: Annotated[Visibility | None, typer.Option("--visibility", help="visible, private or hidden.")] = None,
    pin: Annotated[bool | None, typer.Option("--pin/--unpin", help="Pin or unpin.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Replace tags (repeatable).")] = None,
    content: Annotated[str | None, typer.Option("--content", help="Replace the text.")] = None,
    current: Annotated[
        bool,
        typer.Option("--current", help="Make this version current again (undo a wrong supersession or conflict)."),
    ] = False,
) -> None:
    """Change a memory's importance, type, visibility, pin, tags or text, or make it current again (its global copy too)."""
    changes = {
        k: v
        for k, v in {
            "importance": importance,
            "type": type_,
            "visibility": visibility,
            "pinned": pin,
            "tags": tag,
            "content": content,
        }.items()
        if v is not None
    }
    if current:
        if changes:
            raise typer.BadParameter("--current restores a version as it was; give it without other changes", param_hint="--current")
        await _edit(cli, out, memory_id, agent, pool, global_, "make_current", "made current")
        return
    if not changes:
        raise typer.BadParameter("nothing to change; give at least one option")
    await _edit(cli, out, memory_id, agent, pool, global_, "update", "changed", changes)


@command("revert")
async def revert(
    cli: CliContext, out: Out, memory_id: IdArg,
    to: Annotated[int, typer.Option("--to", min=1, help="The ledger seq (from `memory history`) whose result to restore.")],
    agent: WhoseOpt = None, pool: PoolOpt = None, global_: GlobalOpt = False,
) -> None:
    """Restore a memory's text, tags, type, importance, pin and visibility as ledger row SEQ left them (its global copy too; a hide is never lifted)."""
    from memory.operator.revert import revert_unreadable, reverted_fields

    async def changes_for(editor, entry):
        return reverted_fields(entry, await editor.store.history(entry.id), to)

    try:
        report = await _edit(cli, out, memory_id, agent, pool, global_, "update", "reverted", changes_for=changes_for)
    except UnreadableRowError as exc:  # the row itself, or one of its ledger rows
        async with target_store(cli, agent, pool, global_) as editor:
            report = await revert_unreadable(editor, memory_id, to)
        if report is None:
            raise exc from None  # the row reads: a ledger row could not be
        out.data(entry_json(report.entry), text=lambda: report.entry_id)
        out.info(f"{report.entry_id[:8]} can be read again, as ledger row {to} left it")
        return
    short = report.entry_id[:8]
    out.info(f"{short} is as ledger row {to} left it" if report.changed else f"{short} was already as ledger row {to} left it")


@command("history")
async def history(
    cli: CliContext, out: Out, memory_id: IdArg, agent: WhoseOpt = None, pool: PoolOpt = None, global_: GlobalOpt = False,
    versions: Annotated[
        bool, typer.Option("--versions", help="The version chain instead: older and newer versions of this fact.")
    ] = False,
) -> None:
    """Every recorded change to a memory, oldest first, from the ledger (or its version chain)."""
    if versions:
        await _versions(cli, out, memory_id, agent, pool, global_)
        return
    async with target_store(cli, agent, pool, global_) as editor:
        records = await editor.store.history(await editor.resolve_recorded(memory_id))
    if not records:
        raise NotFoundError(f"no history for memory '{memory_id}'")

    def rows():
        return [(r.seq, r.at.isoformat(timespec="seconds"), r.op, r.actor, ", ".join(r.changed_fields())) for r in records]

    out.data([r.typed() for r in records], columns=("seq", "at", "op", "actor", "changed"), rows=rows)


async def _versions(cli: CliContext, out: Out, memory_id: str, agent, pool, global_) -> None:
    """``memory history --versions``: the chain through MEMORY_ID, oldest first, the current one marked."""
    async with target_store(cli, agent, pool, global_) as editor:
        # What `memory show` may show, any visibility and archived too (marked), and nothing else.
        entry = await editor.resolve(memory_id)
        chain = await editor.store.versions(entry.id, audience=Audience.OPERATOR, include_archived=True)

    def when(moment) -> str:
        return moment.isoformat(timespec="seconds") if moment else "-"

    out.data(
        [version_json(e) for e in chain],
        columns=("id", "from", "to", "state", "memory"),
        rows=lambda: [
            (e.id[:8], when(e.valid_from or e.created_at), when(e.valid_to), version_state(e), snippet(e.content))
            for e in chain
        ],
    )


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Inspect and edit individual memories (operator reads).", no_args_is_help=True)
    app.add_typer(group, name="memory")
    add_commands(group, list_, show, forget, restore, purge, set_, revert, history)
