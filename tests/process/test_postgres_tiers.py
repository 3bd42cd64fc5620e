"""Server pools through the CLI and the federation: a real PostgreSQL server,
the real Typer app, real homes, real writer processes.

Covers: `pool create --url/--url-env`, the password never reaching disk or
output, a server stopped mid-session degrading only its tier (and coming back
after the breaker's probe), and two homes writing one pool at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from embed_server import hashed_vectors

from memory.adapters.postgres import PostgresAdapter
from memory.agents import AgentRegistry
from memory.audit import AuditLog
from memory.postgres.migrations import head_version
from memory.config import load_config
from memory.embedding.base import EmbeddingMeta
from memory.embedding.gateway import EmbeddingGateway
from memory.federation.events import audit_sink
from memory.home import Home
from memory.runtime.assembly import federation_for_agent
from memory.types import MemoryEntry, MemoryQuery, MemoryScope

SECRET = "Sup3r-s3cret-pw"
ROOT = Path(__file__).resolve().parents[2]


def data(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def with_password(url: str) -> str:
    """The trust-auth test server accepts (and ignores) any password: the URL still carries one."""
    return url.replace("postgres@", f"postgres:{SECRET}@")


@pytest.fixture
def server_team(cli, arcana_home, pg_url, monkeypatch):
    """alice and bob in pool 'team' on the server (URL with a password in $TEAM_PG); keyword tiers."""
    monkeypatch.setenv("TEAM_PG", with_password(pg_url))
    arcana_home.ensure()
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}}))
    for name in ("alice", "bob", "carol"):
        assert cli("agent", "create", name).exit_code == 0
    created = data(cli("pool", "create", "team", "--url-env", "TEAM_PG", "--json"))
    assert created["backend"] == "postgresql" and created["reachable"] is True and created["schema_version"] == head_version()
    for name in ("alice", "bob"):
        assert cli("agent", "join", name, "team").exit_code == 0
    return cli


def global_on_server(cli, arcana_home, pg_url, monkeypatch, *agents, vectors=True):
    """A home whose global tier is the server (its URL, with a password, in an environment variable), with ``agents``."""
    monkeypatch.setenv("GLOBAL_PG", with_password(pg_url))
    arcana_home.ensure()
    config = {"memory": {"global_url_env": "GLOBAL_PG"}} | ({} if vectors else {"embedding": {"providers": []}})
    arcana_home.config_path.write_text(json.dumps(config))
    for name in agents:
        assert cli("agent", "create", name).exit_code == 0


def test_a_server_pool_is_shared_by_its_members_and_shown_masked(server_team, arcana_home, pg_url):
    written = data(server_team("remember", "the team kettle is blue", "--agent", "alice", "--pool", "team", "--json"))
    assert written["accepted"] == ["pool:team"] and written["failed"] == {}
    data(server_team("remember", "alice keeps her own kettle", "--agent", "alice", "--json"))
    bob = data(server_team("recall", "kettle", "--agent", "bob", "--json"))
    assert [(r["content"], r["tiers"]) for r in bob["results"]] == [("the team kettle is blue", ["pool:team"])]
    carol = data(server_team("recall", "kettle", "--agent", "carol", "--json"))
    assert carol["results"] == []  # positive control above: bob (a member) sees it
    [listed] = data(server_team("pool", "list", "--json"))
    assert (listed["backend"], listed["entries"], listed["members"]) == ("postgresql", 1, ["alice", "bob"])
    assert listed["database"] == with_password(pg_url).replace(SECRET, "***")
    assert not arcana_home.pool_db("team").exists()  # no local file for a server pool
    settings = load_config(arcana_home.config_path).pools["team"]
    assert (settings.url_env, settings.url, len(settings.members)) == ("TEAM_PG", None, 2)  # join kept the URL
    # Removing a server pool only unregisters it here: the team's database stays.
    assert data(server_team("pool", "remove", "team", "--yes", "--json"))["moved_to"] is None
    assert "team" not in load_config(arcana_home.config_path).pools
    assert data(server_team("pool", "create", "team", "--url-env", "TEAM_PG", "--json"))["entries"] == 1


def test_the_password_never_reaches_disk_or_output(server_team, arcana_home, pg_url, monkeypatch):
    outputs = []
    outputs.append(server_team("remember", "a pooled fact", "--agent", "alice", "--pool", "team", "--json"))
    for args in (("pool", "list"), ("pool", "list", "--json"), ("pool", "show", "team"), ("pool", "show", "team", "--json"),
                 ("recall", "fact", "--agent", "alice", "--json"), ("doctor", "--json")):
        outputs.append(server_team(*args))
    # A password on the command line is refused, and not echoed.
    refused = server_team("pool", "create", "other", "--url", with_password(pg_url))
    assert refused.exit_code == 2 and "url_env" in refused.stderr  # a bad argument: usage
    outputs.append(refused)
    # An unreachable server: reported with the password masked.
    monkeypatch.setenv("TEAM_PG", f"postgresql://postgres:{SECRET}@127.0.0.1:9/nowhere")
    down = server_team("pool", "show", "team", "--json")
    assert data(down)["reachable"] is False and "***" in data(down)["error"]
    outputs.append(down)
    outputs.append(server_team("recall", "fact", "--agent", "alice", "--json"))
    for result in outputs:
        assert SECRET not in result.stdout and SECRET not in result.stderr, result.output
    for path in arcana_home.root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


async def test_a_server_stopped_mid_session_degrades_only_its_tier_and_comes_back(
    pg_server, pg_url, arcana_home, monkeypatch
):
    """Stop the real server under a live federation: private reads and writes carry on,
    the pool tier reports degraded (event + audit line); after restart the breaker's
    probe lets it back in."""
    arcana_home.ensure()
    clock = [0.0]
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}, "pools": {"team": {"url": pg_url}}}))
    card = AgentRegistry(arcana_home).create("alice")
    config = load_config(arcana_home.config_path)
    config.pools["team"].members.append(card.id)
    events = []
    audit = audit_sink(AuditLog(arcana_home.audit_log))  # the CLI's sink, plus a list to inspect
    federation = await federation_for_agent(
        card, home=arcana_home, config=config, on_degraded=lambda e: (events.append(e), audit(e))
    )
    federation.router.pools["team"][0].breaker.clock = lambda: clock[0]
    try:
        shared = MemoryEntry(agent_id=card.id, content="pooled kettle", scope=MemoryScope.SHARED, pool_name="team")
        await federation.write(shared)
        await federation.write(MemoryEntry(agent_id=card.id, content="private kettle"))
        before = await federation.search(MemoryQuery(text="kettle"))
        assert {e.content for e in before} == {"pooled kettle", "private kettle"}

        pg_server.stop()
        try:
            await federation.write(MemoryEntry(agent_id=card.id, content="private kettle two"))  # private path unharmed
            for _ in range(3):
                during = await federation.search(MemoryQuery(text="kettle"))
                assert {e.content for e in during} == {"private kettle", "private kettle two"}
            assert events and {e.tier for e in events} == {"pool:team"}
            assert federation.router.pools["team"][0].breaker.state.value == "open"
            assert "pool:team" in arcana_home.audit_log.read_text()
        finally:
            pg_server.start()
        clock[0] += 3600  # the breaker's reset time passes: one probe goes through
        after = await federation.search(MemoryQuery(text="kettle"))
        assert {e.content for e in after} == {"pooled kettle", "private kettle", "private kettle two"}
        assert federation.router.pools["team"][0].breaker.state.value == "closed"
    finally:
        await federation.aclose()


async def test_a_command_that_does_not_touch_the_server_does_not_connect(arcana_home):
    """A server pool pointing at a closed port costs nothing until it is read."""
    arcana_home.ensure()
    arcana_home.config_path.write_text(json.dumps({
        "embedding": {"providers": []},
        "pools": {"team": {"url": "postgresql://postgres@127.0.0.1:9/none"}},
        "memory": {"pools": ["team"]},
    }))
    card = AgentRegistry(arcana_home).create("alice")
    federation = await federation_for_agent(card, home=arcana_home)
    try:
        [tier] = federation.router.pools["team"]
        assert tier.backend._pool is None  # built, not connected
        await federation.write(MemoryEntry(agent_id=card.id, content="only private"))
        assert tier.backend._pool is None
    finally:
        await federation.aclose()


_WRITER = """
import asyncio, sys, time, json
from memory.agents import AgentRegistry
from memory.audit import AuditLog
from memory.federation.events import audit_sink
from memory.runtime.assembly import federation_for_agent
from memory.home import Home
from memory.types import MemoryEntry, MemoryScope

