from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.federated import agent_federation
from arcana_cli.output import Out, printable, text_or_stdin


class _Streamed:
    """The answer as it arrives on stdout; ``end()`` closes its line once, whether it ended or broke
    off: a model failing mid-answer left the line open, and the error ran on after the text."""

    def __init__(self) -> None:
        self.open = False

    def chunk(self, text: str) -> None:
        sys.stdout.write(printable(text))  # a model can repeat a memory's escape sequence or override
        sys.stdout.flush()
        self.open = True

    def end(self) -> None:
        if self.open:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.open = False


@command("run")
async def run_(
    cli: CliContext,
    out: Out,
    agent: Annotated[str, typer.Argument(help="Agent name or id.")],
    prompt: Annotated[str | None, typer.Argument(help="The prompt; '-' or omitted reads stdin.")] = None,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Continue this session (it stays open).")
    ] = None,
    keep_open: Annotated[
        bool, typer.Option("--keep-open", help="Leave the new session open (no summary yet).")
    ] = False,
    no_memory: Annotated[
        bool, typer.Option("--no-memory", help="No recall, no extraction, no session, no writes.")
    ] = False,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name from `arcana model list`.")] = None,
    show_context: Annotated[
        bool, typer.Option("--show-context", help="Print the recalled context sent to the model, on stderr.")
    ] = False,
    context_tokens: Annotated[
        int, typer.Option("--context-tokens", min=50, max=100_000, help="Token budget for recalled context.")
    ] = 1000,
) -> None:
    """Answer PROMPT as AGENT with its memory: recall, answer (streamed), remember (an unknown AGENT is created)."""
    from memory.errors import NotFoundError
    from memory.models.registry import provider_for, resolve_model_name
    from memory.runtime.agent import AgentRuntime

    text = text_or_stdin(prompt, "PROMPT", "the prompt is empty")
    config = cli.config
    use_memory = config.memory.enabled and not no_memory
    # A session lives in memory: without it, --session answered without the session's turns and did
    # not add this one to it, and --keep-open kept nothing open, both at exit 0.
    for wanted, flag in ((session, "--session"), (keep_open, "--keep-open")):
        if wanted and not use_memory:
            fix = "drop --no-memory" if no_memory else "memory is off: `arcana config set memory.enabled true`"
            raise typer.BadParameter(f"{flag} needs memory; {fix}", param_hint=flag)
    # A run that stores its turn creates an unknown agent, as remember does — once its model is known,
    # so a run that cannot start creates nothing; one that stores nothing (--no-memory) needs the agent,
    # and so does one continuing a session (an agent made now has none: it was made for an exit 3).
    try:
        card = cli.agent(agent)
    except NotFoundError:
        if not use_memory or session:
            raise
        card = None
    provider = provider_for(config, resolve_model_name(config, card, model))
    card = card or cli.agent_to_store_for(agent)

    def context_shown(context) -> None:
        if show_context:
            sys.stderr.write(printable(context.text or "(no memories recalled)") + "\n")
            sys.stderr.flush()

    streamed = _Streamed()
    async with agent_federation(cli, card, out) if use_memory else nullcontext() as memory:
        runtime = AgentRuntime(cli.home, card, provider, memory=memory, config=config, audit=cli.audit)
        try:
            result = await runtime.turn(
                text,
                session_id=session,
                keep_open=keep_open,
                budget_tokens=context_tokens,
                on_context=context_shown,
                on_chunk=None if out.json_mode else streamed.chunk,
                on_answered=streamed.end,
            )
        finally:
            streamed.end()
    if out.json_mode:
        out.data(
            {
                "agent": card.name,
                "model": provider.name,
                "answer": result.answer,
                "session_id": result.session_id,
                "session_closed": result.session_closed,
                "recalled_ids": result.recalled_ids,
                "written_ids": result.written_ids,
                "summary_memory_id": result.summary_memory_id,
                "timings_ms": result.timings_ms,
                "jobs": result.jobs,
                "unsaved": None if result.unsaved is None else str(result.unsaved),
            }
        )
    elif result.session_id and not result.session_closed:
        out.info(f"session {result.session_id} is open; continue with --session {result.session_id}")
    if result.unsaved is not None:  # the answer is out; what the user said is not remembered: exit 5
        raise result.unsaved


def register(app: typer.Typer) -> None:
    add_commands(app, run_)
