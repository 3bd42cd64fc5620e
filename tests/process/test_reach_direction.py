"""An operator's reach runs from a memory to what restates it, never from an agent's row to the user's.

Hiding or forgetting a fact reaches the newer versions and held claims that repeat its words. The
walk went both ways: an agent's claim "My locker code is 4471" that the user's own "My locker code
is 4471 at the downtown gym" replaced took the user's fact with it when the claim was forgotten.
"""

from __future__ import annotations

import json

from mcp_client import call, session
from runner import arcana, keyword_only, recalled


async def test_forgetting_an_agents_claim_leaves_the_users_fact_that_replaced_it(arcana_home):
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    bike = json.loads(arcana("remember", "My bike is painted teal", "--agent", "ada", "--json"))["id"]
    async with session("--agent", "ada") as client:
        failed, claim = await call(client, "remember", content="My locker code is 4471")
        assert not failed and claim["decision"] == "add", claim
        failed, held = await call(client, "update", id=bike, content="My bike is painted teal with white stripes")
        assert not failed and held["held_beside"] == bike, held
    told = json.loads(arcana("remember", "My locker code is 4471 at the downtown gym", "--agent", "ada", "--json"))
    assert told["supersedes"] == [claim["id"]], told

    done = json.loads(arcana("memory", "forget", claim["id"], "--agent", "ada", "--json"))
    assert done.get("reached", []) == [], done
    assert "My locker code is 4471 at the downtown gym" in recalled("locker code 4471")

    # control: forgetting the user's fact still reaches the agent's claim held beside it repeating it
    done = json.loads(arcana("memory", "forget", bike, "--agent", "ada", "--json"))
    assert [r["id"] for r in done["reached"]] == [held["id"]], done
    assert not [text for text in recalled("bike painted teal") if "teal" in text]
