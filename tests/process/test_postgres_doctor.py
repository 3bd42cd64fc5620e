"""`arcana doctor` on tiers that live on a PostgreSQL server: a schema older than this Arcana's is a
failure naming the fix (`arcana migrate up`), whether or not an agent uses that tier, and doctor
itself never upgrades it. Real server (the suite's), the real Typer app."""

from __future__ import annotations

import asyncio
import json

from arcana_cli import exit_codes
from memory.postgres.migrations import MIGRATIONS, current_version, head_version, migrate


async def _at(url: str, version: int | None = None) -> int:
    """The database brought to schema ``version`` (the first ``version`` migrations; None: left as it
    is); its version read back."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        if version is not None:
            await migrate(conn, "test", MIGRATIONS[:version])
        return await current_version(conn)
    finally:
        await conn.close()


def _doctor(cli):
    done = cli("doctor", "--json")
    return done.exit_code, {c["name"]: c for c in json.loads(done.stdout)["checks"]}, done


def test_doctor_fails_a_server_tier_whose_schema_is_pending_and_names_migrate_up(cli, arcana_home, pg_url, pg_server):
    old = head_version() - 1
    current_url = pg_server.fresh_database("arcana_test_current")
    global_url = pg_server.fresh_database("arcana_test_global")
    assert asyncio.run(_at(pg_url, old)) == old and asyncio.run(_at(global_url, old)) == old
    assert asyncio.run(_at(current_url, head_version())) == head_version()
    arcana_home.ensure()
    arcana_home.config_path.write_text(json.dumps({
        "embedding": {"providers": []}, "memory": {"global_url": global_url},
        "pools": {"old": {"url": pg_url}, "current": {"url": current_url}},
    }))
    arcana_home.config_path.chmod(0o600)
    # No agent: nothing joins either pool, so only a check of the servers themselves can see them.
    code, checks, done = _doctor(cli)
    pending = {name: c for name, c in checks.items() if not c["ok"]}
    assert code == exit_codes.FAILURE and "check(s) failed" in done.stderr, done.output
    assert sorted(name.split()[1] for name in pending) == ["global", "pool:old"], pending
    for check in pending.values():
        assert f"schema v{old}/{head_version()}" in check["detail"] and "arcana migrate up" in check["detail"], check
    [fine] = [c for name, c in checks.items() if "pool:current" in name]  # the control: an up-to-date tier
    assert fine["ok"] and f"schema v{head_version()}/{head_version()}" in fine["detail"], fine
    assert asyncio.run(_at(pg_url)) == old and asyncio.run(_at(global_url)) == old  # doctor upgraded nothing
    # With an agent in the old pool, its tier row says the same fix rather than only "see migrate status".
    assert cli("agent", "create", "alice").exit_code == 0
    assert cli("agent", "join", "alice", "old").exit_code == 0
    code, checks, _ = _doctor(cli)
    [tier] = [c for name, c in checks.items() if name.startswith("tier pool:old")]
    assert not tier["ok"] and "arcana migrate up" in tier["detail"], tier
    # The fix it names works: after it, doctor passes.
    assert cli("migrate", "up", "--json").exit_code == 0
    code, checks, done = _doctor(cli)
    assert code == 0 and all(c["ok"] for c in checks.values()), done.output
