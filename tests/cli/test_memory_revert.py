"""`arcana memory revert ID --to SEQ`: a memory back to what one of its own ledger rows left, as one
more ledgered change; a row of another memory, or none, is refused and changes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memory.errors import InvalidRequestError
from memory.operator.revert import reverted_fields
from memory.types import LedgerRecord, MemoryEntry, Visibility


def ok(result) -> dict | list:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def remember(cli, text: str, *extra: str) -> str:
    return ok(cli("remember", text, "--agent", "ada", "--json", *extra))["id"]


def history(cli, memory_id: str) -> list[dict]:
    return ok(cli("memory", "history", memory_id, "--agent", "ada", "--json"))


def content(cli, memory_id: str) -> str:
    return ok(cli("memory", "show", memory_id, "--agent", "ada", "--json"))["content"]


def test_revert_restores_what_a_row_left_and_is_ledgered(cli, no_embedder):
    ok(cli("agent", "create", "ada", "--json"))
    door = remember(cli, "the heronvault door code is 5521", "--tag", "codes", "--importance", "0.6")
    inserted = history(cli, door)[0]["seq"]
    ok(cli("memory", "set", door, "--agent", "ada", "--content", "the heronvault door code is 9999",
           "--tag", "stale", "--importance", "0.2", "--json"))
    reverted = ok(cli("memory", "revert", door, "--agent", "ada", "--to", str(inserted), "--json"))
    assert (reverted["content"], reverted["tags"], reverted["importance"]) == ("the heronvault door code is 5521", ["codes"], 0.6)
    rows = history(cli, door)
    assert [r["op"] for r in rows] == ["insert", "update", "update"]  # nothing rewritten: one more change
    assert rows[-1]["after"]["content"] == "the heronvault door code is 5521"
    recalled = ok(cli("recall", "heronvault door code", "--agent", "ada", "--json"))
    assert [r["content"] for r in recalled["results"]] == ["the heronvault door code is 5521"]
    again = cli("memory", "revert", door, "--agent", "ada", "--to", str(inserted))
    assert again.exit_code == 0 and "already" in again.stderr  # a second revert changes nothing


def test_a_row_that_is_not_the_memorys_own_is_refused(cli, no_embedder):
    ok(cli("agent", "create", "ada", "--json"))
    door = remember(cli, "the heronvault door code is 5521")
    other = remember(cli, "the staging database is pg-stage-2")
    ok(cli("memory", "set", door, "--agent", "ada", "--content", "the heronvault door code is 9999", "--json"))
    for seq in (history(cli, other)[0]["seq"], 999):
        refused = cli("memory", "revert", door, "--agent", "ada", "--to", str(seq))
        assert refused.exit_code == 3, refused.output
        assert "no ledger row" in refused.stderr and refused.stdout == ""
    assert content(cli, door) == "the heronvault door code is 9999"  # unchanged
    assert len(history(cli, door)) == 2
    # positive control: the memory's own row goes through
    ok(cli("memory", "revert", door, "--agent", "ada", "--to", str(history(cli, door)[0]["seq"]), "--json"))
    assert content(cli, door) == "the heronvault door code is 5521"


def test_a_seq_below_1_is_a_usage_error_not_a_missing_row(no_embedder):
    """`--to -1` (or 0) said 'no ledger row -1', exit 3, as for a row that might have existed: a ledger seq
    starts at 1, so it is bad input (exit 2, man/exit-codes.md), through the real entry point."""
    from runner import arcana, run_arcana

    door = json.loads(arcana("remember", "the heronvault door code is 5521", "--agent", "ada", "--json"))["id"]
    arcana("memory", "set", door, "--agent", "ada", "--content", "the heronvault door code is 9999")
    for seq in ("-1", "0"):
        refused = run_arcana("memory", "revert", door, "--agent", "ada", "--to", seq)
        assert refused.returncode == 2, refused.stderr
        [line] = refused.stderr.splitlines()
        assert line.startswith("arcana: error: '--to'") and "greater than or equal to 1" in line
    # Controls: a seq that could exist but is not this memory's stays not found; its own row reverts.
    assert run_arcana("memory", "revert", door, "--agent", "ada", "--to", "999").returncode == 3
    first = json.loads(arcana("memory", "history", door, "--agent", "ada", "--json"))[0]["seq"]
    arcana("memory", "revert", door, "--agent", "ada", "--to", str(first))
    assert json.loads(arcana("memory", "show", door, "--agent", "ada", "--json"))["content"].endswith("5521")


def test_a_revert_never_lifts_a_hide(cli, no_embedder):
    ok(cli("agent", "create", "ada", "--json"))
    door = remember(cli, "the heronvault door code is 5521")
    inserted = history(cli, door)[0]["seq"]
    ok(cli("memory", "set", door, "--agent", "ada", "--content", "the heronvault door code is 9999", "--json"))
    ok(cli("memory", "set", door, "--agent", "ada", "--visibility", "hidden", "--json"))
    reverted = ok(cli("memory", "revert", door, "--agent", "ada", "--to", str(inserted), "--json"))
    assert (reverted["content"], reverted["visibility"]) == ("the heronvault door code is 5521", "hidden")
    assert ok(cli("recall", "heronvault door code", "--agent", "ada", "--json"))["results"] == []
    # positive control: lifting it on purpose works, and the reverted text is what recall then finds
    ok(cli("memory", "set", door, "--agent", "ada", "--visibility", "visible", "--json"))
    found = ok(cli("recall", "heronvault door code", "--agent", "ada", "--json"))["results"]
    assert [r["content"] for r in found] == ["the heronvault door code is 5521"]


def test_a_row_that_removed_the_memory_is_refused():
    at = datetime(2026, 1, 1, tzinfo=UTC)
    image = {"content": "x", "tags": '["a"]', "type": "semantic", "importance": 0.5, "pinned": 1, "visibility": "visible"}
    rows = [LedgerRecord(seq=1, memory_id="m", op="insert", actor="t", at=at, before=None, after=image),
            LedgerRecord(seq=2, memory_id="m", op="withdraw", actor="t", at=at, before=image, after=None)]
    current = MemoryEntry(id="m", agent_id="a", content="y", visibility=Visibility.PRIVATE)
    with pytest.raises(InvalidRequestError, match="removed the memory"):
        reverted_fields(current, rows, 2)
    # the row's own JSON tags as a list; its "visible" never loosens the current "private"
    assert reverted_fields(current, rows, 1) == {**image, "tags": ["a"], "pinned": True, "visibility": Visibility.PRIVATE}
