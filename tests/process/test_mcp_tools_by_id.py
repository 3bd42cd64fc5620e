"""The by-id MCP tools (get, update, history) and every tool's annotations, through the official client.

Each refusal sits beside a positive control in the same store: a hidden,
private, or another agent's memory gets the answer a missing id gets, while
the agent's own visible memory is found.
"""

from __future__ import annotations

import json

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.types import Audience, MemoryEntry, Visibility
from mcp_client import call, http_session, seed, session
from runner import arcana, keyword_only

HINTS = {  # tool: (readOnly, destructive, idempotent); openWorld is False for all
    "remember": (False, False, False), "update": (False, False, False), "forget": (False, True, True),
    "recall": (True, False, True), "list": (True, False, True), "context": (True, False, True),
    "get": (True, False, True), "history": (True, False, True),
}


async def _zoo(home):
    keyword_only(home)
    _, alice = await seed(home, "alice", [
        {"content": "visible zebra stripes are black and white", "tags": ["zoo"], "importance": 0.5,
         "confidence_source": "agent"},  # the agent's own: it may update and forget it
        {"content": "hidden zebra secret 4711", "visibility": Visibility.HIDDEN},
        {"content": "private zebra diary", "visibility": Visibility.PRIVATE},
    ])
    _, bob = await seed(home, "bob", [{"content": "bob zebra password hunter2"}])
    return alice, bob


def missing(id: str) -> str:
    return f"no memory with id '{id}' among this agent's memories"


async def test_every_tool_is_annotated(arcana_home):
    await _zoo(arcana_home)
    async with session("--agent", "alice") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(HINTS)
    for name, (read_only, destructive, idempotent) in HINTS.items():
        a = tools[name].annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (read_only, destructive, idempotent, False), name


async def test_get_own_by_id_and_prefix_refuses_hidden_private_and_others(arcana_home):
    alice, bob = await _zoo(arcana_home)
    async with session("--agent", "alice") as client:
        error, got = await call(client, "get", id=alice["visible"])
        assert not error and got["content"].startswith("visible zebra") and got["importance"] == 0.5
        error, got = await call(client, "get", id=alice["visible"][:8])  # a prefix, as on the CLI
        assert not error and got["id"] == alice["visible"]
        for other in (alice["hidden"], alice["private"], bob["bob"], alice["hidden"][:8], bob["bob"][:8], "nonexistent-id"):
            error, message = await call(client, "get", id=other)
            assert error and message.endswith(": " + missing(other)), other
        error, message = await call(client, "get", id=alice["visible"][:4])  # too short for a prefix
        assert error and message.endswith(": " + missing(alice["visible"][:4]))


async def test_update_tags_and_importance_capped_through_the_ledger(arcana_home):
    alice, bob = await _zoo(arcana_home)
    async with session("--agent", "alice") as client:
        error, done = await call(client, "update", id=alice["visible"][:8], importance=1.0, tags=["zoo", "africa"])
        assert not error and done["changed"] and done["importance"] == 0.89 and done["tags"] == ["zoo", "africa"]
        for other in (alice["hidden"], bob["bob"]):
            error, message = await call(client, "update", id=other, tags=["mine"])
            assert error and message.endswith(": " + missing(other))
        error, message = await call(client, "update", id=alice["visible"])
        assert error and "nothing to change" in message
    card = AgentRegistry(arcana_home).resolve("alice")
    store = SQLiteAdapter.for_agent(card.id, home=arcana_home)
    records = await store.history(alice["visible"])
    hidden = await store.get(alice["hidden"], audience=Audience.OPERATOR)
    await store.aclose()
    assert records[-1].op == "update" and records[-1].after["importance"] == 0.89  # the edit is in the ledger
    assert hidden.tags == []  # the refused update changed nothing
    bob_store = SQLiteAdapter.for_agent(AgentRegistry(arcana_home).resolve("bob").id, home=arcana_home)
    assert (await bob_store.get(bob["bob"])).tags == []
    await bob_store.aclose()


