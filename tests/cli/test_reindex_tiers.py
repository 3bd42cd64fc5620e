"""`arcana reindex` reaches pools and the global tier, so a missing vector anywhere can be backfilled (issue 9, item 4)."""

from __future__ import annotations

import asyncio
import json

from memory.adapters.sqlite import SQLiteAdapter
from memory.types import MemoryEntry, MemoryScope


def _missing(cli) -> dict[str, tuple[int, int]]:
    """(rows, missing) per database, named as ``embeddings status`` names it."""
    status = json.loads(cli("embeddings", "status", "--json").stdout)["databases"]
    return {d["agent"] or d["database"]: (d["rows"], d["missing"]) for d in status}


def _write_vectorless(path, entry: MemoryEntry) -> None:
    """A row with no vector, as a writer without an embedder leaves it."""

    async def go():
        store = SQLiteAdapter(path, actor="test")
        try:
            await store.write(entry)
        finally:
            await store.aclose()

    asyncio.run(go())


def test_reindex_backfills_pools_and_the_global_tier(cli, arcana_home):
    assert cli("config", "set", "embedding.providers", "[]").exit_code == 0  # written now, embedded later
    assert cli("pool", "create", "team").exit_code == 0
    assert cli("agent", "create", "bob").exit_code == 0
    assert cli("agent", "join", "bob", "team").exit_code == 0
    assert cli("remember", "Deploys happen on Fridays.", "-a", "bob").exit_code == 0
    assert cli("remember", "The team uses trunk-based development.", "-a", "bob", "--pool", "team").exit_code == 0
    # The global tier only exists with an embedder; here it holds a row its writer could not embed.
    _write_vectorless(arcana_home.global_db, MemoryEntry(agent_id="bob", content="Everyone works in UTC.", scope=MemoryScope.GLOBAL))
    pool_db, global_db = "pools/team.db", "vector/global.db"
    assert _missing(cli) == {"bob": (1, 1), pool_db: (1, 1), global_db: (1, 1)}

    assert cli("config", "set", "embedding.providers", '["fastembed"]').exit_code == 0
    result = cli("reindex", "--pool", "team", "--embeddings", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["agents"] == [] and [t["tier"] for t in payload["tiers"]] == ["pool:team"]
    assert payload["tiers"][0]["vectors"]["embedded"] == 1
    assert _missing(cli) == {"bob": (1, 1), pool_db: (1, 0), global_db: (1, 1)}  # only what was named

    result = cli("reindex", "--global", "--json")
    assert result.exit_code == 0, result.output
    [tier] = json.loads(result.stdout)["tiers"]
    assert (tier["tier"], tier["vectors"]["embedded"], tier["keyword_rows"]) == ("global", 1, 1)
    assert _missing(cli) == {"bob": (1, 1), pool_db: (1, 0), global_db: (1, 0)}

    assert cli("remember", "The team ships on Tuesdays too.", "-a", "bob", "--pool", "team").exit_code == 0
    _write_vectorless(
        arcana_home.pool_db("team"),
        MemoryEntry(agent_id="bob", content="Standup is at ten.", scope=MemoryScope.SHARED, pool_name="team"),
    )
    result = cli("reindex", "--all", "--json")  # every agent, every pool, the global tier
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert [a["agent"] for a in payload["agents"]] == ["bob"] and payload["agents"][0]["vectors"]["embedded"] == 1
    assert {t["tier"]: t["vectors"]["embedded"] for t in payload["tiers"]} == {"pool:team": 1, "global": 0}
    assert _missing(cli) == {"bob": (1, 0), pool_db: (3, 0), global_db: (1, 0)}


def test_reindex_names_unknown_shared_tiers(cli, arcana_home):
    assert cli("reindex", "--pool", "nope").exit_code == 3
    assert cli("reindex", "--global").exit_code == 3  # no global tier yet
    assert cli("reindex", "--agent", "x", "--all").exit_code == 2
