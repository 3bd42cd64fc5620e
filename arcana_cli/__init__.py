"""The ``arcana`` command line: a thin Typer layer over the ``memory`` core."""

__version__ = "0.1.0"