async def test_update_content_is_a_new_version_and_history_shows_the_chain(arcana_home):
    keyword_only(arcana_home)
    _, alice = await seed(arcana_home, "alice", [
        {"content": "deploys run on fridays", "confidence_source": "agent"},
        {"content": "hidden deploy key 4711", "visibility": Visibility.HIDDEN},
    ])
    async with session("--agent", "alice") as client:
        error, done = await call(client, "update", id=alice["deploys"], content="deploys run on mondays now")
        assert not error and done["superseded"] and done["replaces"] == alice["deploys"]
        error, history = await call(client, "history", id=done["id"])
        assert not error
        assert [v["content"] for v in history["versions"]] == ["deploys run on fridays", "deploys run on mondays now"]
        assert [v["current"] for v in history["versions"]] == [False, True]
        assert {r["memory"] for r in history["ledger"]} == {alice["deploys"], done["id"]}
        assert "4711" not in str(history)
        error, found = await call(client, "recall", query="deploys", mode="keyword")
        assert not error and [r["id"] for r in found["results"]] == [done["id"]]
        error, message = await call(client, "history", id=alice["hidden"])
        assert error and message.endswith(": " + missing(alice["hidden"]))


async def test_history_of_a_replaced_version_answers_its_chain_as_the_cli_does(arcana_home):
    """`update` answers with the id it replaced; `history` on that id said "no memory" while `arcana
    memory history` answers it. A hidden memory (and another agent's) stays unknown beside it."""
    keyword_only(arcana_home)
    _, alice = await seed(arcana_home, "alice", [
        {"content": "kettle lives on the left shelf", "confidence_source": "agent"},
        {"content": "hidden kettle key 4711", "visibility": Visibility.HIDDEN},
    ])
    _, bob = await seed(arcana_home, "bob", [{"content": "bob kettle password hunter2"}])
    async with session("--agent", "alice") as client:
        error, done = await call(client, "update", id=alice["kettle"], content="kettle lives on the right shelf")
        assert not error and done["superseded"]
        error, current = await call(client, "history", id=done["id"])  # the control: the current version
        assert not error and [v["current"] for v in current["versions"]] == [False, True]
        for old in (done["replaces"], done["replaces"][:8]):
            error, chain = await call(client, "history", id=old)
            assert not error and chain["versions"] == current["versions"] and chain["id"] == done["replaces"], chain
        for other in (alice["hidden"], bob["bob"], alice["hidden"][:8]):
            error, message = await call(client, "history", id=other)
            assert error and message.endswith(": " + missing(other)), other
    cli = json.loads(arcana("memory", "history", done["replaces"], "--agent", "alice", "--versions", "--json"))
    assert [v["id"] for v in cli] == [v["id"] for v in chain["versions"]]


async def test_forget_takes_a_unique_prefix_and_refuses_an_ambiguous_one(arcana_home):
    """forget took only full ids while get, update and history take 6+ character prefixes; now it takes
    one too, and a prefix two memories share is refused, never guessed. Hidden ones stay unknown."""
    keyword_only(arcana_home)
    _, alice = await seed(arcana_home, "alice", [
        {"content": "heron one nests by the weir", "id": "abcdef01-0000-4000-8000-000000000001", "confidence_source": "agent"},
        {"content": "twin heron nests by the mill", "id": "abcdef02-0000-4000-8000-000000000002", "confidence_source": "agent"},
        {"content": "hidden heron secret 4711", "visibility": Visibility.HIDDEN},
        {"content": "kept heron roost", "confidence_source": "agent"},
    ])
    async with session("--agent", "alice") as client:
        error, message = await call(client, "forget", id="abcdef0")
        assert error and "prefix 'abcdef0' is ambiguous (2 matches)" in message
        error, message = await call(client, "forget", id=alice["hidden"][:8])
        assert error and message.endswith(": " + missing(alice["hidden"][:8]))
        error, done = await call(client, "forget", id="abcdef01")
        assert not error and done["id"] == alice["heron"] and done["changed"]
        error, again = await call(client, "forget", id="abcdef01")  # archived already: idempotent
        assert not error and again["id"] == alice["heron"] and not again["changed"]
    listed = {m["content"] for m in json.loads(arcana("memory", "list", "--agent", "alice", "--json"))}
    assert listed == {"twin heron nests by the mill", "kept heron roost"}


