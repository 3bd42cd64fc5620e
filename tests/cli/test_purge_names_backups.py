"""A purge cannot reach into a backup (it is the way back), so it names the backups that may still hold
what it erased: each `arcana backup` made of the home, and each copy a migration took of the store."""

from __future__ import annotations

from runner import cli_data

SECRET = "zebra-quartz-7731 is the vault code"


def _purge(cli, memory_id: str):
    result = cli("memory", "purge", memory_id, "--agent", "scout", "--yes")
    assert result.exit_code == 0, result.output
    return result


def test_a_purge_names_the_backups_made_before_it(cli, no_embedder, tmp_path):
    before = cli_data(cli, "remember", "heron-basalt-4410 opens the boathouse", "--agent", "scout")["id"]
    # the control: no backup yet, nothing to name
    assert "backup" not in _purge(cli, before).stderr
    secret = cli_data(cli, "remember", SECRET, "--agent", "scout")["id"]
    made = cli_data(cli, "backup", str(tmp_path / "backups"))["path"]
    said = _purge(cli, secret).stderr
    assert f"warning: 1 backup(s) made before this purge may still hold its text ({made});" in said
    assert said.count("\n") == 2  # "purged ID" and the one warning line
    copy = next((tmp_path / "backups").glob("arcana-backup-*/agents/*/memory.db"))
    assert b"zebra-quartz-7731" in copy.read_bytes()  # never rewritten: the way back stays whole


def test_a_purge_names_the_copy_a_migration_took_of_the_store(cli, no_embedder):
    import asyncio
    import json
    from pathlib import Path

    from memory.migrations.runner import MIGRATIONS, migrate
    from memory.sqlite.connection import open_connection

    async def older(path: Path) -> None:  # the store as the version before the newest left it
        conn = await open_connection(path)
        try:
            await migrate(conn, path, MIGRATIONS[:-1])
        finally:
            await conn.close()

    assert cli("agent", "create", "scout").exit_code == 0
    db = Path(json.loads(cli("agent", "show", "scout", "--json").stdout)["memory_db"])
    asyncio.run(older(db))
    # upgrades the store, copying it first (whether a copy holds the memory is not read: it is named)
    secret = cli_data(cli, "remember", SECRET, "--agent", "scout")["id"]
    (copy,) = (no_embedder.root / "backups").glob("*.db")
    assert f"warning: 1 backup(s) made before this purge may still hold its text ({copy});" in _purge(cli, secret).stderr


def test_a_pool_purge_names_the_backups_made_before_it(cli, no_embedder, tmp_path):
    assert cli("pool", "create", "team").exit_code == 0
    assert cli("agent", "join", "scout", "team").exit_code == 0
    kept = cli_data(cli, "remember", "heron-basalt-4410 opens the boathouse", "--agent", "scout", "--pool", "team")["id"]
    secret = cli_data(cli, "remember", SECRET, "--agent", "scout", "--pool", "team")["id"]
    made = cli_data(cli, "backup", str(tmp_path / "backups"))["path"]
    result = cli("memory", "purge", secret, "--pool", "team", "--yes")
    assert result.exit_code == 0, result.output
    assert f"warning: 1 backup(s) made before this purge may still hold its text ({made});" in result.stderr
    assert kept[:8] in cli("recall", "heron-basalt-4410", "--agent", "scout").stdout  # the control still answers
