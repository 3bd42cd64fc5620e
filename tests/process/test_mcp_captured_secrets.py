"""An agent's MCP `remember` and `update` are untrusted input: an obvious secret in them is not stored.

A model that was shown a key (a pasted config, a tool's output) and asked the
server to remember it had the key stored in plain text, recalled into every
later briefing. Words that only look like a key are stored as sent (the
control), and the user's own `arcana remember` keeps what was typed.
"""

from __future__ import annotations

import json

from mcp_client import call, session
from runner import arcana, keyword_only

SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE = "AIzaSyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v"
LOOKALIKE = "xox- starts a Slack token and AIza a Google key"


def contents(agent: str = "ada") -> list[str]:
    return [m["content"] for m in json.loads(arcana("memory", "list", "--agent", agent, "--all", "--json"))]


async def test_mcp_remember_and_update_store_no_secret(arcana_home):
    keyword_only(arcana_home)
    arcana("remember", f"the user keeps their own key {GOOGLE} on purpose", "--agent", "ada")
    async with session("--agent", "ada") as client:
        failed, stored = await call(client, "remember", content=f"The heron bot posts with {SLACK}; {LOOKALIKE}.",
                                    tags=[SLACK, "heron-bot"])
        assert not failed, stored
        failed, updated = await call(client, "update", id=stored["id"], content=f"The heron bot now uses {GOOGLE}; {LOOKALIKE}.")
        assert not failed, updated
    stored_text = b"".join(p.read_bytes() for p in (arcana_home.root / "agents").rglob("*.db*"))
    assert SLACK.encode() not in stored_text
    listed = json.loads(arcana("memory", "list", "--agent", "ada", "--all", "--json"))
    assert any("heron-bot" in m["tags"] for m in listed)  # control: a tag that is no secret stays
    texts = contents()
    assert f"The heron bot posts with [secret removed]; {LOOKALIKE}." in texts, texts
    assert f"The heron bot now uses [secret removed]; {LOOKALIKE}." in texts, texts
    assert f"the user keeps their own key {GOOGLE} on purpose" in texts  # control: the user's choice
