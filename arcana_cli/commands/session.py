from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import AgentOpt, Out
from arcana_cli.render import age, snippet

IdArg = Annotated[str, typer.Argument(help="Session id (or a unique prefix).")]


def _manager(cli: CliContext, card, *, with_model: bool = False):
    from memory.runtime.agent import session_manager

    return session_manager(cli.home, cli.config, card, with_model=with_model, audit=cli.audit)


@command("list")
async def list_(cli: CliContext, out: Out, agent: AgentOpt = ...) -> None:
    """List an agent's sessions, oldest first."""
    card = cli.agent(agent)
    sessions = _manager(cli, card).list()
    withheld = await _withheld_summaries(cli, card, out, sessions)
    out.data(
        [s.as_dict(summary_left_out=withheld.get(s.id)) for s in sessions],
        columns=("id", "age", "turns", "state", "summary"),
        rows=lambda: [
            (s.id, age(s.created_at), len(s.turns), "closed" if s.closed else "open",
             _left_out(withheld[s.id]) if s.id in withheld else snippet(s.summary or "-", 60))
            for s in sessions
        ],
    )


async def _withheld_summaries(cli: CliContext, card, out: Out, sessions) -> dict[str, dict[str, str]]:
    from arcana_cli.federated import agent_federation
    from memory.runtime.sessions import withheld_summaries

    if not any(s.summary is not None for s in sessions):
        return {}
    async with agent_federation(cli, card, out) as memory, cli.private_store(card) as store:
        return await withheld_summaries(sessions, memory, store)


def _left_out(why: dict[str, str]) -> str:
    return f"left out: its memory {why['memory_id']} is {why['reason']}"


@command("show")
async def show(cli: CliContext, out: Out, session_id: IdArg, agent: AgentOpt = ...) -> None:
    """Show a session's turns and summary; a turn a replay would leave out is named, not printed."""
    from arcana_cli.federated import agent_federation
    from memory.runtime.sessions import replay_exclusions, withheld_summaries

    card = cli.agent(agent)
    session = _manager(cli, card).load(session_id)
    async with agent_federation(cli, card, out) as memory, cli.private_store(card) as store:
        left_out = await replay_exclusions(session, memory, store)
        summary_left_out = (await withheld_summaries([session], memory, store)).get(session.id)
    data = session.as_dict(with_turns=True, left_out=left_out, summary_left_out=summary_left_out)

    def text() -> str:
        lines = [f"session {session.id} ({'closed' if session.closed else 'open'}, {len(session.turns)} turns)"]
        for number, turn in enumerate(session.turns, 1):
            if number - 1 in left_out:
                why = left_out[number - 1]
                lines.append(f"[{number}] left out of replay: its memory {why['memory_id']} is {why['reason']}")
            else:
                lines += [f"[{number}] user: {turn.prompt}", f"[{number}] assistant: {turn.response}"]
        if summary_left_out:
            lines.append(f"summary {_left_out(summary_left_out)}")
        elif session.summary:
            lines.append(f"summary: {session.summary}")
        return "\n".join(lines)

    out.data(data, text=text)


@command("close")
async def close(
    cli: CliContext,
    out: Out,
    session_id: IdArg,
    agent: AgentOpt = ...,
    no_summary: Annotated[bool, typer.Option("--no-summary", help="Close without writing a summary memory.")] = False,
) -> None:
    """Close a session and write its consolidated summary memory."""
    from arcana_cli.federated import agent_federation

    card = cli.agent(agent)
    manager = _manager(cli, card, with_model=not no_summary)
    session = manager.load(session_id)
    if no_summary or not manager.settings.summarise_on_close:
        manager.close(session)
    else:
        async with agent_federation(cli, card, out) as federation:
            await manager.close_and_summarise(session, memory=federation)
    out.data(session.as_dict(), text=lambda: session.summary or f"session {session.id} closed")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="An agent's conversations: list, show, close (with summary).", no_args_is_help=True)
    app.add_typer(group, name="session")
    add_commands(group, list_, show, close)
