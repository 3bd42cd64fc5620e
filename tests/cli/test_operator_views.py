"""Core calls the web view stands on, beside the store's own (test_store_inspection.py): an
operator edit guarded by a ledger seq through the editor that reaches every copy, the copy shown
beside a memory, the audit log read newest first, a vault's link graph. Real homes and stores."""

from __future__ import annotations

import json

import pytest

from memory.audit import AuditLog
from memory.config import load_config
from memory.errors import StaleEditError
from memory.operator.edits import Edit, OperatorTarget, open_editor
from memory.types import Audience, MemoryQuery, Visibility


def ok(done) -> dict:
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout) if done.stdout.startswith("{") else {}


@pytest.fixture
def promoted(cli, no_embedder):
    """ada with a promoted memory (a copy in the global tier) and an unpromoted one; bob too."""
    for name in ("ada", "bob"):
        ok(cli("agent", "create", name))
    high = ok(cli("remember", "kestrel hovers over the meadow", "--agent", "ada", "--importance", "0.95", "--json"))
    low = ok(cli("remember", "kestrel nests are rare", "--agent", "ada", "--json"))
    ok(cli("remember", "bob's kestrel note", "--agent", "bob", "--importance", "0.95", "--json"))
    assert high["accepted"] == ["private", "global"] and low["accepted"] == ["private"]
    return no_embedder, high["id"], low["id"]


async def editor(home, agent=None, global_=False):
    return open_editor(home, load_config(home.config_path), OperatorTarget(agent, None, global_), actor="ui")


async def test_a_guarded_edit_reaches_the_copy_and_a_stale_one_touches_neither(promoted):
    home, high, low = promoted
    async with await editor(home, "ada") as ed:
        seq = (await ed.store.history(high))[-1].seq
        await ed.apply(high, Edit("set_pinned", True))  # a change after the page was drawn
        with pytest.raises(StaleEditError):
            await ed.apply(high, Edit("set_visibility", Visibility.HIDDEN, expect_seq=seq))
        assert (await ed.resolve(high)).visibility is Visibility.VISIBLE
        assert (await ed.copies.copy_of(await ed.resolve(high))).visibility is Visibility.VISIBLE  # the copy untouched
        fresh = (await ed.store.history(high))[-1].seq
        report = await ed.apply(high, Edit("set_visibility", Visibility.HIDDEN, expect_seq=fresh))
        assert report.changed and [(c.tier, c.changed) for c in report.copies] == [("global", True)]
        assert await ed.copies.copy_of(await ed.resolve(high)) is None  # hiding withdraws the copy
    with pytest.raises(ValueError, match="cannot be checked"):
        Edit("purge", expect_seq=1)  # refused before anything runs, not after the copy went


async def test_a_guarded_edit_of_the_global_copy_reaches_the_agents_own_memory(promoted):
    """The web view's global page edits the copy; the copy is the memory, so ada's own follows (she
    went on recalling what the operator hid). A stale seq touches neither; bob's copy is untouched."""
    home, high, low = promoted
    async with await editor(home, global_=True) as ed:
        seq = (await ed.store.history(high))[-1].seq
        await ed.apply(high, Edit("set_pinned", True))
        with pytest.raises(StaleEditError):
            await ed.apply(high, Edit("set_visibility", Visibility.HIDDEN, expect_seq=seq))
        fresh = (await ed.store.history(high))[-1].seq
        report = await ed.apply(high, Edit("set_visibility", Visibility.HIDDEN, expect_seq=fresh))
        assert [(c.tier, c.op, c.changed) for c in report.copies] == [
            ("private", "set_visibility", True), ("global", "withdraw", True)]
        bobs = [e for e in await ed.store.search(MemoryQuery(), audience=Audience.OPERATOR) if e.id != high]
        assert [e.content for e in bobs] == ["bob's kestrel note"]  # control: another copy stays
    async with await editor(home, "ada") as ed:
        own = await ed.resolve(high)
        assert own.visibility is Visibility.HIDDEN and own.pinned  # the pin reached it too
        assert (await ed.resolve(low)).visibility is Visibility.VISIBLE


async def test_the_copy_beside_a_memory_is_its_own_agents_only(promoted):
    home, high, low = promoted
    async with await editor(home, "ada") as ed:
        copy = await ed.copies.copy_of(await ed.resolve(high))
        assert copy is not None and copy.id == high and copy.scope.value == "global"
        assert await ed.copies.copy_of(await ed.resolve(low)) is None  # never promoted
        stranger = (await ed.resolve(high)).model_copy(update={"agent_id": "someone-else"})
        assert await ed.copies.copy_of(stranger) is None  # the same id from another agent is not this one's copy


def test_the_audit_log_reads_newest_first_across_rotations(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl", max_bytes=1500, keep=3)
    for i in range(60):
        log.append("tick", i=i)
    with (tmp_path / "audit.jsonl").open("a") as handle:
        handle.write('{"torn": \n')
    newest = log.newest(0, 5)
    assert newest[0]["event"] == "unreadable line" and [e["i"] for e in newest[1:]] == [59, 58, 57, 56]
    every = [e["i"] for e in log.newest(1, 1000)]
    assert every == sorted(every, reverse=True) and len(every) == len(set(every)) > 30  # rotated files too
    assert [e["i"] for e in log.newest(11, 3)] == every[10:13]


def test_an_event_logged_after_a_torn_line_is_kept(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append("first")
    with (tmp_path / "audit.jsonl").open("a") as handle:
        handle.write('{"torn": ')  # a crash mid-write: no newline
    log.append("second")
    assert [e["event"] for e in log.newest(0, 5)] == ["second", "unreadable line", "first"]


def test_a_vault_link_graph_draws_its_best_linked_notes(cli, no_embedder, make_vault):
    import asyncio

    from memory.vaults.graph import link_graph
    from memory.vaults.registry import VaultRegistry

    notes = {"hub.md": "[[a]] [[b]] [[c]]", "a.md": "[[hub]] [[b]]", "b.md": "[[hub]]", "c.md": "plain", "d.md": "alone"}
    ok(cli("vault", "add", str(make_vault(notes)), "--name", "v"))
    ok(cli("vault", "index", "v", "--keyword-only"))
    graph = asyncio.run(link_graph(VaultRegistry(no_embedder).get("v"), limit=3))
    assert (graph.notes, graph.links) == (5, 6)
    assert [n[1] for n in graph.nodes] == ["hub.md", "a.md", "b.md"] and [n[2] for n in graph.nodes] == [5, 3, 3]
    assert len(graph.edges) == 5  # every link among the three drawn; c's one link is left out with c
    whole = asyncio.run(link_graph(VaultRegistry(no_embedder).get("v")))
    assert len(whole.nodes) == 5 and len(whole.edges) == 6


async def test_a_global_copys_original_is_its_own_agents_only(promoted):
    """What a global copy's page shows beside it, and what its actions reach: ada's memory of that id,
    never another agent's (an id is no proof of ownership)."""
    from memory.agents import AgentRegistry
    from memory.operator.edits import Originals

    home, high, low = promoted
    async with await editor(home, global_=True) as ed:
        copy = await ed.resolve(high)
    originals = Originals(home, load_config(home.config_path), actor="ui")
    card, original = await originals.find(copy)
    assert card.name == "ada" and original.id == high and original.scope.value == "private"
    bob = AgentRegistry(home).resolve("bob")
    for stranger in ("someone-else", bob.id):
        assert await originals.find(copy.model_copy(update={"agent_id": stranger})) is None
