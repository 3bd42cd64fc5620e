"""`arcana backup` and `arcana restore`: the whole home, consistent while agents keep writing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arcana_cli import exit_codes
from arcana_cli.context import ctx_of
from arcana_cli.output import JsonOpt, Out, err


def register(app: typer.Typer) -> None:
    @app.command("backup")
    def backup(
        ctx: typer.Context,
        dest: Annotated[Path, typer.Argument(help="Folder to put the timestamped backup in (with --verify: a backup).")],
        verify: Annotated[bool, typer.Option("--verify", help="Re-check a backup against its manifest instead.")] = False,
        json_: JsonOpt = False,
    ) -> None:
        """Back up the home (config, cards, sessions, every database) with a checksummed manifest."""
        from memory.backup_home import backup_home, verify_backup

        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        if verify:
            manifest, problems = verify_backup(dest)
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

    @app.command("restore")
    def restore(
        ctx: typer.Context,
        src: Annotated[Path, typer.Argument(help="A backup folder (or the DEST holding them: the newest is used).")],
        force: Annotated[
            bool, typer.Option("--force", help="Restore over a live home, moving its contents to the trash first.")
        ] = False,
        json_: JsonOpt = False,
    ) -> None:
        """Restore a verified backup into an empty home (over a live one only with --force)."""
        from memory.backup_home import restore_home

        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        report = restore_home(src, cli.home, force=force)
        moved = str(report.moved_to_trash) if report.moved_to_trash else None
        out.data({"source": str(report.source), "home": str(cli.home.root), "files": report.files,
                  "moved_to_trash": moved}, text=lambda: str(cli.home.root))
        if moved:
            out.info(f"the previous home's contents are in {moved}")
        out.info(f"restored {report.files} files from {report.source}; run `arcana doctor` to check")
