"""The one command decorator: every command gets its context and its output the same way.

Like sqlite-utils' shared output options, ``@command`` adds the switches
every data-printing command has (``--json``, and ``--quiet`` where cron runs
it) and hands the function a ready context (a :class:`~arcana_cli.context.CliContext`)
and :class:`Out` instead of a ``typer.Context``; an ``async def`` command is run to
completion. Commands stay plain module-level functions, so a test can call
one with a context and an output of its own.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

import typer

from arcana_cli.context import ctx_of
from arcana_cli.output import JsonOpt, Out, QuietOpt

_INJECTED = ("cli", "out")


def command(name: str, *, json: Any = True, quiet: bool = False) -> Callable[[Callable], Callable]:
    """Make ``fn(cli, out, **options)`` the Typer command ``name`` (see :func:`add_commands`).

    ``fn`` itself is returned unchanged, so a test calls (or awaits) it directly.

    ``json`` adds ``--json`` (``out.json_mode``; an ``Annotated`` option in its
    place gives it a help of its own); ``quiet`` adds the command's own
    ``--quiet`` (``out.quiet``, also set by the global ``--quiet``). Both come
    last in ``--help``, after the function's own options.
    """

    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        params = list(signature.parameters.values())
        if tuple(p.name for p in params[: len(_INJECTED)]) != _INJECTED:
            raise TypeError(f"command {name}: {fn.__name__} must take (cli, out, ...) first")
        hints = typing.get_type_hints(fn, include_extras=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in params[len(_INJECTED) :]]
        json_option = JsonOpt if json is True else json
        switches = [("json_", json_option)] * bool(json) + [("quiet", QuietOpt)] * quiet
        outer = [
            inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
            *own,
            *(inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=False, annotation=a) for n, a in switches),
        ]

        @functools.wraps(fn)
        def invoke(ctx: typer.Context, **options):
            cli = ctx_of(ctx)
            json_mode, own_quiet = options.pop("json_", False), options.pop("quiet", False)
            result = fn(cli, Out(json_mode=json_mode, quiet=own_quiet or cli.quiet), **options)
            return asyncio.run(result) if inspect.iscoroutine(result) else result

        invoke.__signature__ = signature.replace(parameters=outer, return_annotation=None)
        invoke.__annotations__ = {p.name: p.annotation for p in outer}
        fn.typer_command = (name, invoke)
        return fn

    return decorate


def add_commands(target: typer.Typer, *commands: Callable) -> None:
    """Register ``@command`` functions on ``target`` (the app or a group), in ``--help`` order."""
    for fn in commands:
        name, invoke = fn.typer_command
        target.command(name)(invoke)

