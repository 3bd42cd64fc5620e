"""A restatement consolidation merged into a keeper still answers through the CLI: for the time it was said
(the keeper keeps its own ``created_at``), and when an operator shows it again after hiding it (each
beside a control)."""

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


KEYWORD = ("--mode", "keyword")  # what says the words, not every memory the model finds near them


def _shown(cli, memory_id: str) -> dict:
    done = cli("memory", "show", memory_id, "--agent", "ada", "--json")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def _set(cli, memory_id: str, visibility: str) -> None:
    done = cli("memory", "set", memory_id, "--agent", "ada", "--visibility", visibility, "--json")
    assert done.exit_code == 0, done.output


def test_a_merged_restatement_hidden_then_shown_again_answers_as_itself(cli, tmp_path):
    """Hiding a restatement consolidation merged reaches its keeper (the keeper carries its words); showing
    it again left both withheld: the keeper hidden, the restatement archived into it. It stands on its
    own again, as a restored source does; the keeper stays hidden until the operator shows it too."""
    ids = _remember(cli, tmp_path, [
        {"content": "I like green tea with oat milk."}, {"content": "I like green tea."},
        {"content": "I drink black coffee every morning at home."}, {"content": "I drink black coffee."},
    ])
    assert cli("consolidate", "--agent", "ada").exit_code == 0
    tea, keeper = ids["I like green tea."], ids["I like green tea with oat milk."]
    coffee, carrier = ids["I drink black coffee."], ids["I drink black coffee every morning at home."]
    assert _shown(cli, keeper)["sources"] == [tea] and _shown(cli, carrier)["sources"] == [coffee]

    _set(cli, tea, "hidden")
    assert not _recall(cli, "green tea", *KEYWORD) and _shown(cli, keeper)["visibility"] == "hidden"
    _set(cli, tea, "visible")
    assert [r["id"] for r in _recall(cli, "green tea", *KEYWORD)] == [tea]
    assert _shown(cli, keeper)["visibility"] == "hidden"  # the operator shows it with its own set
    _set(cli, keeper, "visible")
    assert sorted(r["id"] for r in _recall(cli, "green tea", *KEYWORD)) == sorted([tea, keeper])

    # control: a restatement shown again while what carries it answers stays carried, archived into it
    _set(cli, coffee, "private")
    assert not _recall(cli, "black coffee", *KEYWORD)
    _set(cli, carrier, "visible")
    _set(cli, coffee, "visible")
    assert [r["id"] for r in _recall(cli, "black coffee", *KEYWORD)] == [carrier]
    assert _shown(cli, coffee)["archived"] is True


def test_a_merged_memory_shown_again_shows_the_restatement_its_hide_reached(cli, tmp_path):
    """Hiding the keeper hid the restatement it absorbed (said before it, so the restatement alone answers
    `--as-of` a time between the two); showing the keeper again left the restatement hidden, and that
    answer was lost for good. Showing undoes what the hide reached; control: a restatement the operator
    hid on its own before hiding its keeper stays hidden when the keeper is shown."""
    ids = _remember(cli, tmp_path, [
        {"content": "I like green tea.", "created_at": _at(40)},
        {"content": "I like green tea with oat milk.", "created_at": _at(10)},
        {"content": "I drink black coffee.", "created_at": _at(40)},
        {"content": "I drink black coffee every morning at home.", "created_at": _at(10)},
    ])
    assert cli("consolidate", "--agent", "ada").exit_code == 0
    tea, keeper = ids["I like green tea."], ids["I like green tea with oat milk."]
    coffee, carrier = ids["I drink black coffee."], ids["I drink black coffee every morning at home."]
    assert _shown(cli, keeper)["sources"] == [tea] and _shown(cli, carrier)["sources"] == [coffee]
    assert [r["id"] for r in _recall(cli, "green tea", *KEYWORD, "--as-of", _at(20))] == [tea]

    _set(cli, keeper, "hidden")
    assert not _recall(cli, "green tea", *KEYWORD, "--as-of", _at(20))
    _set(cli, keeper, "visible")
    assert [r["id"] for r in _recall(cli, "green tea", *KEYWORD, "--as-of", _at(20))] == [tea]
    assert [r["id"] for r in _recall(cli, "green tea", *KEYWORD)] == [keeper]  # archived into it again

    _set(cli, coffee, "hidden")  # control: hidden on its own (the hide reached its carrier)
    _set(cli, carrier, "hidden")
    _set(cli, carrier, "visible")
    assert _shown(cli, coffee)["visibility"] == "hidden"
    assert not _recall(cli, "black coffee", *KEYWORD, "--as-of", _at(20))
    assert [r["id"] for r in _recall(cli, "black coffee", *KEYWORD)] == [carrier]
