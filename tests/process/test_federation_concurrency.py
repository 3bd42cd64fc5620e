"""Two agents in two processes write the same pool at once: every write lands."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from memory.adapters.sqlite import SQLiteAdapter

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from memory.adapters.sqlite import SQLiteAdapter
    from memory.federation.shared_tiers import PoolConfig
    from memory.runtime.assembly import build_federation
    from memory.home import Home
    from memory.types import MemoryEntry, MemoryScope

    async def main(agent, count):
        home = Home.resolve()
        pool = SQLiteAdapter(home.pool_db("team"))
        federation = await build_federation(agent, home=home, pools=[PoolConfig("team", pool)])
        for i in range(count):
            report = await federation.write(MemoryEntry(
                agent_id=agent, content=f"{agent} shared note {i}", scope=MemoryScope.SHARED, pool_name="team"))
            assert report.accepted == ["pool:team"], report
            await federation.write(MemoryEntry(agent_id=agent, content=f"{agent} private note {i}"))
        await federation.aclose()

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


def test_two_processes_share_a_pool_without_losing_a_write(arcana_home):
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root), "PYTHONPATH": str(root)}
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, agent, "40"], env=env, stderr=subprocess.PIPE, text=True)
        for agent in ("alice", "bob")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err

    async def count(path) -> int:
        store = SQLiteAdapter(path)
        try:
            return await store.count()
        finally:
            await store.aclose()

    assert asyncio.run(count(arcana_home.pool_db("team"))) == 80
    assert asyncio.run(count(arcana_home.agent_db("alice"))) == 40  # private stays private
