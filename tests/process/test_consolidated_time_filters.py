"""A merge keeps its keeper's ``created_at``: time filters must still answer for a restatement said
inside the window once it was merged into an older keeper (each beside a control)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta


def _at(days_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).isoformat().replace("+00:00", "Z")


def _remember(cli, tmp_path, lines: list[dict]) -> dict[str, str]:
    path = tmp_path / "said.jsonl"
    path.write_text("".join(json.dumps({"type": "semantic", **line}) + "\n" for line in lines))
    done = cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile")
    assert done.exit_code == 0, done.output
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    return {m["content"]: m["id"] for m in listed}


def _recall(cli, query: str, *options: str) -> list[dict]:
    done = cli("recall", query, "--agent", "ada", "--json", *options)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)["results"]


def test_a_restatement_said_this_week_answers_since_through_the_older_memory_it_merged_into(cli, tmp_path):
    ids = _remember(cli, tmp_path, [
        {"content": "I like green tea with oat milk.", "created_at": _at(40)},
        {"content": "I like green tea.", "created_at": _at(1)},  # said yesterday: merged into the older one
        {"content": "The primary cluster runs in us-east.", "created_at": _at(40)},
    ])
    done = cli("consolidate", "--agent", "ada", "--json")
    assert done.exit_code == 0, done.output
    keeper = ids["I like green tea with oat milk."]
    assert [r["id"] for r in _recall(cli, "green tea")] == [keeper]  # merged: only the keeper answers

    found = _recall(cli, "green tea", "--since", "7d")
    assert [r["id"] for r in found] == [keeper] and found[0]["sources"] == [ids["I like green tea."]]
    # control: a memory said only outside the window stays out of it, and answers without it
    assert not _recall(cli, "primary cluster", "--since", "7d")
    assert [r["id"] for r in _recall(cli, "primary cluster")] == [ids["The primary cluster runs in us-east."]]
    # as of three days ago the restatement was not said yet: the keeper is still out of the window then
    assert not _recall(cli, "green tea", "--since", "7d", "--as-of", _at(3))
    assert [r["id"] for r in _recall(cli, "green tea", "--since", "7d", "--as-of", _at(0.5))] == [keeper]