async def main(home, agent, tag, n):
    home = Home(__import__("pathlib").Path(home))
    card = AgentRegistry(home).resolve(agent)
    federation = await federation_for_agent(card, home=home)
    latencies = []
    try:
        for i in range(n):
            t = time.perf_counter()
            await federation.write(MemoryEntry(agent_id=card.id, content=f"note {tag} {i}", scope=MemoryScope.SHARED,
                                               pool_name="team", id=f"{tag}-{i}"))
            latencies.append(time.perf_counter() - t)
    finally:
        await federation.aclose()
    print(json.dumps(latencies))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


def test_two_homes_one_pool_eight_writers_lose_nothing(cli, tmp_path, pg_url, monkeypatch):
    """Two homes (two machines) join one server pool; 8 writer processes at once; every write lands."""
    monkeypatch.setenv("TEAM_PG", with_password(pg_url))
    homes = []
    for h in ("home-a", "home-b"):
        root = tmp_path / h
        monkeypatch.setenv("ARCANA_HOME", str(root))
        Home(root).ensure()
        Home(root).config_path.write_text(json.dumps({"embedding": {"providers": []}}))
        assert cli("agent", "create", f"agent-{h}").exit_code == 0
        assert cli("pool", "create", "team", "--url-env", "TEAM_PG").exit_code == 0  # the second one joins
        assert cli("agent", "join", f"agent-{h}", "team").exit_code == 0
        homes.append((root, f"agent-{h}"))
    per_writer = 25
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(root), agent, f"w{i}", str(per_writer)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for i, (root, agent) in enumerate(homes * 4)
    ]
    latencies = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        latencies += json.loads(out)
    for root, agent in homes:  # both homes read the same pool, everything in it
        monkeypatch.setenv("ARCANA_HOME", str(root))
        shown = data(cli("pool", "show", "team", "--json"))
        assert shown["entries"] == 8 * per_writer
        found = data(cli("recall", "note", "--agent", agent, "--pool", "team", "--limit", "1000", "--json"))
        assert len(found["results"]) == 8 * per_writer
    latencies.sort()
    print(f"8 writers x {per_writer}: p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
          f"p95 {latencies[int(len(latencies) * 0.95)] * 1000:.1f} ms")


