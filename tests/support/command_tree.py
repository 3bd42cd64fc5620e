"""The commands of the Typer app, one (path, click command) per leaf: for tests that hold a rule
over every command, so a new command is held to it without being listed."""

from __future__ import annotations


def leaves(command, path=()):
    """``("memory set", <click command>)`` for each command below ``command`` (a click group)."""
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from leaves(sub, (*path, name))
    else:
        yield " ".join(path), command
