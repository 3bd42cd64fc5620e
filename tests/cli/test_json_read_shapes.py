"""`memory list --json` and `memory history --json` give a memory the shape `memory show --json` gives it.

`memory list --json` left out a consolidated memory's ``sources`` that `memory show`, recall and the
MCP tools include; `memory history --json` printed each before/after image as its raw row (tags as a
JSON string, pinned and archived as 0/1).
"""

from __future__ import annotations

import json

import pytest
from runner import cli_data

pytestmark = pytest.mark.usefixtures("no_embedder")


def test_list_names_a_consolidated_memorys_sources(cli, tmp_path):
    assert cli("agent", "create", "ada").exit_code == 0
    header = {"format": "arcana-export", "version": 1, "exported": {"agent": "ada"}, "model": None}
    records = [
        {"memory": {"id": "turn-1", "agent_id": "ada", "content": "Ada planted tomatoes in May.", "type": "episodic"}},
        {"memory": {"id": "digest-1", "agent_id": "ada", "content": "In May: Ada planted tomatoes.", "type": "semantic"},
         "sources": ["turn-1"]},
    ]
    path = tmp_path / "ada.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]))
    assert cli("import", str(path), "--agent", "ada").exit_code == 0

    listed = {m["id"]: m for m in cli_data(cli, "memory", "list", "--agent", "ada")}
    shown = cli_data(cli, "memory", "show", "digest-1", "--agent", "ada")
    assert shown["sources"] == ["turn-1"]  # what show says
    assert listed["digest-1"]["sources"] == shown["sources"], listed["digest-1"]
    assert "sources" not in listed["turn-1"]  # control: a memory that consolidates nothing names none


def test_history_images_are_typed_as_show_gives_a_memory(cli):
    memory = cli_data(cli, "remember", "The tea is green", "--agent", "ada")
    assert cli("memory", "set", memory["id"], "--agent", "ada", "--tag", "drinks", "--pin").exit_code == 0
    assert cli("memory", "forget", memory["id"], "--agent", "ada").exit_code == 0
    shown = cli_data(cli, "memory", "show", memory["id"], "--agent", "ada")
    records = cli_data(cli, "memory", "history", memory["id"], "--agent", "ada")
    assert [r["op"] for r in records][0] == "insert" and records[0]["before"] is None
    first, last = records[0]["after"], records[-1]["after"]
    assert (first["tags"], first["pinned"], first["archived"]) == ([], False, False), first
    assert (last["tags"], last["pinned"], last["archived"]) == (["drinks"], True, True), last
    assert last == {k: shown[k] for k in last}, (last, shown)  # the last image is the memory as show gives it
    assert list(last) == [k for k in shown if k in last]  # in show's order
