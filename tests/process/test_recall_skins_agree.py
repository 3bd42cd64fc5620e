"""`arcana recall --json` and the MCP `recall` tool answer alike on the same store: the same
memories in the same order with the same scores and tiers, and the same ones left out."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta

import pytest
from mcp_client import call, seed, session
from runner import arcana, keyword_only

from memory.types import Visibility

WHEN = datetime.now(UTC) - timedelta(days=3)


@pytest.mark.parametrize("embedder", [False, True], ids=["keyword-only", "offline-model"])
async def test_cli_json_and_mcp_recall_give_the_same_answer(arcana_home, tmp_path, monkeypatch, embedder):
    if not embedder:
        keyword_only(arcana_home)
    at = {"created_at": WHEN, "updated_at": WHEN}
    _, alice = await seed(arcana_home, "alice", [
        {"content": "alpha zebra stripes are black and white", **at},
        {"content": "bravo zebra stripes are black and white", **at},  # a tie with alpha
        {"content": "zebra 7 is the oldest in the herd", "importance": 0.9},
        {"content": "pinned zebra note", "pinned": True},
        {"content": "hidden zebra stripes secret", "visibility": Visibility.HIDDEN},
        {"content": "archived zebra stripes fact", "archived": True},
        *({"content": f"filler zebra line {i}", **at} for i in range(12)),
    ])
    if embedder:  # a promoted user fact: the global tier answers too
        arcana("remember", "the zebra stripes fact the user confirmed", "--agent", "alice", "--importance", "0.95")
    twin = tmp_path / "twin-home"  # each skin reads its own copy: a recall refreshes what it returns
    shutil.copytree(arcana_home.root, twin)
    queries = ["zebra stripes", "zebra 7", "zebra"]  # each skin asks them in this order
    by_cli = [json.loads(arcana("recall", q, "--agent", "alice", "--limit", "10", "--json"))["results"] for q in queries]
    monkeypatch.setenv("ARCANA_HOME", str(twin))
    async with session("--agent", "alice") as client:
        by_mcp = [await call(client, "recall", query=q, limit=10) for q in queries]
    for query, cli_results, (error, mcp_answer) in zip(queries, by_cli, by_mcp, strict=True):
        assert not error, mcp_answer
        mcp_results = mcp_answer["results"]
        assert [(r["id"], "+".join(r["tiers"])) for r in cli_results] == [(r["id"], r["tier"]) for r in mcp_results], query
        # the same scores, but for the seconds of decay between the two reads
        assert [r["score"] for r in cli_results] == pytest.approx([r["score"] for r in mcp_results], rel=1e-4), query
        assert len(cli_results) == 10  # positive control: something to compare
        assert not {alice["hidden"], alice["archived"]} & {r["id"] for r in cli_results}
    assert not embedder or any(r["tiers"] == ["private", "global"] for r in by_cli[0])  # and across tiers
