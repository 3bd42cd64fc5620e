"""Console entry point. ``--version`` answers before Typer, Rich or the core load."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from arcana_cli import __version__

        sys.stdout.write(f"arcana {__version__}\n")
        return
    from arcana_cli.app import run

    run()


if __name__ == "__main__":
    main()