async def test_two_clients_updating_one_memory_at_once_leave_one_current_version(arcana_home, tmp_path):
    """Both servers found the memory current and stored their text; the second's supersede found it
    ended already, so two current versions of one fact stood, and its answer said nothing was wrong.
    The agent's decision lock is held here until both servers wait on it, so both are mid-update."""
    import asyncio
    import fcntl
    import os

    from memory.agent_lock import agent_lock_path

    keyword_only(arcana_home)
    card_id, alice = await seed(arcana_home, "alice", [{"content": "deploys run on fridays", "confidence_source": "agent"}])
    logs = [tmp_path / "first.err", tmp_path / "second.err"]
    lock = os.open(agent_lock_path(arcana_home, card_id, "-decide"), os.O_RDWR | os.O_CREAT, 0o600)
    with open(logs[0], "w") as first_err, open(logs[1], "w") as second_err:
        async with session("--agent", "alice", stderr=first_err) as first, session("--agent", "alice", stderr=second_err) as second:
            fcntl.flock(lock, fcntl.LOCK_EX)
            calls = [asyncio.ensure_future(call(client, "update", id=alice["deploys"], content=text))
                     for client, text in ((first, "deploys run on mondays"), (second, "deploys run on thursdays"))]
            for _ in range(600):  # until both servers say they wait for the lock (each after 1 s of waiting)
                if all("waiting for another process's write" in log.read_text() for log in logs):
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError(f"the servers never waited on the lock: {[log.read_text() for log in logs]}")
            fcntl.flock(lock, fcntl.LOCK_UN)
            answers = await asyncio.gather(*calls)
            done = [answer for error, answer in answers if not error]
            refused = [answer for error, answer in answers if error]
            assert len(done) == 1 and done[0]["superseded"] and len(refused) == 1
            assert refused[0].endswith(": " + missing(alice["deploys"]))
            error, again = await call(second, "update", id=done[0]["id"], content="deploys run on tuesdays")  # control
            assert not error and again["superseded"]
    os.close(lock)
    current = [m["content"] for m in json.loads(arcana("memory", "list", "--agent", "alice", "--json"))]
    assert current == ["deploys run on tuesdays"]


@pytest.mark.parametrize("tool, arguments", [("update", {"tags": ["ops"]}), ("forget", {})])
async def test_an_edit_waits_for_another_clients_replacement_and_finds_it_gone(arcana_home, tmp_path, tool, arguments):
    """An update of tags or importance only, and a forget, took no decision lock: while another writer
    held it, having decided to replace the memory, the edit went to the version that writer then ended
    (tags no current version carries; the replaced fact "forgotten" while its successor stays current),
    and the answer said it was done. Here this test is that writer: it holds the lock, the server's call
    waits for it, and finds the memory replaced."""
    import asyncio
    import fcntl
    import os

    from memory.agent_lock import agent_lock_path

    keyword_only(arcana_home)
    card_id, alice = await seed(arcana_home, "alice", [{"content": "deploys run on fridays", "confidence_source": "agent"}])
    log = tmp_path / "server.err"
    lock = os.open(agent_lock_path(arcana_home, card_id, "-decide"), os.O_RDWR | os.O_CREAT, 0o600)
    with open(log, "w") as err:
        async with session("--agent", "alice", stderr=err) as client:
            fcntl.flock(lock, fcntl.LOCK_EX)
            pending = asyncio.ensure_future(call(client, tool, id=alice["deploys"], **arguments))
            for _ in range(600):  # until the server waits on the lock (after 1 s), or answered without it
                if pending.done() or "waiting for another process's write" in log.read_text():
                    break
                await asyncio.sleep(0.1)
            store = SQLiteAdapter.for_agent(card_id, home=arcana_home, actor="test")
            newer = MemoryEntry(agent_id=card_id, content="deploys run on mondays", confidence_source="agent")
            await store.write(newer)
            await store.supersede([alice["deploys"]], newer.id)
            await store.aclose()
            fcntl.flock(lock, fcntl.LOCK_UN)
            error, message = await pending
            assert error and message.endswith(": " + missing(alice["deploys"])), message
            error, done = await call(client, tool, id=newer.id, **arguments)  # the control: the current one
            assert not error and done["changed"] and done["id"] == newer.id
    os.close(lock)
    old = json.loads(arcana("memory", "show", alice["deploys"], "--agent", "alice", "--json"))
    assert (old["tags"], old["archived"], old["superseded_by"]) == ([], False, newer.id)


