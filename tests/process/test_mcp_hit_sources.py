"""Each MCP hit says whose word it is, as the `context` block's attribution does.

Through the official MCP client: an agent's `update` of a user-confirmed fact is held beside it
(``conflict_with``). recall, list and get answered the claim and the fact in one shape, so the
agent's own claim read exactly like the user's fact. Each hit now carries ``confidence_source``,
``confidence`` and, for a held claim, ``conflict_with`` naming the fact, but only while the agent
may read that fact: once an operator hides it, its id never leaves through the claim.
"""

from __future__ import annotations

import json

from mcp_client import call, session
from runner import arcana, keyword_only


def _by_content(hits: list[dict]) -> dict[str, dict]:
    return {h["content"]: h for h in hits}


async def test_a_held_claim_is_marked_beside_the_users_fact_and_a_hidden_fact_is_not_named(arcana_home):
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    fact = json.loads(arcana("remember", "My locker code is 4471", "--agent", "ada", "--json"))["id"]
    plain = json.loads(arcana("remember", "My locker is in the blue row", "--agent", "ada", "--json"))["id"]
    claim_text = "My locker code changed to 5190 at the gym"
    async with session("--agent", "ada") as client:
        failed, answer = await call(client, "update", id=fact, content=claim_text)
        assert not failed and answer["held_beside"] == fact, answer
        claim = answer["id"]

        failed, recalled = await call(client, "recall", query="locker code", mode="keyword")
        assert not failed, recalled
        failed, listed = await call(client, "list")
        assert not failed, listed
        failed, got = await call(client, "get", id=claim)
        assert not failed, got
        for hits in (recalled["results"], listed["memories"]):
            shown = _by_content(hits)
            held = shown[claim_text]
            assert (held["confidence_source"], held["conflict_with"]) == ("agent", fact), held
            assert held["confidence"] <= 0.7, held
            for user in ("My locker code is 4471", "My locker is in the blue row"):  # control: the user's own
                assert shown[user]["confidence_source"] == "user_confirmed" and "conflict_with" not in shown[user], shown[user]
        assert (got["confidence_source"], got["conflict_with"]) == ("agent", fact), got
        failed, got_plain = await call(client, "get", id=plain)
        assert not failed and got_plain["confidence_source"] == "user_confirmed" and "conflict_with" not in got_plain

    arcana("memory", "set", fact, "--visibility", "hidden", "--agent", "ada")
    async with session("--agent", "ada") as client:
        answers = [await call(client, "recall", query="locker code", mode="keyword"), await call(client, "list"),
                   await call(client, "get", id=claim), await call(client, "history", id=claim)]
    for failed, answer in answers:
        assert not failed, answer
        assert fact not in json.dumps(answer), answer  # the hidden fact's id never leaves
    recalled, listed, got, history = (a for _, a in answers)
    for hits in (recalled["results"], listed["memories"], [got], history["versions"]):
        shown = _by_content(hits)
        assert shown[claim_text]["confidence_source"] == "agent", shown  # the claim still answers, as an agent's
    assert _by_content(listed["memories"])["My locker is in the blue row"]["confidence_source"] == "user_confirmed"
