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
    except BrokenPipeError:
        # The reader left early (`arcana memory list | head`): stop quietly, as `cat` does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # exit_codes.PIPE_CLOSED, without importing it on this path


if __name__ == "__main__":
    main()
