"""How store calls reach SQLite: short ones inline on the event loop, never
blocking it, and every call stopped inside SQLite at its deadline."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

import pytest

from memory.deadline import DEADLINE
from memory.errors import MemoryTimeoutError
from memory.types import MemoryEntry, MemoryQuery


def _count_to(n: int):
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT count(*) FROM c"
    return lambda raw: raw.execute(sql, (n,)).fetchall()[0][0]


@pytest.mark.parametrize("inline", [False, True])
async def test_a_call_past_its_deadline_is_stopped_inside_sqlite(store, inline):
    assert await store.run(_count_to(200_000), inline=inline) == 200_000  # no deadline: runs to the end
    token = DEADLINE.set(time.monotonic() + 0.05)
    try:
        started = time.monotonic()
        with pytest.raises(MemoryTimeoutError, match="deadline"):
            await store.run(_count_to(5 * 10**7), inline=inline)  # ~5 s of work unstopped
        assert time.monotonic() - started < 1.5
    finally:
        DEADLINE.reset(token)
    assert await store.run(_count_to(1_000), inline=inline) == 1_000  # the connection still works


HOLDER = textwrap.dedent(
    """
    import sys, time
    from memory.sqlite.connection import dbapi
    raw = dbapi().connect(sys.argv[1], isolation_level=None)
    raw.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    raw.execute("COMMIT")
    """
)


async def test_an_inline_write_waits_for_another_process_without_blocking_the_loop(store):
    await store.write(MemoryEntry(agent_id="a", content="before the lock"))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store.path), "1.0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        started = time.monotonic()
        await store.write(MemoryEntry(agent_id="a", content="written once the lock is free"))
        waited = time.monotonic() - started
        task.cancel()
    finally:
        holder.wait(timeout=10)
    assert waited > 0.5  # it really waited for the other process's lock...
    assert ticks >= 25  # ...and the event loop kept running meanwhile
    found = await store.search(MemoryQuery(agent_id="a", text="lock"))
    assert {e.content for e in found} == {"before the lock", "written once the lock is free"}
