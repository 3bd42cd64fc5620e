"""An agent's claim into a pool repeating a memory an operator withheld is stored withheld in the pool.

Found open: after `memory forget` of ada's "My locker code is 4471", an MCP `remember` with
`pool="team"` of "The user's locker code is 4471 at the gym" stored the code visibly in the pool, and
ada and bob got it back from recall; a memory hidden (or forgotten) inside the pool answered again the
same way. The controls in the same stores: the user's own words into the pool, and an agent's line
repeating nothing withheld, answer every member. Real subprocesses, SQLite pools, the offline model.
"""

from __future__ import annotations

import json

import pytest
from mcp_client import call, session
from runner import arcana, recalled

LOCKER = "My locker code is 4471"
CLAIM = "The user's locker code is 4471 at the gym"
USERS = "My locker code is 4471 at the pool"
BIKE = "The bike painted teal is kept in the shed"


def _team() -> None:
    arcana("pool", "create", "team")
    for name in ("ada", "bob"):
        arcana("agent", "create", name)
        arcana("agent", "join", name, "team")


def _withhold(edit: tuple[str, ...], where: tuple[str, ...]) -> str:
    """``LOCKER`` remembered and withheld by ``edit`` there (ada's store, or the pool as bob wrote it)."""
    locker = json.loads(arcana("remember", LOCKER, *where, "--json"))["id"]
    arcana("memory", edit[0], locker, *edit[1:], *where)
    return locker


def _pool_row(content: str) -> dict:
    rows = json.loads(arcana("memory", "list", "--pool", "team", "--all", "--archived", "--json"))
    return next(r for r in rows if r["content"] == content)


def _withheld_as(edit: tuple[str, ...]) -> tuple[str, bool]:
    return ("hidden", False) if edit[0] == "set" else ("visible", True)


EDITS = [("set", "--visibility", "hidden"), ("forget",)]
WHERE = {"ada": ("--agent", "ada"), "pool": ("--pool", "team", "--agent", "bob")}



# The user's line first: said after the claim, it would end it (the user's word), hiding the leak.
CHAT = "".join(json.dumps(line) + "\n" for line in [
    {"role": "user", "content": USERS, "session": "chat"},  # control: the user's own words
    {"role": "assistant", "content": CLAIM, "session": "chat"},
    {"role": "assistant", "content": BIKE, "session": "chat"},  # control: repeats nothing withheld
])

# Each path meets both edits and both places where it was withheld; the two paths split the four pairs.
@pytest.mark.parametrize(("edit", "where"), [(EDITS[0], "ada"), (EDITS[1], "pool")], ids=["hidden-ada", "forgotten-pool"])
async def test_an_agents_claim_into_a_pool_repeating_a_withheld_memory_answers_no_member(arcana_home, edit, where):
    _team()
    _withhold(edit, WHERE[where])
    async with session("--agent", "ada") as client:
        for claim in (CLAIM, BIKE):
            failed, answer = await call(client, "remember", content=claim, pool="team")
            assert not failed and answer["accepted"] == ["pool:team"], answer

    for member in ("ada", "bob"):
        assert not [text for text in recalled("locker code 4471", member) if "4471" in text], member
        assert BIKE in recalled("bike teal shed", member)  # control: repeats nothing withheld
    stored = _pool_row(CLAIM)
    assert (stored["visibility"], stored["archived"]) == _withheld_as(edit), stored

    arcana("remember", USERS, "--pool", "team", "--agent", "ada")  # control: the user's own words
    assert USERS in recalled("locker code 4471", "bob")


@pytest.mark.parametrize(("edit", "where"), [(EDITS[0], "pool"), (EDITS[1], "ada")], ids=["hidden-pool", "forgotten-ada"])
def test_an_assistant_line_imported_into_a_pool_repeating_a_withheld_memory_answers_no_member(arcana_home, edit, where):
    _team()
    _withhold(edit, WHERE[where])
    done = json.loads(arcana("remember", "--from", "-", "--pool", "team", "--agent", "ada", "--json", stdin=CHAT))
    assert done["written"] == 3, done

    for member in ("ada", "bob"):
        found = recalled("locker code 4471", member)
        assert CLAIM not in found and USERS in found, (member, found)
        assert BIKE in recalled("bike teal shed", member)
    stored = _pool_row(CLAIM)
    assert (stored["visibility"], stored["archived"]) == _withheld_as(edit), stored


@pytest.mark.parametrize("edit", EDITS, ids=["hidden", "forgotten"])
def test_an_assistant_line_imported_into_the_global_tier_repeating_a_withheld_memory_answers_no_agent(arcana_home, edit):
    _team()
    _withhold(edit, WHERE["ada"])
    done = json.loads(arcana("remember", "--from", "-", "--scope", "global", "--agent", "ada", "--json", stdin=CHAT))
    assert done["written"] == 3, done

    found = recalled("locker code 4471", "bob")
    assert CLAIM not in found and USERS in found, found
    assert BIKE in recalled("bike teal shed", "bob")
    rows = json.loads(arcana("memory", "list", "--global", "--all", "--archived", "--json"))
    stored = next(r for r in rows if r["content"] == CLAIM)
    assert (stored["visibility"], stored["archived"]) == _withheld_as(edit), stored
