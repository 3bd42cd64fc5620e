"""The root Typer app: global options, error mapping, and command registration."""

from __future__ import annotations

import errno
import importlib
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from typer._click import exceptions as click  # Typer 0.29+ carries its own Click: its parse errors
from typer._click.core import ParameterSource
from typer.core import TyperGroup

from arcana_cli import __version__, exit_codes
from arcana_cli.context import CliContext, announce_quarantines, quarantine_mark
from arcana_cli.output import err, given_path, notice, reader_left
from memory.deadline import LOCK_WAIT, MAX_LOCK_WAIT_SECONDS
from memory.errors import ArcanaMemoryError
from memory.home import Home

# Top-level command (or group) name -> module under arcana_cli.commands exposing
# register(app). Order is the order of `arcana --help`. Only the module of the
# command being run is imported, so start-up cost does not grow with the CLI.
COMMAND_MODULES = {
    "init": "init",
    "remember": "remember",
    "recall": "recall",
    "context": "context_cmd",
    "memory": "memory_cmd",
    "agent": "agent",
    "pool": "pool",
    "config": "config_cmd",
    "prune": "prune",
    "consolidate": "consolidate",
    "migrate": "migrate",
    "doctor": "doctor",
    "reindex": "reindex",
    "embeddings": "embeddings",
    "vault": "vault",
    "run": "run",
    "model": "model",
    "session": "session",
    "quarantine": "quarantine",
    "export": "export",
    "import": "export",
    "mcp": "mcp",
    "host": "host",
    "ui": "ui",
    "backup": "backup",
    "restore": "backup",
}


class ArcanaGroup(TyperGroup):
    """Maps core errors to one stderr line and a documented exit code."""

    def list_commands(self, ctx) -> list[str]:
        return list(self.commands)

    def main(self, args=None, *rest, **options):
        """Run as Click does, exiting with the documented code; a refused `host save` exits 1, not 2."""
        try:
            return super().main(args, *rest, **options)
        except SystemExit as exc:
            # Trigger: `host save` refused (its hook input, the transcript, an option). Why: Claude Code
            # blocks a compaction when its PreCompact hook exits 2, and nothing is lost by letting it go
            # on (the transcript stays, the next hook reads it). Outcome: the same one line, exit 1.
            words = command_words(sys.argv[1:] if args is None else list(args))
            if exc.code == exit_codes.USAGE and words[:2] == ["host", "save"]:
                raise SystemExit(exit_codes.FAILURE) from None
            raise

    def parse_args(self, ctx, args):
        """Refuse an argument that is not UTF-8 (Python hands such bytes over as lone surrogates):
        no store, config or output can hold it, so it would fail later with a traceback."""
        if ctx.parent is None:
            for position, arg in enumerate(args, 1):
                try:
                    arg.encode("utf-8")
                except UnicodeEncodeError:
                    shown = arg.encode("utf-8", "surrogateescape" if _escapable(arg) else "backslashreplace")
                    err(
                        f"argument {position} ('{shown.decode('utf-8', 'backslashreplace')}') is not valid UTF-8; "
                        "pass UTF-8 text (rename a file whose name is not)"
                    )
                    raise typer.Exit(exit_codes.USAGE)
            try:  # a bad global option (`arcana --hme x`): parsed before any command runs
                return super().parse_args(ctx, args)
            except click.NoArgsIsHelpError:
                raise
            except click.UsageError as exc:
                err(usage_message(exc))
                raise typer.Exit(exit_codes.USAGE) from None
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        """Run the command; one that quarantined a store (and did not fail otherwise) exits 5."""
        mark = quarantine_mark()
        clean = False
        try:
            result = self._mapped(ctx)
            clean = True
            return result
        except typer.Exit as exc:
            clean = exc.exit_code == 0
            raise
        finally:
            if announce_quarantines(ctx.obj, mark) and clean:
                raise typer.Exit(exit_codes.STORAGE)

    def _mapped(self, ctx):
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # data still buffered must reach the reader, or the pipe error show here
            return result
        except click.NoArgsIsHelpError:  # `arcana agent`: the group's help, as asked
            raise
        except click.UsageError as exc:  # Click's parse errors and BadParameter: our one-line format, exit 2
            err(usage_message(exc))
            raise typer.Exit(exit_codes.USAGE) from None
        except BrokenPipeError:
            # The reader left early (`arcana memory list | head`): stop quietly, as `cat` does,
            # with the documented code (Typer would say 1).
            reader_left()
            raise typer.Exit(exit_codes.PIPE_CLOSED) from None
        except ArcanaMemoryError as exc:
            err(str(exc))
            raise typer.Exit(exit_codes.for_error(exc)) from None
        except OSError as exc:  # the system refused a file no check above named (unreadable, I/O error)
            err(os_error_message(exc))
            raise typer.Exit(exit_codes.STORAGE if exc.errno in FULL_DISK else exit_codes.FAILURE) from None
        except ValidationError as exc:  # a value the core's models refuse: a usage error, not a traceback
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or exc.title
            err(f"invalid {where}: {first['msg']}")
            raise typer.Exit(exit_codes.USAGE) from None
        except KeyboardInterrupt:
            err("interrupted")
            raise typer.Exit(exit_codes.INTERRUPTED) from None