def test_operator_commands_work_on_a_server_pool(server_team, pg_url):
    """doctor, migrate status/up, memory list/set/history --pool and prune --pool on the server."""
    low = data(server_team("remember", "low value team note", "--agent", "alice", "--pool", "team",
                           "--importance", "0.1", "--json"))
    data(server_team("remember", "high value team note", "--agent", "alice", "--pool", "team",
                     "--importance", "0.8", "--json"))
    listed = data(server_team("memory", "list", "--pool", "team", "--json"))
    assert {r["content"] for r in listed} == {"low value team note", "high value team note"}
    assert server_team("memory", "set", low["id"][:8], "--pool", "team", "--visibility", "hidden").exit_code == 0
    assert [r["content"] for r in data(server_team("recall", "team note", "--agent", "bob", "--json"))["results"]] == [
        "high value team note"
    ]
    history = data(server_team("memory", "history", low["id"], "--pool", "team", "--json"))
    assert [h["op"] for h in history] == ["insert", "visibility"]
    chain = data(server_team("memory", "history", low["id"], "--pool", "team", "--versions", "--json"))
    # as `show` sees it, marked as the text marks it: recall no longer answers with it
    assert [(v["id"], v["visibility"], v["state"], v["current"]) for v in chain] == [(low["id"], "hidden", "hidden", False)]
    pruned = data(server_team("prune", "--pool", "team", "--min-importance", "0.5", "--json"))
    assert [(t["tier"], t["archived"]) for t in pruned["tiers"]] == [("pool:team", 1)]
    status = data(server_team("migrate", "status", "--json"))
    [server] = [r for r in status if r["database"].startswith("pool:team")]
    assert (server["version"], server["head"], server["state"]) == (head_version(), head_version(), "current")
    assert "***" in server["database"]
    up = data(server_team("migrate", "up", "--json"))
    assert [r["state"] for r in up if r["database"].startswith("pool:team")] == ["current"]
    doctor = server_team("doctor", "--json")
    checks = json.loads(doctor.stdout)["checks"]
    [tier] = [c for c in checks if c["name"].startswith("tier ") and "pool:team" in c["name"] + c["detail"]]
    assert tier["ok"] and "postgresql" in tier["detail"] and f"schema v{head_version()}" in tier["detail"], tier
    [server] = [c for c in checks if c["name"].startswith("db pool:team ")]  # its schema, checked on the server
    assert server["ok"] and f"schema v{head_version()}/{head_version()}" in server["detail"], server


def test_a_fresh_server_database_is_pending_until_migrate_up(cli, arcana_home, pg_url, monkeypatch):
    """Status reads a server's version without upgrading it; up upgrades it."""
    arcana_home.ensure()
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}, "memory": {"global_url": pg_url}}))
    [row] = [r for r in data(cli("migrate", "status", "--json")) if r["database"].startswith("global")]
    assert (row["version"], row["state"]) == (0, "pending")
    [row] = [r for r in data(cli("migrate", "status", "--json")) if r["database"].startswith("global")]
    assert row["version"] == 0  # status changed nothing
    [done] = [r for r in data(cli("migrate", "up", "--json")) if r["database"].startswith("global")]
    assert (done["from"], done["to"], done["state"]) == (0, head_version(), "migrated")


ON_THE_7TH = datetime(2024, 6, 7, 9, tzinfo=UTC)
DATED_ROWS = [
    MemoryEntry(id="room", agent_id="a1", content="room 7 is booked", created_at=datetime(2024, 5, 4, 9, tzinfo=UTC)),
    MemoryEntry(id="lunch", agent_id="a1", content="lunch with the new intern", created_at=ON_THE_7TH),
]
DATED_QUESTIONS = {"room 7": ["room"], "7": ["room"], "June 7": ["lunch", "room"], "June": ["lunch"]}


async def _a_pool_under_v8_whose_v9_failed_half_way(url: str) -> None:
    """A pool written under schema v8 (date words in one vector with the content), then a v9 that
    failed after its last statement: the transaction leaves v8 and every row as they were."""
    import asyncpg

    from memory.postgres.migrations import MIGRATIONS, Migration, current_version, migrate

    conn = await asyncpg.connect(url)
    try:
        assert await migrate(conn, "pool", MIGRATIONS[:8]) == 8
        for e in DATED_ROWS:
            await conn.execute(
                "INSERT INTO memories (id, agent_id, type, content, created_at, updated_at) VALUES ($1, $2, 'semantic', $3, $4, $4)",
                e.id, e.agent_id, e.content, e.created_at.timestamp(),
            )
        v9 = MIGRATIONS[8]
        with pytest.raises(asyncpg.DivisionByZeroError):
            await migrate(conn, "pool", (*MIGRATIONS[:8], Migration(v9.version, v9.name, (*v9.statements, "SELECT 1/0"))))
        assert await current_version(conn) == 8 and await conn.fetchval("SELECT count(*) FROM memories") == 2
    finally:
        await conn.close()


async def _answers(store) -> dict[str, list[str]]:
    try:
        return {q: [e.id for e in await store.search(MemoryQuery(text=q))] for q in DATED_QUESTIONS}
    finally:
        await store.aclose()


def test_migrate_up_brings_an_old_pool_forward_to_answer_as_sqlite_does(cli, arcana_home, pg_url, tmp_path):
    """v9 labels each row's date words apart, so "room 7" stops finding every row written on a 7th
    on a server pool as on SQLite. `migrate up` brings a pool made under v8 (and left there by a v9
    that failed half-way) forward; its rows then answer as a SQLite store's do; a second run changes nothing."""
    from memory.adapters.sqlite import SQLiteAdapter

    asyncio.run(_a_pool_under_v8_whose_v9_failed_half_way(pg_url))
    arcana_home.ensure()
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}, "pools": {"team": {"url": pg_url}}}))
    [row] = [r for r in data(cli("migrate", "status", "--json")) if r["database"].startswith("pool:team")]
    assert (row["version"], row["state"]) == (8, "pending")
    [done] = [r for r in data(cli("migrate", "up", "--json")) if r["database"].startswith("pool:team")]
    assert (done["from"], done["to"], done["state"]) == (8, head_version(), "migrated")
    [again] = [r for r in data(cli("migrate", "up", "--json")) if r["database"].startswith("pool:team")]
    assert again["state"] == "current"
    sqlite = SQLiteAdapter(tmp_path / "same.db", actor="test")
    asyncio.run(sqlite.write_many(DATED_ROWS))
    assert asyncio.run(_answers(sqlite)) == DATED_QUESTIONS
    assert asyncio.run(_answers(PostgresAdapter(pg_url, actor="test"))) == DATED_QUESTIONS


