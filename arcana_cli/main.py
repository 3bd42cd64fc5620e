"""Console entry point. ``--version`` answers before Typer, Rich or the core load."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from arcana_cli import __version__

        sys.stdout.write(f"arcana {__version__}\n")
        return
    import os

    # The CLI uses no pydantic plugins; skipping their entry-point scan saves ~25 ms per command.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from arcana_cli.app import run

    try:
        run()
    except BrokenPipeError:  # a pipe that closed outside a command (e.g. while printing --help)
        from arcana_cli.exit_codes import PIPE_CLOSED
        from arcana_cli.output import reader_left

        reader_left()
        sys.exit(PIPE_CLOSED)


if __name__ == "__main__":
    main()