async def test_update_of_a_user_confirmed_fact_is_held_beside_it(arcana_home):
    keyword_only(arcana_home)
    _, alice = await seed(arcana_home, "alice", [{"content": "office is in Berlin"}])  # user_confirmed (default)
    async with session("--agent", "alice") as client:
        error, done = await call(client, "update", id=alice["office"], content="office is in Munich")
        assert not error and not done["superseded"] and done["held_beside"] == alice["office"]
        error, got = await call(client, "get", id=alice["office"])
        assert not error and got["valid_to"] is None  # still current


async def test_read_only_leaves_update_out_but_keeps_get_and_history(arcana_home):
    alice, _ = await _zoo(arcana_home)
    async with session("--agent", "alice", "--read-only") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "update" not in names and {"get", "history"} <= names
        result = await client.call_tool("update", {"id": alice["visible"], "tags": ["x"]})
        assert result.is_error
        error, got = await call(client, "get", id=alice["visible"])
        assert not error and got["tags"] == ["zoo"]


async def test_get_over_http_own_found_hidden_refused(arcana_home, tmp_path):
    alice, bob = await _zoo(arcana_home)
    with (tmp_path / "err.txt").open("w") as errlog:
        async with http_session(arcana_home, "--agent", "alice", stderr=errlog) as client:
            error, got = await call(client, "get", id=alice["visible"][:8])
            assert not error and got["id"] == alice["visible"]
            for other in (alice["hidden"], bob["bob"]):
                error, message = await call(client, "get", id=other)
                assert error and message.endswith(": " + missing(other))
            error, history = await call(client, "history", id=alice["visible"])
            assert not error and [v["id"] for v in history["versions"]] == [alice["visible"]]


async def test_get_and_history_read_a_shared_memory_the_agent_recalls_and_nothing_else(arcana_home):
    keyword_only(arcana_home)
    arcana("pool", "create", "team")
    for name in ("alice", "bob"):
        arcana("agent", "join", name, "team")
    shared = json.loads(arcana("remember", "standup moved to 10am", "--agent", "bob", "--pool", "team", "--json"))["id"]
    quarantined = json.loads(arcana("remember", "standup secret 4711", "--agent", "bob", "--pool", "team", "--json"))["id"]
    arcana("memory", "set", quarantined, "--pool", "team", "--visibility", "hidden")
    private = json.loads(arcana("remember", "bob standup diary", "--agent", "bob", "--json"))["id"]
    async with session("--agent", "alice") as client:
        error, got = await call(client, "get", id=shared)
        assert not error and got["content"] == "standup moved to 10am" and got["tier"] == "pool:team"
        error, chain = await call(client, "history", id=shared)
        assert not error and [v["id"] for v in chain["versions"]] == [shared] and chain["ledger"][0]["op"] == "insert"
        assert [v["tier"] for v in chain["versions"]] == ["pool:team"]  # as get names it, not "shared"
        error, own = await call(client, "remember", content="alice standup notes")
        error, chain = await call(client, "history", id=own["id"])  # the control: her own memory's tier
        assert not error and [v["tier"] for v in chain["versions"]] == ["private"]
        for other in (quarantined, private, shared[:8]):  # hidden, another's private, a prefix of a shared id
            error, message = await call(client, "get", id=other)
            assert error and message.endswith(": " + missing(other)), other
            error, message = await call(client, "history", id=other)
            assert error and message.endswith(": " + missing(other)), other


async def test_the_ledger_names_the_mcp_server_as_the_writer(arcana_home):
    keyword_only(arcana_home)
    arcana("remember", "the user said this on the CLI", "--agent", "alice")  # control: the CLI's own actor
    async with session("--agent", "alice") as client:
        failed, stored = await call(client, "remember", content="the agent said this over MCP")
        assert not failed
        failed, chain = await call(client, "history", id=stored["id"])
    assert not failed and [r["actor"] for r in chain["ledger"]] == ["mcp"]
    cli_id = json.loads(arcana("recall", "said CLI", "--agent", "alice", "--json"))["results"][0]["id"]
    assert [r["actor"] for r in json.loads(arcana("memory", "history", cli_id, "--agent", "alice", "--json"))] == ["cli"]


