"""A write into a shared pool is reconciled against that pool, on both engines.

Real homes, the real Typer app, a SQLite pool file or a real PostgreSQL server
(keyword tiers: the decisions are the heuristic's, as in a private store). The
member rule: only the user's word ends another member's memory; an agent's
claim ends its own agent's rows and is held beside anyone else's.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from memory.agents import AgentRegistry
from memory.runtime.assembly import federation_for_agent
from memory.types import ConfidenceSource, MemoryEntry, MemoryScope


def data(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(params=["sqlite", "postgres"])
def team(request, cli, arcana_home, monkeypatch):
    """ada and bob in pool 'team' (a file, or a database on the server); keyword tiers."""
    arcana_home.ensure()
    arcana_home.config_path.write_text(json.dumps({"embedding": {"providers": []}}))
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    if request.param == "postgres":
        monkeypatch.setenv("TEAM_PG", request.getfixturevalue("pg_url"))
        assert cli("pool", "create", "team", "--url-env", "TEAM_PG").exit_code == 0
    else:
        assert cli("pool", "create", "team").exit_code == 0
    for name in ("ada", "bob"):
        assert cli("agent", "join", name, "team").exit_code == 0
    return cli


def say(cli, agent: str, text: str) -> dict:
    """``agent`` remembers ``text`` into the pool as the user's word (the CLI's)."""
    return data(cli("remember", text, "--pool", "team", "-a", agent, "--json"))


def claim(home, agent: str, text: str) -> dict:
    """``agent`` claims ``text`` into the pool (an agent's claim, as MCP and `arcana run` write one)."""

    async def go() -> dict:
        card = AgentRegistry(home).resolve(agent)
        federation = await federation_for_agent(card, home=home)
        try:
            entry = MemoryEntry(agent_id=card.id, content=text, scope=MemoryScope.SHARED, pool_name="team",
                                confidence_source=ConfidenceSource.AGENT)
            return (await federation.write(entry)).as_dict()
        finally:
            await federation.aclose()

    return asyncio.run(go())


def current(cli, agent: str, query: str) -> list[str]:
    found = data(cli("recall", query, "-a", agent, "--scope", "shared", "--json"))["results"]
    return sorted(r["content"] for r in found)


def test_a_pool_write_ends_what_it_changes_and_keeps_a_different_fact(team):
    notes = say(team, "bob", "Our team standup notes are kept in the wiki")
    old = say(team, "bob", "Our team standup is at 10am every day")
    new = say(team, "ada", "The team standup moved to 11am from now on")  # the user's word ends bob's row
    assert (new["decision"], new["supersedes"], new["accepted"]) == ("update", [old["id"]], ["pool:team"])
    assert current(team, "bob", "standup") == [
        "Our team standup notes are kept in the wiki", "The team standup moved to 11am from now on"
    ]
    assert notes["decision"] == "add"
    again = say(team, "bob", "The team standup moved to 11am from now on")  # restated: reinforced, one row
    assert (again["decision"], again["id"], again["accepted"]) == ("noop", new["id"], ["pool:team"])


def test_an_agents_claim_ends_only_its_own_agents_rows(team, arcana_home):
    users = say(team, "bob", "Our team standup is at 10am every day")
    held = claim(arcana_home, "ada", "The team standup moved to 11am from now on")
    assert (held["decision"], held["supersedes"], held["conflict_with"]) == ("add", [], users["id"])
    assert current(team, "ada", "standup") == [
        "Our team standup is at 10am every day", "The team standup moved to 11am from now on"
    ]
    # Positive control: a claim does end its own agent's claim.
    mine = claim(arcana_home, "ada", "Our team demo is on Friday every week")
    ends = claim(arcana_home, "ada", "The team demo moved to Monday from now on")
    assert (ends["decision"], ends["supersedes"]) == ("update", [mine["id"]])
    # ... and another member's claim is held beside it, not ended.
    bobs = claim(arcana_home, "bob", "The team demo moved to Tuesday from now on")
    assert (bobs["decision"], bobs["supersedes"], bobs["conflict_with"]) == ("add", [], ends["id"])
    assert current(team, "bob", "demo") == [
        "The team demo moved to Monday from now on", "The team demo moved to Tuesday from now on"
    ]


async def test_both_engines_pick_the_same_keyword_candidates(tmp_path, request):
    """A keyword-only server pool ranked every word of the statement (74 ms per write at 10,000
    rows) where SQLite asks only the rarest few: both now pick words by one rule
    (memory.query_terms.focus), so the same rows give the same candidates."""
    from engines import open_store

    from memory.query_terms import DF_CAP, FOCUS_TERMS
    from memory.types import MemoryQuery

    # eight words each in one row: the six rarest are asked (ties: the longer word), tapir and ibis not
    animals = ["capybara", "pangolin", "axolotl", "narwhal", "quokka", "okapi", "tapir", "ibis"]
    rare = [MemoryEntry(agent_id="a", content=f"I saw a {animal} at the zoo") for animal in animals]
    common = [MemoryEntry(agent_id="a", content=f"weather note {i} written down") for i in range(DF_CAP + 10)]
    control = MemoryEntry(agent_id="a", content="weather")  # shares only the common word, the shortest row holding it
    many = MemoryQuery(agent_id="a", text=" ".join(animals), limit=len(animals))
    beside = MemoryQuery(agent_id="a", text="capybara weather", limit=2)
    found = {}
    for engine in ("sqlite", "postgres"):
        store = open_store(engine, tmp_path, request)
        try:
            await store.write_many([*rare, *common, control])
            found[engine] = [[e.id for e in await store.keyword_candidates(q, q.limit)] for q in (many, beside)]
        finally:
            await store.aclose()
    (sqlite_many, sqlite_beside), (pg_many, pg_beside) = found["sqlite"], found["postgres"]
    assert set(sqlite_many) == set(pg_many) == {e.id for e in rare[:FOCUS_TERMS]}
    # the common word only fills what the rare word leaves: the control is found (the fill works),
    # but after the rare word's row, on both engines
    assert sqlite_beside == pg_beside == [rare[0].id, control.id]


def test_an_import_into_a_pool_is_decided_against_the_pool(team, tmp_path):
    """`remember --from --pool` lines were stored as given: a line replacing a pool fact left both current.
    They are now decided as `remember --pool` decides one, with the member rule: an imported line is not the
    user's word, so it ends its own agent's row and is held beside another member's; a restating line
    reinforces the pool's row; a re-run of the file decides nothing again."""
    bobs = say(team, "bob", "Our team standup is at 10am every day")
    notes = say(team, "bob", "Our team standup notes are kept in the wiki")
    adas = say(team, "ada", "Our team demo is on Friday every week")
    source = tmp_path / "team.jsonl"
    said = ["The team demo moved to Monday from now on", "The team standup moved to 11am from now on",
            "Our team standup notes are kept in the wiki", "The team retro is held on Fridays"]
    source.write_text("".join(json.dumps({"content": text}) + "\n" for text in said), encoding="utf-8")
    first = data(team("remember", "--from", str(source), "--pool", "team", "-a", "ada", "--json"))
    assert first["decisions"] == {"add": 2, "noop": 1, "update": 1, "delete": 0}, first
    assert (first["written"], first["restated"], first["accepted"]) == (3, 1, {"pool:team": 3})
    # ada's demo ended; bob's standup held beside ada's line (the control: not ended), his notes kept once.
    assert current(team, "bob", "team") == sorted([*said, "Our team standup is at 10am every day"])
    assert [h["op"] for h in data(team("memory", "history", adas["id"], "--pool", "team", "--json"))][-1] == "supersede"
    assert [h["op"] for h in data(team("memory", "history", bobs["id"], "--pool", "team", "--json"))] == ["insert"]

    def importance() -> float:
        return next(m for m in data(team("memory", "list", "--pool", "team", "--json")) if m["id"] == notes["id"])["importance"]

    reinforced = importance()
    again = data(team("remember", "--from", str(source), "--pool", "team", "-a", "ada", "--json"))
    assert (again["written"], again["decisions"]["add"], again["decisions"]["noop"]) == (0, 0, 0), again
    listed = data(team("memory", "list", "--pool", "team", "--json"))
    assert [m["content"] for m in listed].count(said[2]) == 1
    assert importance() == reinforced  # a re-run reinforces nothing again
