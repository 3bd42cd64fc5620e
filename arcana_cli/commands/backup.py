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
    src: Annotated[
        Path | None,
        typer.Argument(help="A backup folder (or the DEST holding them: the newest is used).", parser=given_path, show_default=False),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Restore over a live home, moving its contents to the trash first.")
    ] = False,
    copies: Annotated[
        bool,
        typer.Option("--copies", help="Read no backup: only bring the agents' copies on a server global tier in line "
                                      "with their memories (what a restore does last)."),
    ] = False,
) -> None:
    """Restore a verified backup into an empty home (over a live one only with --force)."""
    import asyncio

    from memory.operations.backup import align_server_copies, last_replaced, restore_home

    if (src is None) != copies:
        err("give a backup to restore, or --copies (and no backup) to check the server copies again")
        raise typer.Exit(exit_codes.USAGE)
    if copies:
        report = asyncio.run(align_server_copies(cli.home, actor="cli", replaced=last_replaced(cli.home)))
        out.data({"copies": report.as_dict(), "home": str(cli.home.root)}, text=lambda: str(cli.home.root))
    else:
        with out.progress("restoring") as bar:
            restored = restore_home(src, cli.home, force=force, on_progress=bar.update)
        out.data({**restored.as_dict(), "home": str(cli.home.root)}, text=lambda: str(cli.home.root))
        if restored.moved_to_trash:
            out.info(f"the previous home's contents are in {restored.moved_to_trash}")
        out.info(f"restored {restored.files} files from {restored.source}; run `arcana doctor` to check")
        report = restored.copies
    said = ", ".join(f"{verb} {n} {'copy' if n == 1 else 'copies'}" for verb, n in (
        ("withdrew", report.changed.get("withdraw", 0)), ("archived", report.changed.get("archive", 0)),
        ("superseded", report.changed.get("supersede", 0))) if n)
    if report.tier is not None and not report.unchecked:
        out.info(f"server copies on {report.tier}: {said or 'all in line with their memories'}")
    if report.unchecked:
        # Trigger: the server global tier could not be reached (or its config read) after the swap.
        # Why: copies there may still answer other homes' agents with what the home now hides.
        # Outcome: the home stays restored; exit STORAGE naming the agents and the command to finish.
        err(f"{'the home is restored, but ' if not copies else ''}the copies of {len(report.unchecked)} agent(s) "
            f"({', '.join(report.unchecked)}) on {report.tier} were not checked ({report.problem}){'; ' + said if said else ''}"
            "; they may still answer with what the home hides: run `arcana restore --copies` once it is reachable")
        raise typer.Exit(exit_codes.STORAGE)


def register(app: typer.Typer) -> None:
    add_commands(app, backup, restore)