async def test_get_and_history_refuse_a_memory_the_operator_forgot(arcana_home):
    """An archived memory leaves by no tool (man/mcp.md): by id it looks unknown, as a hidden one does,
    whether it was seeded archived or forgotten by the operator while the server ran."""
    keyword_only(arcana_home)
    _, alice = await seed(arcana_home, "alice", [
        {"content": "visible zebra stripes are black and white"},
        {"content": "archived zebra safe code 4711", "archived": True},
        {"content": "forgotten zebra diary entry"},
    ])
    async with session("--agent", "alice") as client:
        arcana("memory", "forget", alice["forgotten"], "--agent", "alice")
        for other in (alice["archived"], alice["forgotten"], alice["forgotten"][:8]):
            for tool in ("get", "history"):
                error, message = await call(client, tool, id=other)
                assert error and message.endswith(": " + missing(other)), (tool, other, message)
        error, got = await call(client, "get", id=alice["visible"][:8])  # control
        assert not error and got["id"] == alice["visible"]
        error, chain = await call(client, "history", id=alice["visible"])
        assert not error and [v["id"] for v in chain["versions"]] == [alice["visible"]]


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
async def test_history_of_a_replaced_version_of_a_pool_memory_answers_as_the_cli_does(arcana_home, engine, request, monkeypatch):
    """A pool's tier was read with recall's rules, so `history` on a replaced version of a shared fact
    said "no memory" while `arcana memory history ID --pool` answered it. A hidden replaced version
    and an archived one stay unknown beside it (the agent reads a pool's past as recall would show it)."""
    from datetime import datetime, timezone

    from memory.adapters.postgres import PostgresAdapter
    from memory.types import MemoryScope

    keyword_only(arcana_home)
    if engine == "postgres":
        monkeypatch.setenv("TEAM_PG", request.getfixturevalue("pg_url"))
        arcana("pool", "create", "team", "--url-env", "TEAM_PG")
    else:
        arcana("pool", "create", "team")
    for name in ("alice", "bob"):
        arcana("agent", "join", name, "team")
    bob = AgentRegistry(arcana_home).resolve("bob").id
    now = datetime.now(timezone.utc)

    def shared(content: str, **fields) -> MemoryEntry:
        return MemoryEntry(agent_id=bob, content=content, scope=MemoryScope.SHARED, pool_name="team", **fields)

    def replaced(content: str, **fields) -> tuple[MemoryEntry, MemoryEntry]:
        """(a replaced version, the current one replacing it)."""
        before = shared(content, valid_to=now, **fields)
        after = shared(f"{content}, now changed", supersedes=before.id)
        return before.model_copy(update={"superseded_by": after.id}), after

    (old, current), hidden, archived = replaced("deploys run on fridays"), \
        replaced("vault code is 4711", visibility=Visibility.HIDDEN), replaced("deploys ran on tuesdays", archived=True)
    hidden_old, archived_old = hidden[0], archived[0]
    store = PostgresAdapter(request.getfixturevalue("pg_url"), actor="test") if engine == "postgres" \
        else SQLiteAdapter(arcana_home.pool_db("team"), actor="test")
    await store.write_many([old, current, *hidden, *archived])
    await store.aclose()
    async with session("--agent", "alice") as client:
        error, chain = await call(client, "history", id=current.id)  # the control: the current version
        assert not error and old.id in [v["id"] for v in chain["versions"]]
        error, chain = await call(client, "history", id=old.id)
        assert not error, chain
        assert chain["id"] == old.id and {v["id"]: v["current"] for v in chain["versions"]} == {old.id: False, current.id: True}
        assert {v["tier"] for v in chain["versions"]} == {"pool:team"}
        for other in (hidden_old.id, archived_old.id):
            error, message = await call(client, "history", id=other)
            assert error and message.endswith(": " + missing(other)), other
            error, message = await call(client, "get", id=old.id)  # get stays a recall read: current only
            assert error and message.endswith(": " + missing(old.id))
    cli = json.loads(arcana("memory", "history", old.id, "--pool", "team", "--versions", "--json"))
    assert old.id in [v["id"] for v in cli]


