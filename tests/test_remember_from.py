"""``arcana remember --from FILE.jsonl``: a round trip field by field, idempotent re-imports,
bad lines named by number with every other line kept, stdin, and the batch path's vectors."""

from __future__ import annotations

import json

import pytest

from memory.bulk import deterministic_id, parse

LINES = [
    {"content": "We booked the ryokan in Kyoto for the trip in March.", "session": "s1",
     "created_at": "2024-01-05T10:00:00Z", "tags": ["travel"], "type": "episodic"},
    {"content": "Alice prefers green tea to coffee.", "type": "semantic", "importance": 0.7, "id": "tea-1"},
    {"content": "The flight leaves on the 14th at 9am.", "session": "s1", "created_at": "2024-01-05T10:01:00+02:00"},
    {"content": "Deploys go out on Fridays after the review.", "type": "procedural", "tags": ["ops", "deploy"]},
]


def _file(tmp_path, lines, name="history.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)


def _listed(cli, agent="ada") -> dict[str, dict]:
    result = cli("memory", "list", "--agent", agent, "--json", "--limit", "1000")
    assert result.exit_code == 0, result.stderr
    return {m["content"]: m for m in json.loads(result.stdout)}


def _import(cli, source, *extra, agent="ada", input=None):
    return cli("remember", "--from", source, "--agent", agent, "--json", *extra, input=input)


@pytest.mark.usefixtures("no_embedder")
def test_a_file_round_trips_field_by_field(cli, tmp_path):
    result = _import(cli, _file(tmp_path, LINES))
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["lines"], report["written"], report["unchanged"], report["bad"]) == (4, 4, 0, [])
    stored = _listed(cli)
    assert set(stored) == {line["content"] for line in LINES}
    kyoto = stored[LINES[0]["content"]]
    assert (kyoto["type"], kyoto["tags"], kyoto["source_session_id"], kyoto["created_at"]) == (
        "episodic", ["travel"], "s1", "2024-01-05T10:00:00Z"
    )
    assert kyoto["id"] == deterministic_id(report["agent_id"], "s1", parse([json.dumps(LINES[0])], "x").entries[0].created_at,
                                           LINES[0]["content"])
    tea = stored[LINES[1]["content"]]
    assert (tea["id"], tea["type"], tea["importance"], tea["source_session_id"]) == ("tea-1", "semantic", 0.7, None)
    flight = stored[LINES[2]["content"]]
    assert flight["created_at"] == "2024-01-05T08:01:00Z"  # converted to UTC, not reinterpreted
    deploy = stored[LINES[3]["content"]]
    assert (deploy["type"], deploy["tags"]) == ("procedural", ["ops", "deploy"])


@pytest.mark.usefixtures("no_embedder")
def test_importing_twice_changes_nothing(cli, tmp_path):
    source = _file(tmp_path, LINES)
    assert _import(cli, source).exit_code == 0
    before = _listed(cli)
    history = {m["id"]: cli("memory", "history", m["id"], "--agent", "ada", "--json").stdout for m in before.values()}
    again = _import(cli, source)
    assert again.exit_code == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["written"], report["unchanged"]) == (0, 4)
    after = _listed(cli)
    assert after == before  # undated lines kept their first import time too
    assert {i: cli("memory", "history", i, "--agent", "ada", "--json").stdout for i in history} == history
    # A positive control: an edited line is written again, under its own id.
    edited = [dict(LINES[1], content="Alice prefers jasmine tea now.")] + LINES[2:]
    report = json.loads(_import(cli, _file(tmp_path, edited, "edited.jsonl")).stdout)
    assert (report["written"], report["unchanged"]) == (1, 2)
    assert _listed(cli)["Alice prefers jasmine tea now."]["id"] == "tea-1"


@pytest.mark.usefixtures("no_embedder")
def test_a_bad_line_is_named_and_every_other_line_is_kept(cli, tmp_path):
    lines = [LINES[0], LINES[1], "", "{not json", {"content": "   "}, {"content": "x", "importance": 3},
             {"content": "ok", "colour": "red"}, [1, 2], LINES[2], LINES[3]]
    result = _import(cli, _file(tmp_path, lines))
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert [(b["line"], b["reason"].split(" ")[0]) for b in report["bad"]] == [
        (4, "not"), (5, "'content'"), (6, "'importance'"), (7, "unknown"), (8, "expected")
    ]
    assert report["written"] == 4
    assert "line 4: not JSON" in result.stderr and result.stderr.count("arcana: error:") == 1
    assert "Traceback" not in result.stderr
    assert set(_listed(cli)) == {line["content"] for line in LINES}  # lines 9 and 10 came after the bad ones


@pytest.mark.usefixtures("no_embedder")
def test_stdin_and_refusals(cli, tmp_path):
    body = "".join(json.dumps(line) + "\n" for line in LINES[:2])
    result = _import(cli, "-", input=body)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["source"] == "stdin"
    assert set(_listed(cli)) == {LINES[0]["content"], LINES[1]["content"]}
    both = cli("remember", "text", "--from", "-", "--agent", "ada", input=body)
    missing = cli("remember", "--from", str(tmp_path / "nope.jsonl"), "--agent", "ada")
    assert (both.exit_code, missing.exit_code) == (2, 2)
    assert "not both" in both.stderr and "no such file" in missing.stderr
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(LINES[3]).encode() + b"\n" + '{"content": "caf\xe9"}'.encode("latin-1") + b"\n")
    result = _import(cli, str(latin))
    assert result.exit_code == 2 and json.loads(result.stdout)["bad"][0]["line"] == 2
    assert LINES[3]["content"] in _listed(cli)


def test_imported_memories_get_vectors_through_the_batch_path(cli, tmp_path, offline_embedder):
    assert _import(cli, _file(tmp_path, LINES)).exit_code == 0
    result = cli("recall", "which hot drink does she enjoy", "--agent", "ada", "--mode", "semantic",
                 "--json", "--limit", "1")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert [r["content"] for r in payload["results"]] == [LINES[1]["content"]]
    status = json.loads(cli("embeddings", "status", "--json").stdout)["databases"]
    assert [(d["rows"], d["embedded"]) for d in status if d["agent"] == "ada"] == [(4, 4)]
