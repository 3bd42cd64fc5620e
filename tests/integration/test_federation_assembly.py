"""build_federation and federation_for_agent against a real home directory."""

from __future__ import annotations

import json

import pytest
from federation_faults import corrupt_file

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.audit import AuditLog
from memory.config import ArcanaConfig, PoolSettings, VaultConfig, save_config
from memory.embedding.gateway import EmbeddingGateway
from memory.errors import ConfigError
from memory.federation.shared_tiers import PoolConfig
from memory.runtime.assembly import build_federation, federation_for_agent, private_store
from memory.types import MemoryEntry, MemoryQuery, MemoryScope, MemoryType


def names(federation) -> list[str]:
    return [tier.name for tier in federation.router.tiers]


async def test_zero_config_runs_private_only(arcana_home):
    federation = await build_federation("agent-1", home=arcana_home)
    assert names(federation) == ["private"]
    await federation.write(MemoryEntry(agent_id="agent-1", content="zero config works", importance=1.0))
    assert [e.content for e in await federation.search(MemoryQuery(agent_id="agent-1", text="zero"))] == [
        "zero config works"
    ]
    assert arcana_home.agent_db("agent-1").exists() and not arcana_home.global_db.exists()
    await federation.aclose()


async def test_an_embedder_brings_the_global_tier(arcana_home):
    federation = await build_federation("agent-1", home=arcana_home, embedding=EmbeddingGateway([]))
    assert names(federation) == ["private", "global"]
    report = await federation.write(MemoryEntry(agent_id="agent-1", content="promoted", importance=0.95))
    assert report.accepted == ["private", "global"] and arcana_home.global_db.exists()
    await federation.aclose()


async def test_a_corrupt_private_store_is_quarantined_before_first_use(arcana_home):
    corrupt_file(arcana_home.agent_db("agent-1"))
    federation = await build_federation("agent-1", home=arcana_home)
    moved = private_store(federation).quarantined_to
    assert moved is not None and (moved / "memory.db").exists()  # moved aside, not deleted
    assert (await federation.write(MemoryEntry(agent_id="agent-1", content="fresh start"))).accepted == ["private"]
    await federation.aclose()


async def test_a_malformed_connections_file_stops_assembly_with_a_clear_error(arcana_home):
    arcana_home.connections_path.parent.mkdir(parents=True)
    arcana_home.connections_path.write_text('{"private": {"write_timeout_ms": "soon"}}')
    with pytest.raises(ConfigError, match="private.write_timeout_ms"):
        await build_federation("agent-1", home=arcana_home)


async def test_degradations_reach_the_audit_log_by_default(arcana_home, tmp_path):
    broken = SQLiteAdapter(corrupt_file(tmp_path / "broken.db"))
    federation = await build_federation("agent-1", home=arcana_home, pools=[PoolConfig("team", broken)])
    report = await federation.recall(MemoryQuery(agent_id="agent-1", text="anything"))
    assert [d.tier for d in report.degraded] == ["pool:team"]
    logged = [r for r in AuditLog(arcana_home.audit_log).read() if r["event"] == "memory_degraded"]
    assert [(r["tier"], r["reason"], r["op"]) for r in logged] == [("pool:team", "corruption", "read")]
    await federation.aclose()