def test_an_operator_edit_reaches_the_promoted_copy_on_a_server_global_tier(cli, arcana_home, pg_url, monkeypatch):
    global_on_server(cli, arcana_home, pg_url, monkeypatch, "ada", "bob")
    secret = data(cli("remember", "fact GLOBALHERON nests by the lake", "--agent", "ada", "--importance", "0.95", "--json"))
    data(cli("remember", "fact GLOBALHERON control stays shared", "--agent", "ada", "--importance", "0.95", "--json"))
    assert "global" in secret["accepted"]
    seen = lambda: {r["content"] for r in data(cli("recall", "GLOBALHERON", "--agent", "bob", "--json"))["results"]}
    assert seen() == {"fact GLOBALHERON nests by the lake", "fact GLOBALHERON control stays shared"}
    edited = cli("memory", "set", secret["id"], "--agent", "ada", "--visibility", "hidden", "--json")
    assert edited.exit_code == 0, edited.output
    assert seen() == {"fact GLOBALHERON control stays shared"}  # the copy is hidden; the control still answers


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_promotion_the_global_tier_refuses_is_not_reported_as_done(cli, arcana_home, pg_url, monkeypatch, tmp_path, engine):
    """bob holds ada's memory id (an import of her export keeps ids). Raising its importance reported
    'promoted to the global tier' while the global tier had refused the write: the copy there is ada's."""
    if engine == "postgres":
        global_on_server(cli, arcana_home, pg_url, monkeypatch, "ada", "bob", vectors=False)
    else:
        arcana_home.ensure()
        arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}}))
    ada = data(cli("remember", "ada's GLOBALWREN fact", "--agent", "ada", "--importance", "0.95", "--json"))
    own = data(cli("remember", "bob's own GLOBALWREN fact", "--agent", "bob", "--importance", "0.5", "--json"))
    dump = tmp_path / "ada.jsonl"
    data(cli("export", "--agent", "ada", "-o", str(dump), "--json"))
    data(cli("import", str(dump), "--agent", "bob", "--json"))
    data(cli("memory", "set", ada["id"], "--agent", "bob", "--importance", "0.5", "--json"))
    raised = cli("memory", "set", ada["id"], "--agent", "bob", "--importance", "0.97", "--json")
    assert data(raised)["copies"] == [{"tier": "global", "op": "refused", "changed": False}]
    assert "promoted to" not in raised.stderr and "not promoted: the global tier holds that id" in raised.stderr
    control = cli("memory", "set", own["id"], "--agent", "bob", "--importance", "0.97", "--json")
    assert data(control)["copies"] == [{"tier": "global", "op": "promote", "changed": True}]  # the positive control
    copy = data(cli("memory", "show", ada["id"], "--global", "--json"))
    assert (copy["agent_id"], copy["importance"]) == (ada["agent_id"], 0.95)  # ada's copy, untouched


def _server_pin(url: str) -> tuple:
    async def go():
        store = PostgresAdapter(url, actor="test")
        try:
            meta = await store.meta()
            vectors = await store.embedded_count()
            sql = "SELECT vector_dims(embedding) FROM memory_vectors LIMIT 1"
            dims = await store._call(lambda c: c.fetchval(sql)) if vectors else None
            return (meta and meta.model, meta and meta.dimension, vectors, dims)
        finally:
            await store.aclose()

    return asyncio.run(go())


def test_reindex_backfills_and_re_embeds_a_server_pool(server_team, pg_url, embed_server):
    """Written without an embedder, backfilled by `reindex --pool`, re-embedded and re-pinned by `--re-embed`."""
    for text in ("the team kettle is blue", "standup is at ten"):
        data(server_team("remember", text, "--agent", "alice", "--pool", "team", "--json"))
    assert _server_pin(pg_url) == (None, None, 0, None)  # no embedder yet: keyword only
    [keyword_only] = data(server_team("reindex", "--pool", "team", "--json"))["tiers"]  # keyword-only by config
    assert (keyword_only["keyword_rows"], keyword_only["vectors"]) == (2, None)
    assert server_team("config", "set", "embedding.providers", '["fastembed"]').exit_code == 0
    [tier] = data(server_team("reindex", "--pool", "team", "--json"))["tiers"]
    assert (tier["tier"], tier["keyword_rows"], tier["vectors"]["total"], tier["vectors"]["embedded"]) == ("pool:team", 2, 2, 2)
    assert _server_pin(pg_url) == ("sentence-transformers/all-MiniLM-L6-v2", 384, 2, 384)
    found = data(server_team("recall", "what colour is the kettle", "--agent", "bob", "--mode", "semantic", "--json"))
    assert found["results"][0]["content"] == "the team kettle is blue"
    everything = data(server_team("reindex", "--all", "--json"))
    assert {t["tier"]: t["vectors"]["embedded"] for t in everything["tiers"]}["pool:team"] == 0  # nothing stale
    assert {a["agent"] for a in everything["agents"]} == {"alice", "bob", "carol"}

    server = embed_server({"fake-embed": hashed_vectors(16)})
    assert server_team("config", "set", "embedding.ollama_url", server.url).exit_code == 0
    [tier] = data(server_team("reindex", "--pool", "team", "--re-embed", "--model", "ollama:fake-embed", "--json"))["tiers"]
    assert tier["repinned"] is True and tier["vectors"]["embedded"] == 2
    assert _server_pin(pg_url) == ("fake-embed", 16, 2, 16)  # the old 384-dim vectors are gone with their table
    refused = server_team("reindex", "--pool", "team", "--embeddings")  # config's MiniLM is not the pinned model
    assert refused.exit_code == 5 and "compatible with the pinned model fake-embed" in refused.stderr
    found = data(server_team("recall", "kettle", "--agent", "bob", "--json"))["results"]
    assert [r["content"] for r in found] == ["the team kettle is blue"]  # keyword still answers


