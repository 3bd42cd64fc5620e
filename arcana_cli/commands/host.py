"""`arcana host`: wire Arcana into a coding-agent host (MCP server and hooks), and the hook that saves."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import AgentOpt, Out, piped_stdin
from memory.home import shown_name
from memory.hosts import Host

HostArg = Annotated[Host, typer.Argument(help="The coding-agent host: claude-code.")]


def launcher() -> list[str]:
    """How a host starts this same Arcana: the `arcana` script running now (or the one beside this
    interpreter), else this interpreter with ``-m arcana_cli.main``; always absolute."""
    for script in (Path(sys.argv[0]), Path(sys.executable).parent / "arcana"):
        if script.name == "arcana" and script.is_file() and os.access(script, os.X_OK):
            return [os.path.abspath(script)]
    return [os.path.abspath(sys.executable), "-m", "arcana_cli.main"]


@command("setup")
def setup(
    cli: CliContext,
    out: Out,
    host: HostArg,
    agent: AgentOpt = ...,
    directory: Annotated[
        Path, typer.Option("--dir", help="The project folder the host runs in [default: the current folder].",
                           show_default=False, exists=True, file_okay=False)
    ] = Path("."),
    name: Annotated[str, typer.Option("--name", help="The MCP server's name in the host.")] = "arcana",
    write: Annotated[
        bool, typer.Option("--write", help="Write the files (a changed file is backed up first); else only print them.")
    ] = False,
) -> None:
    """Print the host's configuration for an agent: MCP server, session-start and pre-compaction hooks (--write writes it)."""
    from memory.agents import AmbiguousAgentError
    from memory.errors import NotFoundError
    from memory.operations.host_setup import apply, plan

    if not name.strip():
        raise typer.BadParameter("the server needs a name", param_hint="--name")
    files = plan(host, directory, launcher=launcher(), home=cli.home.root, agent=agent, server=name)
    # The files name the agent by id, as config.json does: a rename keeps the project's memory, and
    # a new agent that reuses the name after a delete is never served the old one's project.
    card = None
    if write:
        card = cli.agent_to_store_for(agent)  # once every file checked out: a malformed one creates nothing
    else:
        try:
            card = cli.agent(agent)
        except AmbiguousAgentError:  # a NotFoundError too, but one --write cannot settle
            raise
        except NotFoundError:
            out.warn(f"no agent named {shown_name(agent)} yet; --write creates it (the files then name its id)")
    if card is not None and card.id != agent:
        files = plan(host, directory, launcher=launcher(), home=cli.home.root, agent=card.id, server=name)
    for planned in files:
        if planned.changed and planned.before is not None and not out.quiet:  # a new file's text is on stdout
            sys.stderr.write(planned.diff())
    if write:
        apply(files)
        for planned in files:
            if planned.backup is not None:
                out.info(f"backed up {planned.path} to {planned.backup}")
    payload = {"host": host.value, "agent": agent, "agent_id": None if card is None else card.id, "written": write,
               "files": [f.as_dict() for f in files]}

    def text() -> str:
        if write:
            return "\n".join(f"{'wrote' if f.changed else 'unchanged'} {f.path}" for f in files)
        return "\n".join(f"# {f.path}{'' if f.changed else ' (unchanged)'}\n{f.after.rstrip()}" for f in files)

    out.data(payload, text=text)
    if not write and any(f.changed for f in files):
        out.info("nothing written; run again with --write to write these files")


@command("save")
async def save(cli: CliContext, out: Out, host: HostArg, agent: AgentOpt = ...) -> None:
    """Store what a host session decided, from the hook's JSON on stdin (only new exchanges); its report goes to stderr."""
    from arcana_cli.federated import agent_federation
    from memory.runtime.host_save import MAX_HOOK_INPUT, MAX_TRANSCRIPT_BYTES, parse_hook_input, save_transcript

    if (stdin := piped_stdin()) is None:
        raise typer.BadParameter("pipe the hook's JSON (session_id, transcript_path) on stdin", param_hint="stdin")
    hook = parse_hook_input(stdin.read(MAX_HOOK_INPUT + 1))
    card = cli.agent_to_store_for(agent)
    async with agent_federation(cli, card, out) as federation:
        report = await save_transcript(cli.home, cli.config, card, federation, hook, host=host, audit=cli.audit)
    for warning in report.warnings:
        out.warn(warning)
    if report.malformed_lines:
        out.warn(f"{report.malformed_lines} malformed line(s) of {hook.transcript} skipped")
    if report.truncated:
        out.warn(f"read {report.end - report.start:,} bytes of {hook.transcript} (a hook reads at most "
                 f"{MAX_TRANSCRIPT_BYTES >> 20} MiB); the rest is saved by this session's next hook, or a session resuming it")
    # The report goes on stderr: Claude Code takes a PreCompact hook's stdout as instructions for the
    # summary it writes (the line "… fact(s) stored, summary <id>" was one). --json asks for it on stdout.
    if out.json_mode:
        out.data({"agent": card.name, "agent_id": card.id, **report.as_dict()})
    else:
        out.info(f"{report.exchanges} exchange(s) read, {len(report.stored)} fact(s) stored, "
                 f"summary {report.summary_memory_id or 'none'}; {report.ignored_lines} tool or meta line(s) ignored, "
                 f"{report.malformed_lines} malformed")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Coding-agent hosts (Claude Code): set up the MCP server and hooks; the saving hook.",
                        no_args_is_help=True)
    app.add_typer(group, name="host")
    add_commands(group, setup, save)
