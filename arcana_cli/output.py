"""The one output helper: data to stdout (JSON or a table), messages to stderr."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, BinaryIO

import typer
from pydantic import BaseModel

from memory.timespec import iso_times

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No messages or progress on stderr.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
AgentOpt = Annotated[str, typer.Option("--agent", "-a", help="Agent name or id.", envvar="ARCANA_AGENT")]


def given_path(value: str):
    """A file or folder named on the command line (``parser=``): an empty one is refused, never taken
    for the current folder (an unset variable in ``arcana import "$FILE"``)."""
    from pathlib import Path

    if not value:
        raise typer.BadParameter("the path is empty; name the file or folder ('.' for the current one)")
    return Path(value)


def to_jsonable(value: Any) -> Any:
    """Plain JSON values; every time ISO 8601 (:func:`memory.timespec.iso_times`)."""
    return iso_times(_plain(value))


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


_CHUNK = 64 * 1024
# Terminal control characters (C0 but newline and tab, DEL, C1): a memory, a note or a file name is
# someone else's text, and an escape sequence in it must not restyle, move or clear the reader's
# terminal. Direction controls (embeddings, overrides, isolates, marks) are obeyed by a page and by
# bidi-aware terminals alike: "\u202egnp.exe" reads as "exe.png". Invisible characters (zero-width
# space, word joiner, a BOM, line/paragraph separators) make two different texts look the same;
# Unicode tag characters (U+E0000-E007F) spell ASCII no page or terminal draws but a model reads
# ("ASCII smuggling"), and the Hangul fillers and U+180E draw as blank space.
# Human output shows all of them escaped; JSON keeps the text exact. Joiners (U+200C/D) are left:
# emoji sequences and several scripts need them.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u115f\u1160\u180e\u200b\u200e\u200f\u2028-\u202e"
                     "\u2060-\u2064\u2066-\u2069\u3164\ufeff\uffa0\U000e0000-\U000e007f]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every terminal control character shown as ``\\xNN`` and every direction control
    or invisible character as ``\\uNNNN`` (``\\UNNNNNNNN`` past U+FFFF): for the terminal and the web view alike."""
    return _UNSAFE.sub(_escaped, text)


def emit(text: str) -> None:
    """Write ``text`` to stdout and flush, in pipe-sized pieces.

    One huge write to a pipe whose reader has gone can end without an error
    (a partial write, then nothing); pieces make a closed pipe raise
    BrokenPipeError here, which the CLI turns into exit 141.
    """
    for start in range(0, len(text), _CHUNK):
        piece = text[start : start + _CHUNK]
        try:
            sys.stdout.write(piece)
        except UnicodeEncodeError:  # a lone surrogate (stored by a library caller): show it escaped
            sys.stdout.write(piece.encode("utf-8", "backslashreplace").decode("utf-8"))
        sys.stdout.flush()


class Out:
    """Where a command's output goes. One instance per command invocation."""

    def __init__(self, *, json_mode: bool = False, quiet: bool = False):
        self.json_mode = json_mode
        self.quiet = quiet
        self._stderr = None

    @property
    def stderr(self):
        """A Rich console on stderr, created only when a progress bar needs one."""
        if self._stderr is None:
            from rich.console import Console

            self._stderr = Console(file=sys.stderr, highlight=False)
        return self._stderr

    def data(
        self,
        payload: Any,
        *,
        columns: Sequence[str] | None = None,
        rows: Callable[[], list[Sequence[Any]]] | None = None,
        text: Callable[[], str] | None = None,
    ) -> None:
        """Print ``payload`` as JSON under --json, else as a table or plain text."""
        if self.json_mode:
            emit(json.dumps(to_jsonable(payload), ensure_ascii=False, indent=2) + "\n")
        elif columns is not None and rows is not None:
            emit(printable(format_table(columns, rows())))
        elif text is not None:
            body = printable(text())
            if body:  # nothing to say is nothing on stdout, not an empty line a hook or a pipe reads
                emit(body + "\n")
        else:
            emit(json.dumps(to_jsonable(payload), ensure_ascii=False, indent=2) + "\n")

    def report(self, payload: Any, **shape: Any) -> None:
        """A command's report of what it did, as :meth:`data`; nothing under --quiet without --json (a
        cron or deploy line prints nothing unless something went wrong, and --json asks for the data)."""
        if self.json_mode or not self.quiet:
            self.data(payload, **shape)

    def info(self, message: str) -> None:
        if not self.quiet:
            sys.stderr.write(printable(message) + "\n")

    def warn(self, message: str) -> None:
        """Warnings show even under --json (stderr is not data), but not under --quiet; one line each."""
        if not self.quiet:
            sys.stderr.write(f"warning: {one_line(message)}\n")

    def progress(self, description: str, total: int | None = None):
        """A Rich progress bar on a TTY; a no-op when quiet, under --json, or piped."""
        return _Progress(self, description, total)

    @contextmanager
    def progress_per_store(self, what: str):
        """An ``on_progress(label, done, total)`` for a core call that works through stores:
        one bar per store (``"<label>: <what>"``), each closed when the next one starts."""
        shown: list = []  # [label, bar] of the store in progress

        def update(label: str, done: int, total: int) -> None:
            if not shown or shown[0] != label:
                if shown:
                    shown[1].__exit__(None, None, None)
                shown[:] = [label, self.progress(f"{label}: {what}").__enter__()]
            shown[1].update(done, total)

        try:
            yield update
        finally:
            if shown:
                shown[1].__exit__(None, None, None)