def test_export_and_import_round_trip_through_server_pools(server_team, pg_url, pg_server, offline_embedder, tmp_path):
    """A server pool exported (history, vectors) and imported into a local pool and into other server pools:
    every field, visibility and vector kept; a pool pinned to another model keeps its pin and takes no vector."""
    from factories import varied

    async def seed():
        store = PostgresAdapter(pg_url, actor="test", gateway=EmbeddingGateway([offline_embedder]))
        try:
            team = [e.model_copy(update={"scope": MemoryScope.SHARED, "pool_name": "team"}) for e in varied("ada")]
            await store.write_many(team)
            return team
        finally:
            await store.aclose()

    team = asyncio.run(seed())
    dump = tmp_path / "team.jsonl"
    summary = data(server_team("export", "--pool", "team", "-o", str(dump), "--with-vectors", "--with-history", "--json"))
    assert (summary["memories"], summary["vectors"]) == (len(team), len(team))
    source = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()[1:]]
    assert {r["memory"]["id"] for r in source} == {e.id for e in team}
    assert all(r["history"][0]["op"] == "insert" for r in source)
    assert json.loads(dump.read_text(encoding="utf-8").splitlines()[0])["model"]["dimension"] == 384

    other = pg_server.fresh_database("arcana_other")
    assert server_team("pool", "create", "local").exit_code == 0
    assert server_team("pool", "create", "other", "--url", other).exit_code == 0
    for pool in ("local", "other"):
        first = data(server_team("import", str(dump), "--pool", pool, "--no-embed", "--json"))
        assert (first["ops"], first["vectors_kept"], first["bad"]) == ({"insert": len(team)}, len(team), [])
        again = data(server_team("import", str(dump), "--pool", pool, "--no-embed", "--json"))
        assert again["ops"] == {"noop": len(team)}
        copy = tmp_path / f"{pool}.jsonl"
        data(server_team("export", "--pool", pool, "-o", str(copy), "--with-vectors", "--with-history", "--json"))
        copied = {r["memory"]["id"]: r for r in (json.loads(x) for x in copy.read_text(encoding="utf-8").splitlines()[1:])}
        for record in source:
            got = copied[record["memory"]["id"]]
            assert got["memory"] == {**record["memory"], "pool_name": pool}, pool
            assert max(abs(a - b) for a, b in zip(got["vector"], record["vector"], strict=True)) < 1e-6
            assert [h["op"] for h in got["history"]] == ["import"]  # the ledger records the import itself
    hidden = [r["memory"]["content"] for r in source if r["memory"]["visibility"] == "hidden"]
    recalled = data(server_team("recall", "hidden launch code", "--agent", "alice", "--json"))["results"]
    assert hidden and all(r["content"] not in hidden for r in recalled)

    pinned = pg_server.fresh_database("arcana_pinned")

    async def pin_elsewhere():
        store = PostgresAdapter(pinned, actor="test")
        try:
            await store.ensure_pin(EmbeddingMeta("fake-embed", "fake", 16, "memory_vectors", 0))
        finally:
            await store.aclose()

    asyncio.run(pin_elsewhere())
    assert server_team("pool", "create", "pinned", "--url", pinned).exit_code == 0
    into = data(server_team("import", str(dump), "--pool", "pinned", "--no-embed", "--json"))
    assert (into["ops"], into["vectors_kept"]) == ({"insert": len(team)}, 0)
    assert _server_pin(pinned) == ("fake-embed", 16, 0, None)


def test_remember_from_a_file_into_a_server_pool_takes_the_bulk_path(server_team, pg_url, tmp_path):
    """300 lines (over the COPY threshold) into the server pool: all there, ledgered, a re-run writes nothing."""
    source = tmp_path / "team.jsonl"
    lines = [{"content": f"team fact number {i} about the WHARFCRANE", "id": f"fact-{i}"} for i in range(300)]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    first = data(server_team("remember", "--from", str(source), "--agent", "alice", "--pool", "team", "--json"))
    assert (first["written"], first["accepted"], first["decisions"]["add"]) == (300, {"pool:team": 300}, 300)
    again = data(server_team("remember", "--from", str(source), "--agent", "alice", "--pool", "team", "--json"))
    assert (again["written"], again["unchanged"], again["decisions"]["add"]) == (0, 300, 0)
    assert [h["op"] for h in data(server_team("memory", "history", "fact-7", "--pool", "team", "--json"))] == ["insert"]
    found = data(server_team("recall", "WHARFCRANE", "--agent", "bob", "--limit", "500", "--json"))["results"]
    assert len(found) == 300  # bob, a member, sees them all
    assert data(server_team("recall", "WHARFCRANE", "--agent", "carol", "--json"))["results"] == []  # not a member


def test_an_import_line_with_a_count_past_32_bits_goes_into_a_server_pool(server_team, tmp_path):
    """A count SQLite holds ended a server pool's import with exit 5 ("check that the server is up"), the
    good lines of its batch unwritten; one no store can hold is still a named bad line there."""
    assert server_team("remember", "the team kettle is blue", "--agent", "alice", "--pool", "team").exit_code == 0
    dump = tmp_path / "team.jsonl"
    data(server_team("export", "--pool", "team", "-o", str(dump), "--json"))
    head, row = dump.read_text(encoding="utf-8").splitlines()
    memory = json.loads(row)["memory"]
    big = {"memory": {**memory, "id": "big-count", "content": "the kettle was used very often", "access_count": 2**40}}
    bad = {"memory": {**memory, "id": "bad-count", "content": "a count no store holds", "access_count": 10**23}}
    dump.write_text("\n".join([head, row, json.dumps(big), json.dumps(bad)]) + "\n", encoding="utf-8")
    done = server_team("import", str(dump), "--pool", "team", "--no-embed", "--json")
    assert done.exit_code == 2 and "line 4: invalid access_count" in done.stderr, done.output  # the control
    assert "Traceback" not in done.stderr
    listed = {m["id"]: m["access_count"] for m in data(server_team("memory", "list", "--pool", "team", "--json"))}
    assert listed == {memory["id"]: 0, "big-count": 2**40}


