"""An agent's claim held beside a user's fact that repeats it is withheld with the fact.

Through the official MCP client: an agent's `update` of a user-confirmed fact never ends it, its new
text is held beside it (``conflict_with``). "My locker code is 4471 at the downtown gym", held beside
"My locker code is 4471", went on answering recall with the code after an operator hid or forgot
the fact. A claim with words of its own beside another hidden fact (the control) answers as before.
"""

from __future__ import annotations

import json

import pytest
from mcp_client import call, session
from runner import arcana, keyword_only, recalled


@pytest.mark.parametrize("edit", [("set", "--visibility", "hidden"), ("forget",), ("purge", "--yes")])
async def test_a_claim_repeating_a_hidden_fact_is_withheld_with_it(arcana_home, edit):
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    locker = json.loads(arcana("remember", "My locker code is 4471", "--agent", "ada", "--json"))["id"]
    bike = json.loads(arcana("remember", "My bike is painted teal", "--agent", "ada", "--json"))["id"]
    async with session("--agent", "ada") as client:
        for fact, content in ((locker, "My locker code is 4471 at the downtown gym"), (bike, "My bike is painted red now")):
            failed, answer = await call(client, "update", id=fact, content=content)
            assert not failed and answer["held_beside"] == fact, answer

    for fact in (locker, bike):
        arcana("memory", edit[0], fact, *edit[1:], "--agent", "ada")

    assert not [text for text in recalled("locker code 4471") if "4471" in text]
    assert "My bike is painted red now" in recalled("bike painted red")  # control: words of its own
    async with session("--agent", "ada") as client:
        failed, found = await call(client, "recall", query="locker code 4471", mode="keyword")
        assert not failed and not [r for r in found["results"] if "4471" in r["content"]]
