"""`arcana backup` and `arcana restore`: the whole home, consistent while agents keep writing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arcana_cli import exit_codes
from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, err, given_path


@command("backup")
def backup(
    cli: CliContext,
    out: Out,
    dest: Annotated[Path, typer.Argument(help="Folder to put the timestamped backup in (with --verify: a backup).", parser=given_path)],
    verify: Annotated[bool, typer.Option("--verify", help="Re-check a backup against its manifest instead.")] = False,
) -> None:
    """Back up the home (config, cards, sessions, every database) with a checksummed manifest."""
    from memory.operations.backup import backup_home, verify_backup

    if verify:
        with out.progress("verifying") as bar:
            manifest, problems = verify_backup(dest, on_progress=bar.update)
        out.data(
            {**manifest.as_dict(), "ok": not problems, "problems": problems},
            text=lambda: "\n".join(problems) if problems else f"{manifest.path}: ok",
        )
        if problems:
            err(f"backup {manifest.path}: {len(problems)} problem(s); do not restore from it")
            raise typer.Exit(exit_codes.FAILURE)
        out.info(f"verified {len(manifest.files)} files ({manifest.databases} databases) against the manifest")
        return
    with out.progress("backing up") as bar:
        manifest = backup_home(cli.home, dest, on_progress=bar.update)
    out.data(manifest.as_dict(), text=lambda: str(manifest.path))
    out.info(f"backed up {len(manifest.files)} files ({manifest.databases} databases, {manifest.bytes} bytes)")


@command("restore")
def restore(
    cli: CliContext,
    out: Out,
    src: Annotated[Path, typer.Argument(help="A backup folder (or the DEST holding them: the newest is used).", parser=given_path)],
    force: Annotated[
        bool, typer.Option("--force", help="Restore over a live home, moving its contents to the trash first.")
    ] = False,
) -> None:
    """Restore a verified backup into an empty home (over a live one only with --force)."""
    from memory.operations.backup import restore_home

    with out.progress("restoring") as bar:
        report = restore_home(src, cli.home, force=force, on_progress=bar.update)
    out.data({**report.as_dict(), "home": str(cli.home.root)}, text=lambda: str(cli.home.root))
    if report.moved_to_trash:
        out.info(f"the previous home's contents are in {report.moved_to_trash}")
    out.info(f"restored {report.files} files from {report.source}; run `arcana doctor` to check")


def register(app: typer.Typer) -> None:
    add_commands(app, backup, restore)