def test_deleting_an_agent_withdraws_its_copies_from_a_server_global_tier(cli, arcana_home, pg_url, monkeypatch):
    global_on_server(cli, arcana_home, pg_url, monkeypatch, "ada", "bob", "carol", vectors=False)
    for agent, word in (("ada", "leaves"), ("ada", "alsoleaves"), ("bob", "stays")):
        written = data(cli("remember", f"fact PGHERON {word}", "--agent", agent, "--importance", "0.95", "--json"))
        assert "global" in written["accepted"]
    seen = lambda: {r["content"] for r in data(cli("recall", "PGHERON", "--agent", "carol", "--json"))["results"]}
    assert seen() == {"fact PGHERON leaves", "fact PGHERON alsoleaves", "fact PGHERON stays"}
    removed = data(cli("agent", "delete", "ada", "--yes", "--json"))
    assert removed["copies"] == {"tier": "global", "op": "withdraw", "changed": True, "count": 2}
    assert seen() == {"fact PGHERON stays"}  # bob's copy is the positive control


def test_pruning_an_agent_reaches_its_copies_on_a_server_global_tier(cli, arcana_home, pg_url, monkeypatch):
    global_on_server(cli, arcana_home, pg_url, monkeypatch, "ada", "carol", vectors=False)
    for word, importance in (("pruned", "0.91"), ("kept", "0.99")):
        data(cli("remember", f"fact PGPRUNE {word}", "--agent", "ada", "--importance", importance, "--json"))
    report = data(cli("prune", "--agent", "ada", "--max-entries", "1", "--mode", "purge", "--yes", "--json"))
    assert report["agents"][0]["copies"] == {"tier": "global", "op": "purge", "changed": True, "count": 1}
    seen = {r["content"] for r in data(cli("recall", "PGPRUNE", "--agent", "carol", "--json"))["results"]}
    assert seen == {"fact PGPRUNE kept"}


def test_a_superseded_fact_stops_answering_from_a_server_global_tier(cli, arcana_home, pg_url, monkeypatch):
    """Reconciliation ends the old version's promoted copy on PostgreSQL too; the new one answers there."""
    global_on_server(cli, arcana_home, pg_url, monkeypatch, "ada", "bob")
    old = data(cli("remember", "I live in Berlin (PGHOME).", "--agent", "ada", "--importance", "0.95", "--json"))
    data(cli("remember", "PGHOME control: the kettle is blue.", "--agent", "ada", "--importance", "0.95", "--json"))
    seen = lambda: {r["content"] for r in data(cli("recall", "PGHOME", "--agent", "bob", "--json"))["results"]}
    assert seen() == {"I live in Berlin (PGHOME).", "PGHOME control: the kettle is blue."}
    new = data(cli("remember", "I moved to Lisbon (PGHOME).", "--agent", "ada", "--importance", "0.95", "--json"))
    assert new["decision"] == "update" and new["supersedes"] == [old["id"]] and new["warnings"] == []
    assert seen() == {"I moved to Lisbon (PGHOME).", "PGHOME control: the kettle is blue."}
    copy = data(cli("memory", "show", old["id"], "--global", "--json"))  # kept, ended, ledgered
    assert copy["superseded_by"] == new["id"] and copy["valid_to"] is not None
    ops = [r["op"] for r in data(cli("memory", "history", old["id"], "--global", "--json"))]
    assert ops == ["insert", "supersede"]
    chain = data(cli("memory", "history", old["id"][:8], "--global", "--versions", "--json"))  # the chain, on the server
    assert [(v["id"], v["current"]) for v in chain] == [(old["id"], False), (new["id"], True)]
    # Undo reaches the server copy too: the old fact answers again there.
    assert cli("memory", "set", old["id"], "--agent", "ada", "--current").exit_code == 0
    assert "I live in Berlin (PGHOME)." in seen()


def test_a_restatement_reinforces_and_promotes_on_a_server_global_tier(cli, arcana_home, pg_url, monkeypatch):
    """A noop reaches the promoted copy on PostgreSQL (reinforced, ledgered there) and promotes what it lifts."""
    global_on_server(cli, arcana_home, pg_url, monkeypatch, "ada", "bob")
    texts = ("The boiler code is 4471 (PGREIN).", "The shed key is under the blue pot (PGREIN).",
             "The spare bulbs are in the attic (PGREIN).")
    firsts = [data(cli("remember", t, "--agent", "ada", "--importance", i, "--json")) for t, i in zip(texts, ("0.92", "0.87", "0.5"))]
    assert [f["accepted"] for f in firsts] == [["private", "global"], ["private"], ["private"]]
    again = [data(cli("remember", t, "--agent", "ada", "--json")) for t in texts]
    assert [(a["decision"], a["id"]) for a in again] == [("noop", f["id"]) for f in firsts]
    assert [a["accepted"] for a in again] == [["private", "global"], ["private", "global"], ["private"]]
    copies = [cli("memory", "show", f["id"], "--global", "--json") for f in firsts]
    assert [json.loads(c.stdout)["importance"] for c in copies[:2]] == pytest.approx([0.97, 0.92])
    assert copies[2].exit_code != 0  # control: 0.55 stays private
    assert [h["op"] for h in data(cli("memory", "history", firsts[0]["id"], "--global", "--json"))] == ["insert", "reinforce"]
    seen = {r["content"] for r in data(cli("recall", "PGREIN", "--agent", "bob", "--json"))["results"]}
    assert seen == set(texts[:2])


