"""A cron `prune --all` (and reindex, consolidate --all) while an operator deletes agents.

The run lists the agents first and opens each in turn; opening made the store's file and folders,
so an agent deleted in between came back as `agents/<id>/memory.db` without a card: an empty store
that doctor, backups and every later `--all` run carried on.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time

from runner import ARCANA, keyword_only, run_arcana

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.types import MemoryEntry

AGENTS, ROWS = 20, 400


async def _seed(home) -> None:
    for i in range(AGENTS):
        card = AgentRegistry(home).create(f"a{i:02d}")
        store = SQLiteAdapter.for_agent(card.id, home=home)
        await store.write_many([MemoryEntry(agent_id=card.id, content=f"a{i:02d} note {j}", importance=0.05)
                                for j in range(ROWS)])
        await store.aclose()


def test_prune_all_never_brings_a_deleted_agent_back(arcana_home):
    keyword_only(arcana_home)
    asyncio.run(_seed(arcana_home))
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    prune = subprocess.Popen([*ARCANA, "prune", "--all", "--json"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # it has listed the agents and is working through them
    deleted = []
    for i in range(AGENTS - 1, 0, -1):  # from the end of its list, towards the stores it is pruning
        if prune.poll() is not None:
            break
        done = run_arcana("agent", "delete", f"a{i:02d}", "--yes")
        assert done.returncode == 0, done.stderr
        deleted.append(f"a{i:02d}")
    out, err = prune.communicate(timeout=120)
    assert prune.returncode == 0, err
    assert deleted, "the prune ended before any delete"
    assert [d.name for d in arcana_home.agents_dir.iterdir() if not (d / "agent.json").exists()] == []
    named = {store["agent"] for store in json.loads(out)["agents"]}
    assert "a00" in named  # (an agent deleted after its prune is named; one deleted before, left out)
    kept = json.loads(run_arcana("memory", "list", "--agent", "a00", "--all", "--archived", "--json",
                                 "--limit", "1000").stdout)
    assert len(kept) == ROWS and all(m["archived"] for m in kept)  # the control: a00 stayed and was pruned


def test_doctor_names_an_agent_folder_without_its_card_and_the_fix(arcana_home):
    """An orphan store (a folder under agents/ with no agent.json) is memory no agent uses; doctor
    checked its database and said the home was healthy."""
    keyword_only(arcana_home)
    done = run_arcana("remember", "the heron code is 42", "--agent", "ada")
    assert done.returncode == 0, done.stderr
    healthy = run_arcana("doctor", "--json")
    assert healthy.returncode == 0, healthy.stdout  # the control: an agent with its card is fine
    assert {"name": "agent folders", "ok": True, "detail": "every agent folder has its card"} in \
        json.loads(healthy.stdout)["checks"]
    (card,) = arcana_home.agents_dir.glob("*/agent.json")
    card.unlink()
    sick = run_arcana("doctor", "--json")
    assert sick.returncode == 1
    (check,) = [c for c in json.loads(sick.stdout)["checks"] if c["name"] == "agent folders"]
    assert check == {"name": "agent folders", "ok": False, "detail": (
        f"1 without an agent.json, used by no agent: agents/{card.parent.name}/ (memory.db); move each into "
        f"{arcana_home.root / 'trash'} (or put its agent.json back from the trash or a backup)")}
