"""A later export of the same store, imported again, brings the versions that ended since: the fact
the source replaced ends here too, so recall answers the new one alone, and `--as-of` the old one
before the change. An older file imported after a newer one never makes an ended version current
again. Real homes, the real Typer app, SQLite (the PostgreSQL pool: test_postgres_import_versions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_export_round_trip import data, fresh_home, ok


def current(cli, *where: str) -> set[str]:
    rows = data(cli("memory", "list", *(where or ("-a", "ada")), "--all", "--json"))
    return {r["content"] for r in rows if r["valid_to"] is None and r["superseded_by"] is None and not r["archived"]}


def answers(cli, *at: str) -> list[str]:
    got = data(cli("recall", "where do I live", "-a", "ada", *at, "--json"))
    return [r["content"] for r in got["results"] if "live" in r["content"]]


@pytest.mark.parametrize("importance", ["0.5", "0.9"], ids=["private", "promoted"])
def test_a_later_export_ends_here_what_the_source_replaced(cli, tmp_path: Path, monkeypatch, importance):
    fresh_home(tmp_path, monkeypatch, "source")
    ok(cli("remember", "I live in Berlin", "-a", "ada", "--importance", importance))
    ok(cli("remember", "I have a cat named Miso", "-a", "ada"))
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    ok(cli("export", "--all", "-o", str(before)))
    moved = data(cli("remember", "I moved to Lisbon, I live in Lisbon now", "-a", "ada", "--importance", importance, "--json"))
    assert moved["decision"] == "update"
    ok(cli("export", "--all", "-o", str(after)))
    lines = [json.loads(line) for line in after.read_text().splitlines()]
    said = {m["content"]: m for m in (line["memory"] for line in lines if "memory" in line)}
    between = said["I have a cat named Miso"]["created_at"]  # after Berlin was said, before the move
    assert said["I live in Berlin"]["valid_to"] > between

    fresh_home(tmp_path, monkeypatch, "copy")
    ok(cli("import", str(before)))
    assert current(cli) == {"I live in Berlin", "I have a cat named Miso"}
    ok(cli("import", str(after)))
    assert current(cli) == {"I moved to Lisbon, I live in Lisbon now", "I have a cat named Miso"}  # the cat: control
    assert answers(cli) == ["I moved to Lisbon, I live in Lisbon now"]
    assert answers(cli, "--as-of", between) == ["I live in Berlin"]
    if importance == "0.9":  # the global copy follows its original
        assert current(cli, "--global") == {"I moved to Lisbon, I live in Lisbon now"}
    ok(cli("import", str(before)))  # the older file again: Berlin stays ended
    assert current(cli) == {"I moved to Lisbon, I live in Lisbon now", "I have a cat named Miso"}