def test_an_older_export_does_not_undo_an_operators_later_text_on_a_server_pool(server_team, tmp_path):
    """As on SQLite (tests/cli/test_export_import.py): an import line older than `memory set --content`
    / `--importance` keeps the server pool's newer values; the file's edit of another memory applies."""
    code = data(server_team("remember", "The gate code is 7788", "--agent", "alice", "--pool", "team", "--json"))["id"]
    standup = data(server_team("remember", "Standup is at nine", "--agent", "alice", "--pool", "team", "--json"))["id"]
    old = tmp_path / "team.jsonl"
    data(server_team("export", "--pool", "team", "-o", str(old), "--json"))
    assert server_team("memory", "set", code, "--pool", "team", "--content", "The gate code was changed").exit_code == 0
    assert server_team("memory", "set", code, "--pool", "team", "--importance", "0.9").exit_code == 0
    old.write_text(old.read_text().replace("Standup is at nine", "Standup is at ten"))
    assert data(server_team("import", str(old), "--pool", "team", "--no-embed", "--json"))["kept_newer"] == 1
    shown = {m["id"]: m for m in data(server_team("memory", "list", "--pool", "team", "--json"))}
    assert (shown[code]["content"], shown[code]["importance"]) == ("The gate code was changed", 0.9)
    assert shown[standup]["content"] == "Standup is at ten"


def test_consolidate_all_leaves_a_server_pool_out_and_succeeds(server_team, monkeypatch, tmp_path):
    """A cron `consolidate --all` on a home with a server pool exited 5 every run; now it consolidates the
    SQLite stores, names the server pool as left out, and exits 0, even with the pool's url_env unset.
    Naming the pool itself still fails, saying what bounds it instead."""
    said = tmp_path / "tea.jsonl"
    said.write_text('{"content": "I like tea", "id": "tea-a"}\n{"content": "I like tea with milk", "id": "tea-b"}\n')
    assert server_team("remember", "--from", str(said), "--agent", "alice", "--no-reconcile").exit_code == 0
    assert server_team("remember", "the team kettle is blue", "--agent", "alice", "--pool", "team").exit_code == 0
    ran = server_team("consolidate", "--all", "--json")
    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.stdout)
    assert report["skipped"] == [{"tier": "pool:team", "reason": "on a PostgreSQL server, which consolidate does not reach yet"}]
    assert [t["tier"] for t in report["tiers"]] == []
    assert {a["agent"]: a["scanned"] for a in report["agents"]}["alice"] >= 2  # positive control: her store was done
    assert "pool:team left out" in ran.stderr
    named = server_team("consolidate", "--pool", "team")
    assert named.exit_code == 5 and "arcana prune --pool team" in named.stderr
    monkeypatch.delenv("TEAM_PG")  # cron's environment often lacks it
    assert server_team("consolidate", "--all", "--quiet").exit_code == 0


FACTS = (  # (what ada says, the decision a private store takes)
    ("I live in Berlin.", "add"), ("I moved to Lisbon last month.", "update"), ("I have a cat named Miso.", "add"),
    ("I no longer have a cat.", "delete"), ("I moved to Lisbon last month.", "noop"), ("My sister lives in Porto.", "add"),
)


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_each_decision_reaches_the_promoted_copies_alike_on_either_global_engine(cli, arcana_home, pg_url, monkeypatch, engine):
    """update, delete and noop of promoted facts: the same decisions, and the same answers for bob from
    the global tier, whether it is a file or a server (the delete was covered on SQLite only)."""
    if engine == "postgres":
        global_on_server(cli, arcana_home, pg_url, monkeypatch, "ada", "bob", vectors=False)
    else:
        arcana_home.ensure()
        arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}}))
        for name in ("ada", "bob"):
            assert cli("agent", "create", name).exit_code == 0
    said = [data(cli("remember", text, "--agent", "ada", "--importance", "0.95", "--json")) for text, _ in FACTS]
    assert [s["decision"] for s in said] == [d for _, d in FACTS]
    assert said[1]["supersedes"] == [said[0]["id"]] and said[3]["supersedes"] == [said[2]["id"]]
    assert said[4]["id"] == said[1]["id"] and said[4]["accepted"] == ["private", "global"]  # the copy reinforced
    bob = {r["content"] for r in data(cli("recall", "live Berlin Lisbon cat Miso sister Porto", "--agent", "bob",
                                          "--mode", "keyword", "--json"))["results"]}
    assert bob == {"I moved to Lisbon last month.", "I no longer have a cat.", "My sister lives in Porto."}
    ops = [h["op"] for h in data(cli("memory", "history", said[2]["id"], "--global", "--json"))]
    assert ops == ["insert", "supersede"]
    ops = [h["op"] for h in data(cli("memory", "history", said[1]["id"], "--global", "--json"))]
    assert ops == ["insert", "version", "reinforce"]


