"""An agent's MCP `remember` that repeats a memory it was shown is withheld with that memory.

`arcana run` never stores an answer given with recalled memories, but an agent over MCP recalls
"My locker code is 4471" and may `remember` "The user's locker code 4471 opens locker twelve": no
link led from the fact to that claim, so after an operator hid or forgot the fact the code went on
answering recall in the agent's words. The control in the same store: a claim quoting a fact that
stays visible answers as before, and so does a claim written before it saw the hidden fact's words.
"""

from __future__ import annotations

import json

import pytest
from mcp_client import call, session
from runner import arcana, keyword_only, recalled


async def _shown_then_claimed(client, pairs) -> None:
    """For each (query, claim): the agent recalls the query (so it is shown what answers), then remembers
    the claim, added as new."""
    for query, claim in pairs:
        failed, found = await call(client, "recall", query=query, mode="keyword")
        assert not failed and found["results"], found
        failed, answer = await call(client, "remember", content=claim)
        assert not failed and answer["decision"] == "add", answer


@pytest.mark.parametrize("edit", [("set", "--visibility", "hidden"), ("forget",)])
async def test_a_claim_quoting_a_recalled_memory_is_withheld_with_it(arcana_home, edit):
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    locker = json.loads(arcana("remember", "My locker code is 4471", "--agent", "ada", "--json"))["id"]
    arcana("remember", "My bike is painted teal", "--agent", "ada")
    async with session("--agent", "ada") as client:
        await _shown_then_claimed(client, (("locker code", "The user's locker code 4471 opens locker twelve"),
                             ("bike", "The bike painted teal is kept in the shed")))

    done = json.loads(arcana("memory", *edit[:1], locker, *edit[1:], "--agent", "ada", "--json"))
    assert len(done.get("reached", [])) == 1  # the claim quoting it, not the one quoting the bike

    assert not [text for text in recalled("locker code 4471") if "4471" in text]
    assert "The bike painted teal is kept in the shed" in recalled("bike shed")  # control: its fact stays visible


async def test_the_link_never_lets_the_agent_withdraw_the_fact_it_quoted(arcana_home):
    """The link runs one way: forgetting or re-wording the agent's claim leaves the user's fact it
    quoted as it was (a merge's restatements follow the merge; a quoted fact is none of them)."""
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    arcana("remember", "My locker code is 4471", "--agent", "ada")
    async with session("--agent", "ada") as client:
        assert not (await call(client, "recall", query="locker code", mode="keyword"))[0]
        failed, claim = await call(client, "remember", content="The user's locker code 4471 opens locker twelve")
        assert not failed
        failed, answer = await call(client, "update", id=claim["id"], content="The user's locker code opens locker nine")
        assert not failed and answer["superseded"] is True and answer["held_beside"] is None, answer
        failed, answer = await call(client, "forget", id=answer["id"])
        assert not failed and answer["changed"], answer

    assert recalled("locker code 4471") == ["My locker code is 4471"]


async def test_the_link_keeps_its_one_way_through_export_and_import(arcana_home, tmp_path):
    """An export names what a claim only quotes (``quoted``), so in the store it is imported into
    the fact still reaches the claim and forgetting the claim still leaves the fact."""
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    fact = json.loads(arcana("remember", "My locker code is 4471", "--agent", "ada", "--json"))["id"]
    async with session("--agent", "ada") as client:
        assert not (await call(client, "recall", query="locker code", mode="keyword"))[0]
        failed, claim = await call(client, "remember", content="The user's locker code 4471 opens locker twelve")
        assert not failed
    exported = tmp_path / "ada.jsonl"
    arcana("export", "--agent", "ada", "-o", str(exported))
    (line,) = [json.loads(x)["memory"] | json.loads(x) for x in exported.read_text().splitlines()[1:]
               if json.loads(x)["memory"]["id"] == claim["id"]]
    assert line["sources"] == [fact] and line["quoted"] == [fact]
    arcana("agent", "create", "eve")
    arcana("import", str(exported), "--agent", "eve")

    arcana("memory", "forget", claim["id"], "--agent", "eve")
    assert [r["content"] for r in json.loads(arcana("recall", "locker code", "--agent", "eve", "--json"))["results"]] \
        == ["My locker code is 4471"]  # the claim went, the fact it quoted stays
    arcana("memory", "restore", claim["id"], "--agent", "eve")
    done = json.loads(arcana("memory", "set", fact, "--agent", "eve", "--visibility", "hidden", "--json"))
    assert [r["id"] for r in done["reached"]] == [claim["id"]]


