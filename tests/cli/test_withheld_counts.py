"""A hide reaches a chain of consolidated memories (a digest carried by a merge): every one it
withheld is counted. `memory set` said "also withheld 1" and an import "carriers_withheld": 1
when two were withheld; each count here is beside a carrier the hide must not reach."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("no_embedder")


def _line(memory_id: str, content: str, sources: list[str] | None = None, **fields) -> dict:
    record = {"memory": {"id": memory_id, "agent_id": "ada", "content": content, "type": "semantic", **fields}}
    return record | ({"sources": sources} if sources else {})


def _chain(cli, tmp_path):
    """ada: a turn, the digest carrying it, the merge carrying that digest, and an unrelated digest."""
    assert cli("agent", "create", "ada").exit_code == 0
    header = {"format": "arcana-export", "version": 1, "exported": {"agent": "ada"}, "model": None}
    records = [
        _line("turn-1", "Ada planted tomatoes in May."),
        _line("digest-1", "In May: Ada planted tomatoes.", ["turn-1"]),
        _line("merge-1", "Ada grows tomatoes.", ["digest-1"]),
        _line("other-1", "Ada likes jazz.", ["turn-2"]),
        _line("turn-2", "Ada went to a jazz club."),
    ]
    path = tmp_path / "ada.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]))
    done = cli("import", str(path), "--agent", "ada", "--json")
    assert done.exit_code == 0, done.output
    return header, path


def _visibility(cli, memory_id: str) -> str:
    return json.loads(cli("memory", "show", memory_id, "--agent", "ada", "--json").stdout)["visibility"]


def test_memory_set_counts_every_carrier_it_withheld(cli, tmp_path):
    _chain(cli, tmp_path)
    hidden = cli("memory", "set", "turn-1", "--agent", "ada", "--visibility", "hidden")
    assert hidden.exit_code == 0, hidden.output
    assert [_visibility(cli, i) for i in ("digest-1", "merge-1", "other-1")] == ["hidden", "hidden", "visible"]
    assert "also withheld 2 consolidated memories" in hidden.stderr


def test_an_import_counts_every_carrier_it_withheld(cli, tmp_path):
    header, _ = _chain(cli, tmp_path)
    hide = tmp_path / "hide.jsonl"
    hide.write_text(json.dumps(header) + "\n" + json.dumps(_line("turn-1", "Ada planted tomatoes in May.",
                                                                   visibility="hidden")) + "\n")
    report = json.loads(cli("import", str(hide), "--agent", "ada", "--json").stdout)
    assert [_visibility(cli, i) for i in ("digest-1", "merge-1", "other-1")] == ["hidden", "hidden", "visible"]
    assert report["carriers_withheld"] == 2