@pytest.fixture
def team(arcana_home, tmp_path):
    """Two agents; alice in pool 'team' with a vault on the pool and one on herself."""
    registry = AgentRegistry(arcana_home)
    alice, bob = registry.create("alice"), registry.create("bob")
    for name in ("team-notes", "alice-notes"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.md").write_text(f"a note in {name}\n")
    config = ArcanaConfig(
        pools={"team": PoolSettings(members=[alice.id])},
        vaults={
            "team-notes": VaultConfig(path=str(tmp_path / "team-notes"), pool="team"),
            "alice-notes": VaultConfig(path=str(tmp_path / "alice-notes"), agent="alice"),
        },
    )
    save_config(arcana_home.config_path, config)
    return alice, bob, config


async def test_an_agent_federation_has_its_pools_and_attached_vaults_read_only(arcana_home, team):
    alice, bob, config = team
    federation = await federation_for_agent(alice, home=arcana_home, config=config)
    assert names(federation) == ["private", "pool:team", "vault:team-notes", "vault:alice-notes"]
    assert [t.name for t in federation.router.tiers if t.read_only] == ["vault:team-notes", "vault:alice-notes"]
    found = await federation.search(MemoryQuery(agent_id=alice.id, text="note"))
    assert sorted(e.tiers[0] for e in found) == ["vault:alice-notes", "vault:team-notes"]
    await federation.aclose()
    outsider = await federation_for_agent(bob, home=arcana_home, config=config)
    assert names(outsider) == ["private"]  # not a member, no vault attached
    await outsider.aclose()


async def test_global_none_switches_the_global_tier_off_and_enabled_is_for_run(arcana_home, team):
    alice, _, config = team
    with_global = await federation_for_agent(alice, home=arcana_home, config=config, embedding=EmbeddingGateway([]))
    assert "global" in names(with_global)  # control
    await with_global.aclose()
    config.memory.global_ = "none"
    federation = await federation_for_agent(alice, home=arcana_home, config=config, embedding=EmbeddingGateway([]))
    assert "global" not in names(federation) and "private" in names(federation)
    await federation.aclose()
    config.memory.enabled = False  # `arcana run` stops using memory; explicit memory commands keep every tier
    disabled = await federation_for_agent(alice, home=arcana_home, config=config, embedding=EmbeddingGateway([]))
    assert names(disabled) == names(federation)
    await disabled.aclose()


async def test_card_weights_and_decay_reach_the_router(arcana_home, team):
    alice, _, config = team
    alice.memory_weights = {MemoryType.PROCEDURAL: 0.9}
    alice.decay = {"episodic": {"half_life_days": 2}}
    federation = await federation_for_agent(alice, home=arcana_home, config=config)
    assert federation.router.weight(MemoryType.PROCEDURAL) == 0.9
    assert federation.router.decay_profiles[MemoryType.EPISODIC].half_life_days == 2
    await federation.aclose()
    alice.decay = {"episodic": {"half_life_days": -1}}
    with pytest.raises(ConfigError) as refused:
        await federation_for_agent(alice, home=arcana_home, config=config)
    # A bad value comes from editing the card by hand: the error names that file and the command that fixes it.
    said = str(refused.value)
    assert said.startswith(f"{arcana_home.agent_dir(alice.id) / 'agent.json'}: agent 'alice' decay.episodic.half_life_days")
    assert "`arcana agent set alice --decay TYPE.FIELD=VALUE`" in said


async def test_shared_write_through_an_agent_federation_lands_in_the_pool_file(arcana_home, team):
    alice, _, config = team
    federation = await federation_for_agent(alice, home=arcana_home, config=config)
    shared = MemoryEntry(agent_id=alice.id, content="standup at ten", scope=MemoryScope.SHARED, pool_name="team")
    report = await federation.write(shared)
    assert report.accepted == ["pool:team"] and report.refused == ["vault:team-notes"]
    await federation.aclose()
    pool = SQLiteAdapter(arcana_home.pool_db("team"))
    assert (await pool.get(shared.id)).content == "standup at ten"
    await pool.aclose()
    assert json.loads(arcana_home.config_path.read_text())["pools"]["team"]["members"] == [alice.id]


async def test_global_none_switches_the_global_tier_off_even_with_an_embedder(arcana_home, team):
    alice, _, config = team
    with_global = await federation_for_agent(alice, home=arcana_home, config=config, embedding=EmbeddingGateway([]))
    assert "global" in names(with_global)
    await with_global.aclose()
    config.memory.global_ = "none"
    federation = await federation_for_agent(alice, home=arcana_home, config=config, embedding=EmbeddingGateway([]))
    assert "global" not in names(federation) and "pool:team" in names(federation)
    await federation.aclose()


def test_an_absent_memory_block_means_the_defaults_and_a_bad_one_names_the_field():
    from memory.config import parse_config

    memory = parse_config({}).memory
    assert (memory.enabled, memory.private, memory.global_, memory.pools) == (True, "sqlite", "vector", [])
    with pytest.raises(ConfigError, match="memory.global"):
        parse_config({"memory": {"global": "sqlite-vec"}})


async def test_an_indexed_vault_answers_from_its_index_and_is_never_written(arcana_home, team, tmp_path):
    from memory.vaults.indexer import index_vault
    from memory.vaults.registry import Vault

    alice, _, config = team
    vault = Vault("alice-notes", config.vaults["alice-notes"], arcana_home)
    await index_vault(vault, embed=False, config=config)
    assert vault.db_path.exists()
    (tmp_path / "alice-notes" / "later.md").write_text("a later note, not indexed yet\n")
    federation = await federation_for_agent(alice, home=arcana_home, config=config)
    found = await federation.search(MemoryQuery(agent_id=alice.id, text="note", scope=MemoryScope.SHARED))
    contents = [e.content for e in found if e.tiers == ["vault:alice-notes"]]
    assert len(contents) == 1 and "a note in alice-notes" in contents[0]  # from the index...
    assert not any("later" in c for c in contents)  # ...so the unindexed note is not there yet
    await federation.aclose()