def test_a_pool_decides_alike_on_either_engine(cli, arcana_home, pg_url, monkeypatch):
    """The same statements into a pool file and a server pool get the same decisions (both stored as
    given: man/facts.md, "Scope"), and both pools answer alike."""
    monkeypatch.setenv("TEAM_PG", pg_url)
    arcana_home.ensure()
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}}))
    assert cli("agent", "create", "alice").exit_code == 0
    assert cli("pool", "create", "onfile").exit_code == 0
    data(cli("pool", "create", "onserver", "--url-env", "TEAM_PG", "--json"))
    decided, answers = {}, {}
    for pool in ("onfile", "onserver"):
        assert cli("agent", "join", "alice", pool).exit_code == 0
        said = [data(cli("remember", text, "--agent", "alice", "--pool", pool, "--json")) for text, _ in FACTS]
        assert all(s["accepted"] == [f"pool:{pool}"] for s in said)
        decided[pool] = [(s["decision"], len(s["supersedes"])) for s in said]
        answers[pool] = sorted(r["content"] for r in data(cli(
            "recall", "live Berlin Lisbon cat Miso sister Porto", "--agent", "alice", "--scope", "shared", "--pool", pool,
            "--mode", "keyword", "--limit", "20", "--json"))["results"])
    assert decided["onfile"] == decided["onserver"]
    assert answers["onfile"] == answers["onserver"] and "My sister lives in Porto." in answers["onfile"]


def test_a_purge_on_a_server_pool_takes_the_words_out_of_its_ledger(server_team, pg_url):
    """A purge deleted the pool's row, but the ledger's before and after images kept its text and
    tags (the trigger refused every update), so `SELECT * FROM memory_ledger` read it. They now say
    "[purged]"; the history still says what was done; a kept memory's images, in the same table, keep
    its words; and any other update of the ledger is still refused."""
    import asyncpg

    secret = data(server_team("remember", "zebra-quartz-7731 opens the team vault", "--agent", "alice", "--pool",
                              "team", "--tag", "vaulttagzebra", "--json"))["id"]
    data(server_team("memory", "set", secret, "--pool", "team", "--content",
                     "zebra-quartz-7731 opens the team vault, passphrase vaultzebraquartzpine", "--json"))
    kept = data(server_team("remember", "heron-basalt-4410 opens the boathouse", "--agent", "alice", "--pool", "team",
                            "--json"))["id"]
    data(server_team("memory", "purge", secret, "--pool", "team", "--yes", "--json"))

    async def ledger() -> list:
        conn = await asyncpg.connect(pg_url)
        try:
            rows = await conn.fetch("SELECT memory_id, op, before, after FROM memory_ledger ORDER BY seq")
            with pytest.raises(asyncpg.RaiseError, match="append-only"):
                await conn.execute("UPDATE memory_ledger SET actor = 'x' WHERE memory_id = $1", secret)
            return rows
        finally:
            await conn.close()

    rows = asyncio.run(ledger())
    text = json.dumps([dict(r) for r in rows])
    for word in ("zebra-quartz-7731", "vaultzebraquartzpine", "vaulttagzebra"):
        assert word not in text, word
    assert [r["op"] for r in rows if r["memory_id"] == secret] == ["insert", "update", "purge"]
    assert "heron-basalt-4410" in " ".join(r["after"] or "" for r in rows if r["memory_id"] == kept)  # the control
    history = data(server_team("memory", "history", secret, "--pool", "team", "--json"))
    assert [h["op"] for h in history] == ["insert", "update", "purge"]
    assert [r["content"] for r in data(server_team("memory", "list", "--pool", "team", "--json"))] == [
        "heron-basalt-4410 opens the boathouse"]


def _import_repeating_lines(server_team) -> list[dict]:
    """alice imports a chat into the server pool: her line, an assistant's repeating the locker code, an
    unrelated assistant's line. Neither member recalls the repeat; both the others (the controls).
    The pool's rows, archived ones too."""
    lines = [{"role": "user", "content": "My locker code is 4471 at the pool", "session": "chat"},
             {"role": "assistant", "content": "The user's locker code is 4471 at the gym", "session": "chat"},
             {"role": "assistant", "content": "The bike painted teal is kept in the shed", "session": "chat"}]
    body = "".join(json.dumps(x) + "\n" for x in lines)
    done = data(server_team("remember", "--from", "-", "--pool", "team", "--agent", "alice", "--json", input=body))
    assert done["accepted"] == {"pool:team": 3}, done
    for member in ("alice", "bob"):
        found = [r["content"] for r in data(server_team("recall", "locker code 4471", "--agent", member, "--json"))["results"]]
        assert "The user's locker code is 4471 at the gym" not in found and "My locker code is 4471 at the pool" in found, found
        bike = data(server_team("recall", "bike teal shed", "--agent", member, "--json"))["results"]
        assert "The bike painted teal is kept in the shed" in [r["content"] for r in bike]
    return data(server_team("memory", "list", "--pool", "team", "--all", "--archived", "--json"))


def test_an_assistant_line_into_a_server_pool_repeating_a_forgotten_memory_answers_no_member(server_team):
    """Hidden means hidden on a server pool too: checked against the writing agent's own store.
    Controls: the user's line, an unrelated claim."""
    locker = data(server_team("remember", "My locker code is 4471", "--agent", "alice", "--json"))["id"]
    assert server_team("memory", "forget", locker, "--agent", "alice").exit_code == 0
    rows = _import_repeating_lines(server_team)
    assert [r["archived"] for r in rows if "at the gym" in r["content"]] == [True]


@pytest.mark.parametrize("edit", [("set", "--visibility", "hidden"), ("forget",)], ids=["hidden", "forgotten"])
def test_an_agents_line_into_a_server_pool_repeating_a_memory_withheld_there_answers_no_member(server_team, edit):
    """A hide or forget inside a server pool holds for an agent's line repeating it. Controls: the
    user's line, an unrelated claim."""
    locker = data(server_team("remember", "My locker code is 4471", "--agent", "bob", "--pool", "team", "--json"))["id"]
    assert server_team("memory", edit[0], locker, *edit[1:], "--pool", "team").exit_code == 0
    rows = _import_repeating_lines(server_team)
    stored = next(r for r in rows if "at the gym" in r["content"])
    assert (stored["visibility"], stored["archived"]) == (("hidden", False) if edit[0] == "set" else ("visible", True))