class _Progress:
    def __init__(self, out: Out, description: str, total: int | None):
        self.enabled = not out.quiet and not out.json_mode and sys.stderr.isatty()
        self.description = description
        self.total = total
        self._progress = None
        self._task = None
        self._out = out

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self._out.stderr,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total)
        return self

    def update(self, done: int, total: int | None = None) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=done, total=total or self.total)

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False


def format_table(columns: Sequence[str], rows: list[Sequence[Any]]) -> str:
    """Aligned plain-text columns (easy to read, easy to awk); the last column is
    cut to the terminal width only when stdout is a terminal."""
    cells = [[str(c) for c in columns]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns) - 1)]
    limit = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    lines = []
    for row in cells:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        line = f"{line}  {row[-1]}" if widths else row[-1]
        if limit and len(line) > limit:
            line = line[: limit - 1] + "…"
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def piped_stdin() -> BinaryIO | None:
    """Standard input as bytes when something is piped or redirected into it; None when it is a
    terminal (nothing was piped) or closed (`<&-`: Python then has no ``sys.stdin`` at all)."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.buffer


def text_or_stdin(value: str | None, name: str, empty: str, *, max_bytes: int | None = None) -> str:
    """``value``, or standard input (strict UTF-8) when it is absent or '-'; never empty.

    Over ``max_bytes`` is refused; stdin is read no further than one byte past it,
    so a huge input costs no memory.
    """
    if value is None or value == "-":
        if (stdin := piped_stdin()) is None:
            raise typer.BadParameter(f"give {name} or pipe it on stdin", param_hint=name)
        raw = stdin.read(-1 if max_bytes is None else max_bytes + 1)
        if max_bytes is not None and len(raw) > max_bytes:
            raise typer.BadParameter(f"stdin is {_over(max_bytes)}", param_hint=name)
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise typer.BadParameter(
                f"stdin is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                "convert it first, e.g. with iconv",
                param_hint=name,
            ) from None
    elif max_bytes is not None and len(value) * 4 > max_bytes and len(value.encode("utf-8", "surrogatepass")) > max_bytes:
        raise typer.BadParameter(f"{name} is {_over(max_bytes)}", param_hint=name)
    if not value.strip():
        raise typer.BadParameter(empty, param_hint=name)
    return value.strip()


def _over(limit: int) -> str:
    return (
        f"over the limit of {limit:,} bytes (memory.max_content_bytes); "
        "store a summary, or split it into several memories"
    )


def reader_left() -> None:
    """stdout's reader closed it: point stdout at /dev/null so no later flush can raise."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def confirm(action: str, yes: bool) -> None:
    """Destructive actions need --yes when stdin is not a terminal; on a terminal, ask."""
    if yes:
        return
    if sys.stdin is None or not sys.stdin.isatty():  # None: closed, no one to ask
        from memory.errors import InvalidRequestError

        raise InvalidRequestError(f"{action}: destructive, and stdin is not a terminal to ask; pass --yes to confirm")
    if not typer.confirm(f"{action}?", default=False, err=True):
        raise typer.Exit(1)


def err(message: str) -> None:
    """One-line error on stderr (used by the error mapper)."""
    sys.stderr.write(f"arcana: error: {one_line(message)}\n")


def held_by_others(count: int, source: Any) -> None:
    """The error line for an import's lines refused whole (their id is another agent's memory in a
    shared tier): the same words from `remember --from` and `import`, which then exit 2."""
    err(f"{count} line(s) in {source} name a memory another agent holds in the shared tier they go to, "
        "so they were not stored (every other line was); give them ids of their own (or no id) and run again")


def left_out(cards: Sequence[Any]) -> None:
    """Each unreadable agent card an --all run left out, one line (path, what is wrong, the fix) on stderr,
    even under --quiet: cron mails stderr, and an agent is never skipped without a word."""
    for card in cards:
        err(f"agent {card.agent_id} left out: {card}")


def notice(message: str) -> None:
    """One line on stderr, even under --quiet, for what was done to the home before the command: not an error."""
    sys.stderr.write(f"arcana: {one_line(message)}\n")


def one_line(message: str) -> str:
    """``message`` printable and on one line: a newline in what it echoes (a value given as
    `"$(cat file)"`, a reason from elsewhere) is shown as ``\\n``; no longer than :func:`shortened` keeps."""
    return shortened(printable(message).replace("\n", "\\n"))


MESSAGE_CHARS = 2_000  # of an error's line: the value it echoes may be a megabyte (an id pasted whole)
KEPT_END = 500  # the end stays: it says how to fix it


def shortened(text: str) -> str:
    """``text`` cut in its middle to about :data:`MESSAGE_CHARS`, its start and its last
    :data:`KEPT_END` characters kept: `memory show` of a 1 MB prefix printed a 1 MB error line."""
    if len(text) <= MESSAGE_CHARS:
        return text
    cut = len(text) - MESSAGE_CHARS
    return f"{text[: MESSAGE_CHARS - KEPT_END]} […{cut:,} characters…] {text[-KEPT_END:]}"
