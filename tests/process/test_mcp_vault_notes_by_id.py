"""MCP `get` reads a vault note that `recall` answered with, through the vault's own admission.

Through the official MCP client: `recall` returns notes of a vault attached to the agent, and `get`
of that id answered "no memory with id", as for an id that names nothing. A note the vault withholds
(``visibility: hidden``) is still "no memory", and `history`, which has no versions of a note, says so.
"""

from __future__ import annotations

from mcp_client import call, session
from runner import arcana, keyword_only

from memory.markdown.notes import note_id


async def test_get_reads_a_recalled_vault_note_and_not_a_withheld_one(arcana_home, make_vault):
    keyword_only(arcana_home)
    arcana("agent", "create", "bob")
    vault = make_vault({
        "Heron.md": "The heron nests by the weir.\n",
        "Secret.md": "---\nvisibility: hidden\n---\nThe heron key is under the weir stone.\n",
    })
    arcana("vault", "add", str(vault), "--name", "notes", "--agent", "bob")
    arcana("vault", "index", "notes")
    hidden = note_id("Secret.md")
    async with session("--agent", "bob") as client:
        failed, found = await call(client, "recall", query="heron weir", mode="keyword")
        assert not failed and [r["content"] for r in found["results"]] == ["Heron\n\nThe heron nests by the weir."], found
        note = found["results"][0]
        failed, got = await call(client, "get", id=note["id"])
        assert not failed, got
        assert (got["id"], got["content"], got["tier"]) == (note["id"], note["content"], note["tier"]), got

        failed, message = await call(client, "get", id=hidden)  # the vault withholds it: as an unknown id
        assert failed and message.endswith(f"no memory with id '{hidden}' among this agent's memories"), message
        failed, message = await call(client, "history", id=note["id"])
        assert failed and "a note of an attached vault" in message and "get reads it" in message, message
        failed, message = await call(client, "history", id=hidden)  # control: a withheld note is not named
        assert failed and "attached vault" not in message, message
