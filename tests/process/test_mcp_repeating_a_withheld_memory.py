"""An agent's claim repeating a memory an operator hid or forgot is stored withheld the same way.

Through the official MCP client: after `memory set --visibility hidden` (or `memory forget`) of "My
locker code is 4471", an agent's `remember` of "The user's locker code is 4471 at the gym" stored a
new visible row, so the hidden code answered recall again in the agent's words. The controls in the
same store: the user's own `arcana remember` of the same words stays visible (the user's choice), and
an agent's claim repeating nothing withheld answers as before.
"""

from __future__ import annotations

import json

import pytest
from mcp_client import call, session
from runner import arcana, keyword_only, recalled


def _withheld_locker(arcana_home, edit: tuple[str, ...]) -> str:
    """ada's locker code, said by the user, then withheld by the operator's ``edit``: its id."""
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    locker = json.loads(arcana("remember", "My locker code is 4471", "--agent", "ada", "--json"))["id"]
    arcana("memory", edit[0], locker, *edit[1:], "--agent", "ada")
    return locker


@pytest.mark.parametrize("edit", [("set", "--visibility", "hidden"), ("forget",)])
async def test_an_agent_repeating_a_withheld_memory_stores_it_withheld(arcana_home, edit):
    locker = _withheld_locker(arcana_home, edit)
    async with session("--agent", "ada") as client:
        claims = []
        for claim in ("The user's locker code is 4471 at the gym", "The bike painted teal is kept in the shed"):
            failed, answer = await call(client, "remember", content=claim)
            assert not failed, answer
            claims.append(answer["id"])

    assert not [text for text in recalled("locker code 4471") if "4471" in text]
    assert "The bike painted teal is kept in the shed" in recalled("bike teal shed")  # control: repeats nothing withheld
    async with session("--agent", "ada") as client:
        failed, found = await call(client, "recall", query="locker code 4471", mode="keyword")
        assert not failed and not [r for r in found["results"] if "4471" in r["content"]]

    # Kept, withheld as the memory is, and linked to it for the operator who shows that memory again.
    stored = json.loads(arcana("memory", "show", claims[0], "--agent", "ada", "--json"))
    assert (stored["visibility"], stored["archived"]) == (("hidden", False) if edit[0] == "set" else ("visible", True))
    assert stored["sources"] == [locker], stored

    arcana("remember", "My locker code is 4471 at the pool", "--agent", "ada")  # control: the user's own words
    assert "My locker code is 4471 at the pool" in recalled("locker code 4471")


async def test_an_agent_repeating_a_pruned_memory_stores_it_visible(arcana_home):
    """Prune archives what seemed of little worth, not what an operator withheld: an agent saying
    its words again makes them worth keeping. The control: a forgotten memory in the same store."""
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    arcana("remember", "My gym locker is twelve", "--importance", "0.1", "--agent", "ada")
    forgotten = json.loads(arcana("remember", "My bike is painted teal", "--agent", "ada", "--json"))["id"]
    pruned = json.loads(arcana("prune", "--agent", "ada", "--min-importance", "0.2", "--json"))
    assert "archived" in json.dumps(pruned), pruned
    arcana("memory", "forget", forgotten, "--agent", "ada")
    async with session("--agent", "ada") as client:
        for claim in ("The user's gym locker is twelve downstairs", "The user's bike is painted teal"):
            failed, answer = await call(client, "remember", content=claim)
            assert not failed, answer

    assert "The user's gym locker is twelve downstairs" in recalled("gym locker twelve")
    assert not [text for text in recalled("bike painted teal") if "teal" in text]


def test_a_host_save_repeating_a_hidden_memory_stores_it_hidden(arcana_home, tmp_path):
    """`arcana host save` stores what the person said in a host's session as the agent's claims (and
    the session's summary): one repeating a memory an operator hid is stored hidden too, while the
    person's other preference in the same transcript (the control) answers recall."""
    keyword_only(arcana_home)
    arcana("agent", "create", "dev")
    fixtures = json.loads(arcana("remember", "I prefer pytest fixtures", "--agent", "dev", "--json"))["id"]
    arcana("memory", "set", fixtures, "--visibility", "hidden", "--agent", "dev")
    transcript = tmp_path / "session.jsonl"
    lines = []
    for said, answered in (("I prefer pytest fixtures over setUp methods.", "Noted."),
                           ("I prefer tabs over spaces in the Makefile.", "Understood.")):
        lines += [{"type": kind, "message": {"role": kind, "content": text}, "sessionId": "s1", "cwd": "/p",
                   "uuid": f"{len(lines):08x}", "timestamp": "2026-12-01T10:00:00Z"}
                  for kind, text in (("user", said), ("assistant", answered))]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    hook = {"session_id": "s1", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
    saved = json.loads(arcana("host", "save", "claude-code", "--agent", "dev", "--json", stdin=json.dumps(hook)))
    assert len(saved["stored"]) == 2, saved

    recalled = [r["content"] for r in json.loads(arcana("recall", "prefer", "--agent", "dev", "--json"))["results"]]
    assert not [text for text in recalled if "fixtures" in text], recalled
    assert "I prefer tabs over spaces in the Makefile." in recalled  # control: repeats nothing hidden


@pytest.mark.parametrize("edit", [("set", "--visibility", "hidden"), ("forget",)])
async def test_an_update_repeating_a_withheld_memory_is_refused_and_keeps_the_old_text(arcana_home, edit):
    """An agent's `update` whose new text repeats a memory an operator withheld ended its own visible
    fact and stored the new version withheld: neither answered, so an agent could make what it said
    vanish by writing hidden words. It is refused now, naming neither the withheld memory nor its words,
    and the old version stays current. The control in the same store: an update repeating nothing
    withheld replaces its memory as before."""
    locker = _withheld_locker(arcana_home, edit)
    async with session("--agent", "ada") as client:
        ids = []
        for claim in ("The user trains at the gym on Mondays", "The user walks the dog at seven"):
            failed, answer = await call(client, "remember", content=claim)
            assert not failed, answer
            ids.append(answer["id"])
        gym, dog = ids
        failed, refused = await call(client, "update", id=gym, content="The user's locker code is 4471 at the gym on Mondays")
        assert failed and "withheld" in refused and "not updated" in refused, refused
        assert locker not in refused and "4471" not in refused and "My locker" not in refused, refused
        failed, moved = await call(client, "update", id=dog, content="The user walks the dog at eight")  # control
        assert not failed and moved["superseded"], moved

    assert "The user trains at the gym on Mondays" in recalled("gym Mondays")
    assert "The user walks the dog at eight" in recalled("dog walks")
    assert "The user walks the dog at seven" not in recalled("dog walks")
    everything = json.loads(arcana("memory", "list", "--agent", "ada", "--all", "--archived", "--json"))
    assert not [m for m in everything if "on Mondays" in m["content"] and "4471" in m["content"]], everything
