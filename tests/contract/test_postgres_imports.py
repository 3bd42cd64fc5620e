"""An import's write never loosens a row nor brings back a removed id, on both engines, and on a
PostgreSQL server also while another connection deletes the row mid-write.

The first tests run on the ``store`` fixture (SQLite and PostgreSQL alike); the race tests
hold a second real connection to the same server, lock or delete the row through
memory/postgres/mutations.py (the operator's own path), and let the adapter's write run into it.
Each exclusion is paired with a positive control: the import still writes its content, and an
operator (or an ordinary write) still loosens.
"""

from __future__ import annotations

import asyncio

import pytest
from factories import entry

from memory.postgres import mutations
from memory.types import Audience, MemoryEntry, Visibility


def imported(**fields) -> MemoryEntry:
    """An import line for id ``tea-1`` (as ``remember --from`` makes it: visibility and pin spelled out)."""
    fields = {"id": "tea-1", "visibility": Visibility.VISIBLE, "pinned": False} | fields
    return entry(fields.pop("content", "Alice prefers jasmine tea now."), imported=True, **fields)


async def stored(store, memory_id: str) -> MemoryEntry | None:
    return await store.get(memory_id, audience=Audience.OPERATOR, include_archived=True)


@pytest.mark.parametrize("restriction", [Visibility.HIDDEN, Visibility.PRIVATE])
async def test_an_import_keeps_a_hidden_or_private_row_so(store, restriction):
    await store.write(entry("Alice prefers green tea.", id="tea-1"))
    await store.set_visibility(["tea-1"], restriction)
    assert await store.write_many([imported()]) == ["update"]
    row = await stored(store, "tea-1")
    assert (row.visibility, row.content) == (restriction, "Alice prefers jasmine tea now.")  # content still written
    # Positive control: the operator's path still lifts it.
    await store.set_visibility(["tea-1"], Visibility.VISIBLE)
    assert (await stored(store, "tea-1")).visibility is Visibility.VISIBLE


async def test_an_ordinary_write_may_loosen_what_an_import_may_not(store):
    await store.write(entry("Alice prefers green tea.", id="tea-1", visibility=Visibility.HIDDEN, pinned=True))
    await store.write_many([imported()])
    row = await stored(store, "tea-1")
    assert (row.visibility, row.pinned) == (Visibility.HIDDEN, True)
    await store.write_many([imported().model_copy(update={"imported": False})])  # the same line, not an import
    row = await stored(store, "tea-1")
    assert (row.visibility, row.pinned) == (Visibility.VISIBLE, False)


async def test_an_import_keeps_a_pin(store):
    await store.write(entry("Alice prefers green tea.", id="tea-1"))
    await store.set_pinned(["tea-1"], True)
    assert await store.write_many([imported()]) == ["update"]
    row = await stored(store, "tea-1")
    assert (row.pinned, row.content) == (True, "Alice prefers jasmine tea now.")
    await store.set_pinned(["tea-1"], False)  # positive control: unpinning is the operator's
    assert (await stored(store, "tea-1")).pinned is False


@pytest.mark.parametrize("removal", ["delete", "purge"])
async def test_an_import_leaves_a_removed_id_gone(store, removal):
    await store.write(entry("Alice prefers green tea.", id="tea-1"))
    if removal == "delete":
        assert await store.delete("tea-1")
    else:
        assert await store.purge(["tea-1"]) == 1
    fresh = imported(id="deploy-1", content="Deploys go out on Fridays.")
    assert await store.write_many([imported(), fresh]) == ["gone", "insert"]  # the fresh id: the control
    assert await stored(store, "tea-1") is None
    assert (await stored(store, "deploy-1")).content == "Deploys go out on Fridays."
    # An ordinary write of the removed id (someone says it again) brings it back.
    assert await store.write_many([imported().model_copy(update={"imported": False})]) == ["insert"]
    assert (await stored(store, "tea-1")).content == "Alice prefers jasmine tea now."


async def test_a_large_import_keeps_restrictions_and_removals_through_the_copy_path(store):
    """Past bulk.COPY_MIN new rows PostgreSQL COPYs them through a staging table: the same rules hold."""
    await store.write_many([
        entry("hidden one", id="keep-hidden"), entry("pinned one", id="keep-pinned"), entry("purged one", id="gone-1"),
    ])
    await store.set_visibility(["keep-hidden"], Visibility.HIDDEN)
    await store.set_pinned(["keep-pinned"], True)
    await store.purge(["gone-1"])
    lines = [imported(id=f"n-{i}", content=f"new line {i}") for i in range(250)]
    lines += [imported(id="keep-hidden", content="hidden, reworded"), imported(id="keep-pinned", content="pinned, reworded"),
              imported(id="gone-1", content="purged, said again")]
    ops = await store.write_many(lines)
    assert ops[:250] == ["insert"] * 250 and ops[250:] == ["update", "update", "gone"]
    hidden, pinned = await stored(store, "keep-hidden"), await stored(store, "keep-pinned")
    assert (hidden.visibility, hidden.content) == (Visibility.HIDDEN, "hidden, reworded")
    assert (pinned.pinned, pinned.content) == (True, "pinned, reworded")
    assert await stored(store, "gone-1") is None
    assert await store.count() == 252


# -- two real connections to one server ------------------------------------------------------


@pytest.fixture
async def server(pg_url):
    """(adapter, operator connection, watcher connection) on the test server's empty database."""
    import asyncpg

    from memory.adapters.postgres import PostgresAdapter

    adapter = PostgresAdapter(pg_url, actor="importer")
    await adapter.connect()
    operator = await asyncpg.connect(pg_url)
    watcher = await asyncpg.connect(pg_url)
    yield adapter, operator, watcher
    await operator.close()
    await watcher.close()
    await adapter.aclose()