@pytest.mark.parametrize("edit", [("set", "--visibility", "hidden"), ("forget",)])
async def test_an_update_repeating_a_recalled_memory_is_withheld_with_it(arcana_home, edit):
    """An `update`'s new words are written as a `remember`'s are: repeating a memory the agent was
    shown, its new version is linked to it, so the operator's hide or forget reaches it. Controls in
    the same store: an update not repeating it, and an untouched claim, still answer."""
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    locker = json.loads(arcana("remember", "My locker code is 4471", "--agent", "ada", "--json"))["id"]
    async with session("--agent", "ada") as client:
        ids = {}
        for claim in ("Pending errand: pick up parcels", "Pending chore: water the ferns",
                      "The garden shed roof leaks when it rains"):
            failed, answer = await call(client, "remember", content=claim)
            assert not failed and answer["decision"] == "add", answer
            ids[claim] = answer["id"]
        failed, found = await call(client, "recall", query="locker code", mode="keyword")
        assert not failed and [r["id"] for r in found["results"]] == [locker], found
        for claim, new in (("Pending errand: pick up parcels", "The user's locker code 4471 opens locker twelve"),
                           ("Pending chore: water the ferns", "Pending chore: water the ferns in the kitchen twice")):
            failed, answer = await call(client, "update", id=ids[claim], content=new)
            assert not failed and answer["superseded"] is True, answer

    done = json.loads(arcana("memory", *edit[:1], locker, *edit[1:], "--agent", "ada", "--json"))
    assert len(done.get("reached", [])) == 1, done  # the updated claim repeating it, nothing else

    assert not [text for text in recalled("locker code 4471") if "4471" in text]
    assert "Pending chore: water the ferns in the kitchen twice" in recalled("ferns kitchen")  # updated, not repeating
    assert "The garden shed roof leaks when it rains" in recalled("garden shed roof")  # untouched own claim


@pytest.mark.parametrize("tier", [("--pool", "team"), ("--scope", "global"), ("promoted",), ("promoted", "forget")])
async def test_a_claim_quoting_a_shared_memory_is_withheld_with_it(arcana_home, tier):
    """A memory shown from a pool, the global tier, or another agent's promoted fact (its global copy)
    lives outside the agent's store, where its claim's link is kept: the operator's hide there reaches
    the claim too. Controls in the same store: a claim quoting a shared memory left visible answers."""
    keyword_only(arcana_home)
    for name in ("ada", "bob"):
        arcana("agent", "create", name)
    arcana("pool", "create", "team")
    for name in ("ada", "bob"):
        arcana("agent", "join", name, "team")
    promoted = tier[0] == "promoted"
    where = ("--agent", "bob", *(("--importance", "0.95") if promoted else tier))
    shown = json.loads(arcana("remember", "The team locker code is 4471", *where, "--json"))["id"]
    arcana("remember", "The team bike is painted teal", *where)
    async with session("--agent", "ada") as client:
        await _shown_then_claimed(client, (("locker code", "The team locker code 4471 opens locker twelve"),
                             ("bike", "The team bike painted teal is kept in the shed")))

    if tier == ("promoted", "forget"):  # bob's user's fact forgotten, its global copy with it
        done = json.loads(arcana("memory", "forget", shown, "--agent", "bob", "--json"))
        assert done["changed"], done
    else:
        edited = ("--agent", "bob") if promoted else ("--pool", "team") if tier[0] == "--pool" else ("--global",)
        done = json.loads(arcana("memory", "set", shown, *edited, "--visibility", "hidden", "--json"))
        assert len(done.get("reached", [])) == 1, done  # ada's claim quoting it, not the one quoting the bike

    assert not [text for text in recalled("locker code 4471") if "4471" in text]
    assert "The team bike painted teal is kept in the shed" in recalled("bike shed")
