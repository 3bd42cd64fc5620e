"""The command decorator (issue 10, item 5): commands are module-level functions a test can call,
and every command gets its --json/--quiet and its exit codes the same way."""

from __future__ import annotations

import json

import pytest
from typer.main import get_command

from arcana_cli.app import app
from arcana_cli.commands import agent, memory_cmd
from arcana_cli.context import CliContext
from arcana_cli.output import Out
from command_tree import leaves


def test_a_command_is_a_plain_function_a_test_can_call(arcana_home, capsys):
    cli = CliContext(home=arcana_home)
    agent.list_(cli, Out(json_mode=True))
    assert json.loads(capsys.readouterr().out) == []
    agent.create(cli, Out(json_mode=True), "ada")  # positive control: the same call sees what was made
    created = json.loads(capsys.readouterr().out)
    agent.list_(cli, Out(json_mode=True))
    assert [a["id"] for a in json.loads(capsys.readouterr().out)] == [created["id"]]


async def test_an_async_command_is_awaited_directly(arcana_home, capsys):
    cli = CliContext(home=arcana_home)
    agent.create(cli, Out(), "ada")
    capsys.readouterr()
    await memory_cmd.list_(cli, Out(json_mode=True), agent="ada")
    assert json.loads(capsys.readouterr().out) == []
    await agent.delete(cli, Out(json_mode=True), "ada", yes=True)
    removed = json.loads(capsys.readouterr().out)
    assert removed["name"] == "ada" and not arcana_home.agent_dir(removed["id"]).exists()


def test_every_data_command_has_json_last_and_maintenance_has_quiet():
    commands = dict(leaves(get_command(app)))
    assert len(commands) > 50
    for name, command in commands.items():
        options = [p.name for p in command.params]
        if name in ("mcp", "ui"):  # serve a protocol or pages, not data: no --json
            assert "json_" not in options
            continue
        assert "json_" in options, name
        tail = ["json_", "quiet"] if name in ("prune", "reindex", "consolidate", "migrate up", "vault index", "vault watch") else ["json_"]
        assert options[-len(tail):] == tail, name


@pytest.mark.parametrize("args", [["prune", "--all", "--min-importance", "0.5", "--quiet"], ["agent", "list", "--quiet"]])
def test_quiet_comes_from_the_command_or_the_root(cli, args):
    result = cli(*args) if args[0] == "prune" else cli("--quiet", *args[:-1])
    assert result.exit_code == 0 and result.stderr == ""


def test_every_stderr_line_stays_one_line_whatever_it_echoes(capsys):
    """An error, a notice and a warning echoing a value with a newline (a file name, "$(cat file)"):
    each is one line; a value without one is echoed as it is (control)."""
    from arcana_cli.output import err, notice

    err("no vault named 'a\nb'")
    notice("removed /home/x\ny")
    Out(json_mode=False, quiet=False).warn("skipped note 'c\nd.md'")
    Out(json_mode=False, quiet=False).warn("skipped note 'plain.md'")
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["arcana: error: no vault named 'a\\nb'", "arcana: removed /home/x\\ny",
                     "warning: skipped note 'c\\nd.md'", "warning: skipped note 'plain.md'"]