async def blocked(watcher, task: asyncio.Task) -> None:
    """Wait until the adapter's connection waits on a lock another transaction holds."""
    for _ in range(400):
        if task.done():
            task.result()  # raises what it raised
            raise AssertionError(f"the write finished without waiting: {task.result()}")
        waiting = await watcher.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'arcana' AND wait_event_type = 'Lock'"
        )
        if waiting:
            return
        await asyncio.sleep(0.025)
    raise AssertionError("the write never waited on the operator's lock")


@pytest.mark.parametrize("commit", [True, False])
async def test_an_operator_delete_in_flight_wins_over_an_import(server, commit):
    """The operator's delete holds the row when the import reaches it: the import waits, then
    sees the id removed (gone). Control: the operator's transaction rolls back, and the import updates."""
    adapter, operator, watcher = server
    await adapter.write(entry("Alice prefers green tea.", id="tea-1"))
    transaction = operator.transaction()
    await transaction.start()
    assert await mutations.delete(operator, ["tea-1"], "delete", "operator") == 1
    write = asyncio.create_task(adapter.write_many([imported()]))
    await blocked(watcher, write)
    await (transaction.commit() if commit else transaction.rollback())
    ops = await asyncio.wait_for(write, 30)
    row = await stored(adapter, "tea-1")
    if commit:
        assert (ops, row) == (["gone"], None)
    else:
        assert (ops, row.content) == (["update"], "Alice prefers jasmine tea now.")


async def test_an_ordinary_write_racing_a_delete_lands_as_a_fresh_row(server):
    """A row deleted between the write's INSERT ... ON CONFLICT DO NOTHING (which found it there)
    and its read of the existing rows: the write lands as an insert, ledgered, never a KeyError."""
    adapter, operator, watcher = server
    await adapter.write(entry("Alice prefers green tea.", id="tea-1"))
    transaction = operator.transaction()
    await transaction.start()
    await operator.execute("SELECT 1 FROM memories WHERE id = 'tea-1' FOR UPDATE")  # the delete's first step
    said_again = entry("Alice prefers jasmine tea now.", id="tea-1")
    write = asyncio.create_task(adapter.write_many([said_again, entry("a neighbour in the batch", id="n-1")]))
    await blocked(watcher, write)  # past its INSERT (the row was there), waiting to lock it
    assert await mutations.delete(operator, ["tea-1"], "delete", "operator") == 1
    await transaction.commit()
    assert await asyncio.wait_for(write, 30) == ["insert", "insert"]
    assert (await stored(adapter, "tea-1")).content == "Alice prefers jasmine tea now."
    assert [r.op for r in await adapter.history("tea-1")] == ["insert", "delete", "insert"]


async def test_an_ordinary_write_waiting_on_a_lock_that_is_not_a_delete_updates(server):
    """Control for the race above: the same wait, the operator pins instead, the write updates the row."""
    adapter, operator, watcher = server
    await adapter.write(entry("Alice prefers green tea.", id="tea-1"))
    transaction = operator.transaction()
    await transaction.start()
    await operator.execute("SELECT 1 FROM memories WHERE id = 'tea-1' FOR UPDATE")
    write = asyncio.create_task(adapter.write_many([entry("Alice prefers jasmine tea now.", id="tea-1")]))
    await blocked(watcher, write)
    await mutations.update(operator, ["tea-1"], "pin", "operator", "pinned", 1)
    await transaction.commit()
    assert await asyncio.wait_for(write, 30) == ["update"]
    row = await stored(adapter, "tea-1")
    assert (row.content, row.pinned) == ("Alice prefers jasmine tea now.", False)  # an ordinary write sets the pin it says


async def test_the_imports_write_keeps_a_change_newer_than_the_line_itself(store):
    """"The newer change in the store wins" is decided by the import's write, under its lock: an
    operator's edit landing after the import read the store (here, no read at all before the write)
    is not overwritten by the older line. Controls: a line newer than every change, and a line of a
    memory changed only by an import, apply."""
    from datetime import UTC, datetime, timedelta

    from memory.operations.export import write_imported

    said = datetime(2024, 1, 1, tzinfo=UTC)
    await store.write_many([entry("Alice prefers green tea.", id="tea-1", updated_at=said),
                            entry("Standup is at nine.", id="standup", updated_at=said),
                            entry("The gate code is 7788.", id="gate", updated_at=said)])
    await store.write(entry("Alice prefers oolong.", id="tea-1", importance=0.8, updated_at=said))  # the operator, now
    await write_imported(store, [imported(id="gate", content="The gate code is 9911.", updated_at=said)])
    lines = [imported(updated_at=said),  # older than the operator's change: its text and importance stand
             imported(id="standup", content="Standup is at ten.", updated_at=said),  # nothing changed since
             imported(id="gate", content="The gate code is 1234.", updated_at=said)]  # changed since by an import only
    await write_imported(store, lines)
    tea = await stored(store, "tea-1")
    assert (tea.content, tea.importance) == ("Alice prefers oolong.", 0.8)
    assert (await stored(store, "standup")).content == "Standup is at ten."
    assert (await stored(store, "gate")).content == "The gate code is 1234."
    later = imported(content="Alice prefers jasmine tea now.", importance=0.3, updated_at=datetime.now(UTC) + timedelta(days=1))
    await write_imported(store, [later])  # a line written after the change applies
    tea = await stored(store, "tea-1")
    assert (tea.content, tea.importance) == ("Alice prefers jasmine tea now.", 0.3)