def usage_message(exc: click.UsageError) -> str:
    """A Click usage error as ``WHAT; HOW TO FIX`` (the fix: the command's --help unless it says one).

    Click would print a usage banner and "Error: Invalid value for 'PROMPT': …";
    every other error is one ``arcana: error:`` line, so these are too.
    """
    what = exc.format_message().strip().rstrip(".").removeprefix("Invalid value for ").replace("Value error, ", "")
    hint, _, message = what.partition(": ")
    if message.startswith(hint.strip("'")):  # "--http: --http takes HOST:PORT" says it once
        what = message
    if (var := _from_environment(exc)) is not None:  # the command line was fine: the variable is what to fix
        what = f"{var}={os.environ.get(var, '')!r}: {message[:1].lower()}{message[1:]}; fix or unset {var}"
    if what[:1].isupper() and what[1:2].islower():
        what = what[0].lower() + what[1:]
    if ";" not in what:
        where = exc.ctx.command_path if exc.ctx is not None else "arcana"
        what += f"; see `{where} --help`"
    return what


def _from_environment(exc: click.UsageError) -> str | None:
    """The environment variable a refused option value came from (``ARCANA_LOCK_WAIT=soon``), or None."""
    if not isinstance(exc, click.BadParameter) or exc.param is None or exc.ctx is None:
        return None
    from_environment = exc.ctx.get_parameter_source(exc.param.name) is ParameterSource.ENVIRONMENT
    return exc.param.envvar if from_environment and isinstance(exc.param.envvar, str) else None


# A full disk (or quota) is a storage problem, exit 5 as when SQLite meets it: running again does not help.
FULL_DISK = {errno.ENOSPC, errno.EDQUOT}


def os_error_message(exc: OSError) -> str:
    """An OSError as ``WHAT; HOW TO FIX``: the file and the system's reason, never a traceback."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in FULL_DISK:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{where}{reason[:1].lower()}{reason[1:]}: the disk is full; free space on it (the home's, or the output's) and run again"
    if exc.filename is None:
        return f"{reason[:1].lower()}{reason[1:]}; run the command again, and check the disk if it persists"
    if exc.errno == errno.EPERM:  # not the mode bits (that is EACCES): an immutable or append-only flag
        return (f"{exc.filename}: {reason[:1].lower()}{reason[1:]}; it is likely immutable or append-only "
                f"(`lsattr {exc.filename}`): `chattr -i -a {exc.filename}` as root, then run again")
    return f"{exc.filename}: {reason[:1].lower()}{reason[1:]}; check that file (its permissions, its disk) and run again"


def _escapable(text: str) -> bool:
    """Every surrogate in ``text`` is one of the U+DC80..U+DCFF escapes of a raw byte."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)


_app = typer.Typer(
    name="arcana",
    cls=ArcanaGroup,
    help="Local memory for AI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"arcana {__version__}\n")
        raise typer.Exit()


@_app.callback()
def root(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option("--home", help="Arcana home directory [env: ARCANA_HOME; default: ~/.arcana].", show_default=False,
                     parser=given_path),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No messages or progress on stderr.")] = False,
    lock_wait: Annotated[
        float | None,
        typer.Option("--lock-wait", envvar="ARCANA_LOCK_WAIT", show_envvar=False, min=0.0, max=MAX_LOCK_WAIT_SECONDS,
                     metavar="SECONDS", show_default=False,
                     help="Seconds to wait for another process's lock before failing: a store's (exit 5) or one of "
                          "Arcana's lock files (exit 75) [env: ARCANA_LOCK_WAIT; default: 30 for a store, each lock "
                          "file its own; 0: do not wait]."),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Local memory for AI agents: remember, recall, prune — all in SQLite under your home."""
    ctx.obj = CliContext(home=Home.resolve(home), quiet=quiet)
    waits = LOCK_WAIT.set(lock_wait)
    ctx.call_on_close(lambda: LOCK_WAIT.reset(waits))  # an in-process caller's next command starts from the default
    root_dir = ctx.obj.home.root
    if root_dir.exists() and not root_dir.is_dir():
        # Trigger: --home or ARCANA_HOME names a file. Why: every read found nothing under it and
        # exited 0 with an empty list or the default config. Outcome: exit 2 before any command runs.
        from memory.errors import InvalidRequestError

        given = "--home" if home is not None else ("ARCANA_HOME" if os.environ.get("ARCANA_HOME") else "the home")
        raise InvalidRequestError(
            f"{given} {root_dir} is a file, not a folder; name a folder for the home (a missing one is made) "
            "or move the file away"
        )
    # Trigger: a `restore` killed part-way left its staging folder in the home. Why: with its journal
    # written, the home is half swapped; without, an unfinished copy lies there. Outcome: finished or
    # removed before this command runs, said in one line even under --quiet. A journal that cannot be
    # read stops every command but doctor, which must run to diagnose the home: it fails a `restore` row.
    from memory.errors import BackupError
    from memory.operations.restore_swap import finish_interrupted_restores

    try:
        said = finish_interrupted_restores(ctx.obj.home.root)
    except BackupError:
        if ctx.invoked_subcommand != "doctor":
            raise
        said = []
    for line in said:
        notice(line)


_registered: set[str] = set()
_VALUE_OPTIONS = {"--home", "--lock-wait"}


def register(names=None) -> typer.Typer:
    """Register the modules for ``names`` (default: every command) on the app."""
    for name in COMMAND_MODULES if names is None else names:
        module = COMMAND_MODULES[name]
        if module not in _registered:
            importlib.import_module(f"arcana_cli.commands.{module}").register(_app)
            _registered.add(module)
    return _app


def __getattr__(name: str):
    """``from arcana_cli.app import app`` gives the fully registered app (tests, docs)."""
    if name == "app":
        return register()
    raise AttributeError(name)


def command_words(args: list[str]) -> list[str]:
    """The words of ``args`` that are not options, global options' values skipped: the command first."""
    words, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words


def run(args: list[str] | None = None) -> None:
    """Run the CLI; Typer turns usage errors into exit 2 and typer.Exit into its code."""
    args = sys.argv[1:] if args is None else args
    name = next(iter(command_words(args)), None)
    register([name] if name in COMMAND_MODULES else None)
    _app(args=args, prog_name="arcana")
