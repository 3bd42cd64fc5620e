"""An operator's hide, forget or new text of a fact reaches the other versions that share its words.

A reconciled write that says more than a stored fact ("My locker code is 4471 at the downtown gym"
after "My locker code is 4471") supersedes it: the older row stays as a version, answering
`recall --as-of` and the MCP history tool. Hiding the newer one left the same code answering there;
hiding the older one left it answering recall in the newer one's words.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from memory.agents import AgentRegistry
from runner import cli_data


@pytest.fixture
def ada(cli, no_embedder):
    assert cli("agent", "create", "ada").exit_code == 0
    return AgentRegistry(no_embedder).resolve("ada")


def remember(cli, text: str) -> dict:
    told = cli_data(cli, "remember", text, "--agent", "ada")
    time.sleep(0.05)  # the next version begins strictly after this one
    return told


def two_chains(cli) -> tuple[dict, dict, dict, dict, str]:
    """Two version chains: a code restated with more words, a city replaced by another; the first
    versions, the newer ones and a time between them."""
    first = remember(cli, "My locker code is 4471")
    berlin = remember(cli, "I live in Berlin")
    then = datetime.now(UTC).isoformat()
    time.sleep(0.05)
    newer = remember(cli, "My locker code is 4471 at the downtown gym")
    lisbon = remember(cli, "I live in Lisbon now")
    assert newer["supersedes"] == [first["id"]] and lisbon["supersedes"] == [berlin["id"]]
    return first, berlin, newer, lisbon, then


def as_of(cli, query: str, at: str) -> list[str]:
    return [h["content"] for h in cli_data(cli, "recall", query, "--agent", "ada", "--as-of", at)["results"]]


@pytest.mark.parametrize("edit", [["--visibility", "hidden"], ["--visibility", "private"],
                                  ["--content", "My locker code was changed"], "forget", "purge"])
def test_withholding_a_fact_withholds_the_versions_it_restates(cli, ada, edit):
    first, berlin, newer, lisbon, then = two_chains(cli)
    assert [t for t in as_of(cli, "locker code 4471", then) if "4471" in t] == ["My locker code is 4471"]

    for fact in (newer["id"], lisbon["id"]):
        command = ["memory", edit, fact] if isinstance(edit, str) else ["memory", "set", fact, *edit]
        done = cli(*command, "--agent", "ada", *(["--yes"] if edit == "purge" else []))
        assert done.exit_code == 0, done.output

    assert not [t for t in as_of(cli, "locker code 4471", then) if "4471" in t]
    assert not [t for t in as_of(cli, "locker code 4471", datetime.now(UTC).isoformat()) if "4471" in t]
    # control: an earlier version with words the withheld one does not say is history of its own
    assert "I live in Berlin" in as_of(cli, "live Berlin", then)




@pytest.mark.parametrize("edit", [["--visibility", "hidden"], "forget"])
def test_withholding_an_earlier_version_withholds_the_newer_one_that_repeats_it(cli, ada, edit):
    first, berlin, newer, lisbon, _ = two_chains(cli)

    for fact in (first["id"], berlin["id"]):
        command = ["memory", edit, fact] if isinstance(edit, str) else ["memory", "set", fact, *edit]
        done = cli(*command, "--agent", "ada")
        assert done.exit_code == 0, done.output

    assert not [h for h in cli_data(cli, "recall", "locker code 4471", "--agent", "ada")["results"] if "4471" in h["content"]]
    assert "4471" not in cli_data(cli, "context", "--agent", "ada")["context"]
    # control: the newer version of a fact it does not repeat answers as before
    assert "I live in Lisbon now" in [h["content"] for h in cli_data(cli, "recall", "live Lisbon", "--agent", "ada")["results"]]


def test_a_hide_an_import_brings_reaches_the_versions_it_restates(cli, ada, tmp_path):
    """An import line hiding a stored memory withholds what carries it "as `memory set` would", but
    reached no restatement: the version it replaced went on answering `--as-of` with the code."""
    first, berlin, newer, lisbon, then = two_chains(cli)
    exported = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(exported)).exit_code == 0
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    for line in lines:
        if line.get("memory", {}).get("id") in (newer["id"], lisbon["id"]):
            line["memory"].update(visibility="hidden", updated_at=datetime.now(UTC).isoformat())
    exported.write_text("".join(json.dumps(line) + "\n" for line in lines))

    imported = cli_data(cli, "import", str(exported), "--agent", "ada")
    assert imported["carriers_withheld"] == 1
    assert not [t for t in as_of(cli, "locker code 4471", then) if "4471" in t]
    assert "I live in Berlin" in as_of(cli, "live Berlin", then)  # control: a version with words of its own