async def test_a_prefix_finds_the_one_visible_match_past_fifty_hidden_ones(arcana_home):
    """A prefix was looked up among the first 50 ids of any visibility and only then admitted, so the
    agent's one visible memory past 50 hidden ones sharing its prefix was "no memory"; admission now
    filters in the lookup itself. The hidden ones stay unknown, and two visible ones are ambiguous."""
    keyword_only(arcana_home)
    hidden = [{"content": f"hidden heron {n}", "id": f"feed0000-0000-4000-8000-{n:012d}", "visibility": Visibility.HIDDEN}
              for n in range(60)]
    _, alice = await seed(arcana_home, "alice", [
        *hidden,
        {"content": "visible heron by the weir", "id": "feed0000-0000-4000-8000-999999999999", "confidence_source": "agent"},
        {"content": "twin heron by the mill", "id": "feed0001-0000-4000-8000-000000000001"},
    ])
    async with session("--agent", "alice") as client:
        for tool in ("get", "history", "update"):
            extra = {"tags": ["weir"]} if tool == "update" else {}
            error, got = await call(client, tool, id="feed0000", **extra)
            assert not error and got["id"] == alice["visible"], (tool, got)
        error, message = await call(client, "get", id="feed000")  # the control: two visible ones share it
        assert error and "prefix 'feed000' is ambiguous (2 matches)" in message
        error, message = await call(client, "get", id="feed0000-0000-4000-8000-0000000000")  # hidden ones only
        assert error and message.endswith(": " + missing("feed0000-0000-4000-8000-0000000000"))


async def test_get_of_a_consolidated_pool_memory_lists_its_sources_as_recall_does(arcana_home):
    """`get` read a shared tier's memory without its provenance, so a pool's merge answered with no
    `sources` while `recall` of the same memory listed them (man/mcp.md: a consolidated memory's
    answer lists its sources)."""
    keyword_only(arcana_home)
    arcana("pool", "create", "team")
    for name in ("alice", "bob"):
        arcana("agent", "join", name, "team")
    for text in ("the staging server restarts every night at two", "the staging server restarts every night at two am"):
        arcana("remember", text, "--agent", "bob", "--pool", "team")
    arcana("consolidate", "--pool", "team")
    async with session("--agent", "alice") as client:
        error, found = await call(client, "recall", query="staging server restarts")
        [merged] = found["results"]
        assert not error and merged["tier"] == "pool:team" and merged["sources"]  # the control
        error, got = await call(client, "get", id=merged["id"])
        assert not error and got["sources"] == merged["sources"]


async def test_get_says_a_pool_it_could_not_read_rather_than_no_such_memory(arcana_home, pg_url, monkeypatch):
    """A shared tier that failed the read (here its server URL unset in the server's environment) was
    skipped in silence: `get` of a pool memory answered "no memory with id", as for an id that names
    nothing, where recall reports the tier degraded. Now the answer names the tier it could not read."""
    keyword_only(arcana_home)
    monkeypatch.setenv("TEAM_PG", pg_url)
    arcana("pool", "create", "team", "--url-env", "TEAM_PG")
    arcana("agent", "join", "alice", "team")
    shared = json.loads(arcana("remember", "standup moved to 10am", "--agent", "alice", "--pool", "team", "--json"))["id"]
    async with session("--agent", "alice") as client:  # the control: the pool is reachable
        error, got = await call(client, "get", id=shared)
        assert not error and got["tier"] == "pool:team"
    assert _degraded(arcana_home) == []  # the control: a tier read is no degradation
    monkeypatch.delenv("TEAM_PG")
    async with session("--agent", "alice") as client:
        error, message = await call(client, "get", id=shared)
        assert error and missing(shared) in message and "pool:team could not be read" in message, message
        error, message = await call(client, "history", id=shared)
        assert error and missing(shared) in message and "pool:team could not be read" in message, message
    # audited as recall audits a degraded tier (it was said to the client only)
    assert [(line["tier"], line["op"]) for line in _degraded(arcana_home)] == [("pool:team", "get")] * 2


def _degraded(home) -> list[dict]:
    if not home.audit_log.exists():
        return []
    lines = [json.loads(line) for line in home.audit_log.read_text().splitlines()]
    return [line for line in lines if line["event"] == "memory_degraded"]
