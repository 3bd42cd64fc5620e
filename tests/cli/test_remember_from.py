"""``arcana remember --from FILE.jsonl``: a round trip field by field, idempotent re-imports,
bad lines named by number with every other line kept, stdin, and the batch path's vectors."""

from __future__ import annotations

import json

import pytest

from memory.operations.bulk_import import BATCH, deterministic_id, parse

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
@pytest.mark.parametrize("good", [0, 1024], ids=["only-bad-lines", "bad-lines-after-a-full-batch"])
def test_bad_lines_with_no_good_line_beside_them_are_still_named(cli, tmp_path, good):
    """A window of lines holding no good one (a file of bad lines, or bad lines after the last full
    batch) was dropped unreported: exit 0, "0 bad line(s)", and the line count stopped short."""
    lines = [{"content": f"fact number {i}"} for i in range(good)] + ["{not json", {"content": 5}]
    result = _import(cli, _file(tmp_path, lines), "--no-reconcile")
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)
    assert [b["line"] for b in report["bad"]] == [good + 1, good + 2] and report["bad_total"] == 2
    assert report["lines"] == good + 2 and report["written"] == good
    assert f"line {good + 1}: not JSON" in result.stderr and "Traceback" not in result.stderr
    if good:  # positive control: every good line is stored
        listed = cli("memory", "list", "--agent", "ada", "--json", "--limit", "2000")
        assert len(json.loads(listed.stdout)) == good


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


@pytest.mark.usefixtures("no_embedder")
def test_an_import_is_reconciled_and_a_re_run_reinforces_nothing(cli, tmp_path):
    """Every new line is decided like a `remember`; the decisions are counted; re-running the file
    (the restated line included) changes nothing, so importance does not creep."""
    known = {c: cli("remember", c, "--agent", "ada", "--json") for c in
             ("I live in Berlin.", "I have a cat named Miso.", "The office wifi password is kestrel42.")}
    ids = {c: json.loads(r.stdout)["id"] for c, r in known.items()}
    lines = [
        {"content": "I moved to Lisbon last month."},          # update: ends Berlin
        {"content": "I no longer have a cat."},                # delete: ends the cat
        {"content": "The office wifi password is kestrel42."},  # noop: reinforces, no new row
        {"content": "My sister lives in Porto."},              # add: near but different
    ]
    source = _file(tmp_path, lines)
    first = json.loads(_import(cli, source).stdout)
    assert first["decisions"] == {"add": 1, "noop": 1, "update": 1, "delete": 1}
    # the restated line stored nothing (it reinforced the wifi memory): not written, counted apart
    assert (first["lines"], first["written"], first["restated"], first["unchanged"]) == (4, 3, 1, 0)
    current = _listed(cli)
    assert set(current) == {"I moved to Lisbon last month.", "I no longer have a cat.",
                            "The office wifi password is kestrel42.", "My sister lives in Porto."}
    wifi = current["The office wifi password is kestrel42."]
    assert wifi["id"] == ids["The office wifi password is kestrel42."] and wifi["importance"] == pytest.approx(0.55)
    everything = {m["id"]: m for m in json.loads(cli("memory", "list", "--agent", "ada", "--all", "--json").stdout)}
    assert everything[ids["I live in Berlin."]]["superseded_by"] == current["I moved to Lisbon last month."]["id"]

    again = json.loads(_import(cli, source).stdout)
    assert (again["written"], again["restated"], again["unchanged"]) == (0, 0, 4)
    assert again["decisions"] == {"add": 0, "noop": 0, "update": 0, "delete": 0}
    assert _listed(cli) == current  # nothing reinforced, superseded or added again
    ops = [h["op"] for h in json.loads(cli("memory", "history", wifi["id"], "--agent", "ada", "--json").stdout)]
    assert ops == ["insert", "reinforce"]


@pytest.mark.usefixtures("no_embedder")
def test_lines_at_one_instant_keep_the_file_order(cli, tmp_path, arcana_home):
    """A history with one date per session: each window was written shortest first, so "I live in
    Lisbon now." (said second, but shorter) was decided before Berlin, which then ended it, and each
    turn's context was the shorter turn before it, not the one said before it."""
    import sqlite3

    from memory.agents import AgentRegistry

    at = {"session": "s1", "created_at": "2024-05-01T10:00:00Z"}
    said = ["I live in Berlin, Germany.", "I live in Lisbon now.",
            "Guess what happened at the animal shelter on Saturday?", "We adopted a puppy named Rex."]
    result = _import(cli, _file(tmp_path, [{"content": c, **at} for c in said]))
    assert json.loads(result.stdout)["decisions"]["update"] == 1
    assert "I live in Lisbon now." in _listed(cli) and "I live in Berlin, Germany." not in _listed(cli)
    db = arcana_home.agent_dir(AgentRegistry(arcana_home).resolve("ada").id) / "memory.db"
    with sqlite3.connect(db) as raw:
        context = dict(raw.execute("SELECT content, context FROM memories"))
    assert context[said[3]] == said[2] and context[said[2]] == said[1]  # the turn said before each


@pytest.mark.usefixtures("no_embedder")
def test_an_import_with_no_reconcile_stores_every_line_as_given(cli, tmp_path):
    first = json.loads(cli("remember", "I live in Berlin.", "--agent", "ada", "--json").stdout)
    lines = [{"content": "I moved to Lisbon last month."}, {"content": "I live in Berlin."}]
    report = json.loads(_import(cli, _file(tmp_path, lines), "--no-reconcile").stdout)
    assert report["decisions"] == {"add": 0, "noop": 0, "update": 0, "delete": 0} and report["written"] == 2
    stored = {m["id"] for m in json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)}
    assert len(stored) == 3 and first["id"] in stored  # Berlin still current; the restatement is its own row


@pytest.mark.usefixtures("no_embedder")
def test_lines_of_one_file_reconcile_with_each_other_in_the_order_they_were_said(cli, tmp_path):
    lines = [
        {"content": "I moved to Lisbon last month.", "created_at": "2024-03-01T10:00:00Z"},  # said second
        {"content": "I live in Berlin.", "created_at": "2024-01-01T10:00:00Z"},
        {"content": "The office wifi password is kestrel42.", "session": "a", "created_at": "2024-01-02T10:00:00Z"},
        {"content": "The office wifi password is kestrel42.", "session": "b", "created_at": "2024-02-02T10:00:00Z"},
        {"content": "My sister lives in Porto.", "created_at": "2024-01-03T10:00:00Z"},  # near but different
    ]
    source = _file(tmp_path, lines)
    report = json.loads(_import(cli, source).stdout)
    assert report["decisions"] == {"add": 3, "noop": 1, "update": 1, "delete": 0}
    assert (report["written"], report["restated"]) == (4, 1)  # the second wifi line restated the first
    current = _listed(cli)
    assert set(current) == {"I moved to Lisbon last month.", "The office wifi password is kestrel42.", "My sister lives in Porto."}
    assert current["The office wifi password is kestrel42."]["importance"] == pytest.approx(0.55)
    berlin = [m for m in json.loads(cli("memory", "list", "--agent", "ada", "--all", "--json").stdout) if "Berlin" in m["content"]]
    assert [m["superseded_by"] for m in berlin] == [current["I moved to Lisbon last month."]["id"]]
    again = json.loads(_import(cli, source).stdout)
    assert (again["written"], again["unchanged"], sum(again["decisions"].values())) == (0, 5, 0)
    assert _listed(cli) == current


@pytest.mark.usefixtures("no_embedder")
@pytest.mark.parametrize("flags", [["--no-reconcile"], []])
def test_a_re_run_never_brings_back_what_an_operator_forgot(cli, tmp_path, flags):
    """The same file again (or a line edited under its own id) upserts by id: the operator's forget of
    a line's memory, and of its promoted copy, must stand; the untouched line is the control."""
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    lines = [
        {"content": "The vault combination is 31-07-44.", "id": "combo-1", "importance": 0.95},
        {"content": "The lobby plant is a fern.", "id": "fern-1", "importance": 0.95},
    ]
    first = _import(cli, _file(tmp_path, lines), *flags)
    assert first.exit_code == 0 and json.loads(first.stdout)["accepted"] == {"private": 2, "global": 2}, first.output
    assert cli("memory", "forget", "combo-1", "--agent", "ada").exit_code == 0
    edited = [{**lines[0], "tags": ["safe"]}, lines[1]]  # an edited line is upserted by id even when reconciled
    for source in (_file(tmp_path, lines), _file(tmp_path, edited, "edited.jsonl")):
        again = _import(cli, source, *flags)
        assert again.exit_code == 0, again.output
        for agent in ("ada", "bob"):
            found = cli("recall", "vault combination lobby plant", "--agent", agent, "--mode", "keyword", "--json")
            contents = [r["content"] for r in json.loads(found.stdout)["results"]]
            assert "The lobby plant is a fern." in contents, (agent, contents)  # control
            assert "The vault combination is 31-07-44." not in contents, (agent, source, contents)
    shown = json.loads(cli("memory", "show", "combo-1", "--agent", "ada", "--json").stdout)
    assert shown["archived"] and shown["tags"] == ["safe"]  # the edit itself still landed


def _shown(cli, memory_id, agent="ada") -> dict:
    result = cli("memory", "show", memory_id, "--agent", agent, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("reconcile", [[], ["--no-reconcile"]])
@pytest.mark.usefixtures("no_embedder")
def test_a_line_naming_a_memory_never_undoes_what_an_operator_did_to_it(cli, tmp_path, reconcile):
    """A line that re-words a stored memory by its id rewrites its text, but the memory stays as
    the operator left it: archived (forgotten), hidden, pinned. Lifting those is `memory restore` /
    `memory set`, never an import line."""
    ids = {}
    for role, text in (("forgotten", "The old boat was blue."), ("hidden", "The door code is 4711."),
                       ("pinned", "Always answer in English."), ("plain", "The bus leaves at noon.")):
        result = cli("remember", text, "--agent", "ada", "--json")
        assert result.exit_code == 0, result.stderr
        ids[role] = json.loads(result.stdout)["id"]
    for args in (("forget", ids["forgotten"]), ("set", ids["hidden"], "--visibility", "hidden"), ("set", ids["pinned"], "--pin")):
        assert cli("memory", *args, "--agent", "ada").exit_code == 0
    lines = [{"id": ids[role], "content": f"{role}: re-worded by a file"} for role in ids]
    result = _import(cli, _file(tmp_path, lines), *reconcile)
    assert result.exit_code == 0, result.stderr
    shown = {role: _shown(cli, ids[role]) for role in ids}
    assert all(shown[role]["content"] == f"{role}: re-worded by a file" for role in ids)  # the text is the file's
    assert shown["forgotten"]["archived"] is True
    assert shown["hidden"]["visibility"] == "hidden"
    assert shown["pinned"]["pinned"] is True
    # Positive control: a memory nobody restricted is re-worded and recalled as it was before.
    assert (shown["plain"]["archived"], shown["plain"]["visibility"], shown["plain"]["pinned"]) == (False, "visible", False)
    recalled = json.loads(cli("recall", "re-worded by a file", "--agent", "ada", "--json").stdout)["results"]
    assert {r["id"] for r in recalled} == {ids["pinned"], ids["plain"]}


@pytest.mark.usefixtures("no_embedder")
@pytest.mark.parametrize("flags", [["--no-reconcile"], []])
def test_a_re_run_leaves_a_purged_memory_gone(cli, tmp_path, flags):
    """A line's id is derived from its text, so the same file again names the same memories: one the
    operator purged stays gone (counted as kept_removed), while the untouched line is the control."""
    lines = [{"content": "The old alarm code was 5521."}, {"content": "The plant by the window is a fern."}]
    source = _file(tmp_path, lines)
    assert _import(cli, source, *flags).exit_code == 0
    purged = _listed(cli)["The old alarm code was 5521."]["id"]
    assert cli("memory", "purge", purged, "--agent", "ada", "--yes").exit_code == 0
    again = _import(cli, source, *flags)
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["kept_removed"] == 1 and report["unchanged"] == 1, report
    assert list(_listed(cli)) == ["The plant by the window is a fern."]
    text = cli("remember", "--from", source, "--agent", "ada", *flags)
    assert "1 deleted or purged here stay gone" in text.stdout, text.stdout


@pytest.mark.usefixtures("no_embedder")
def test_a_pool_import_counts_the_lines_it_adds(cli, tmp_path):
    """`--pool` lines are not reconciled but are added: the report says so, and a re-run adds none."""
    assert cli("pool", "create", "team").exit_code == 0
    assert cli("agent", "join", "ada", "team").exit_code == 0
    pooled = _file(tmp_path, LINES, "pooled.jsonl")
    first = json.loads(_import(cli, pooled, "--pool", "team").stdout)
    assert (first["written"], first["decisions"]["add"]) == (4, 4)
    listed = json.loads(cli("memory", "list", "--pool", "team", "--all", "--json").stdout)
    assert len(listed) == 4
    again = json.loads(_import(cli, pooled, "--pool", "team").stdout)
    assert (again["written"], again["unchanged"], again["decisions"]["add"]) == (0, 4, 0)
    # A positive control: the same lines into the agent's own store are counted the same way.
    mine = json.loads(_import(cli, _file(tmp_path, LINES)).stdout)
    assert (mine["written"], mine["decisions"]["add"]) == (4, 4)


@pytest.mark.usefixtures("no_embedder")
def test_a_file_imported_privately_still_goes_into_a_pool(cli, tmp_path):
    """The same file into the agent's store and then into a pool: the lines' ids are the same, and the
    pool run reported them all 'unchanged' while the pool got none of them."""
    assert cli("pool", "create", "team").exit_code == 0
    assert cli("agent", "join", "ada", "team").exit_code == 0
    source = _file(tmp_path, LINES)
    assert json.loads(_import(cli, source).stdout)["written"] == 4  # positive control: the private store takes them
    pooled = json.loads(_import(cli, source, "--pool", "team").stdout)
    assert (pooled["written"], pooled["unchanged"]) == (4, 0)
    assert len(json.loads(cli("memory", "list", "--pool", "team", "--all", "--json").stdout)) == 4
    assert json.loads(_import(cli, source).stdout)["unchanged"] == 4  # a private re-run still writes nothing


@pytest.mark.usefixtures("no_embedder")
def test_with_reconciliation_off_a_re_run_adds_nothing(cli, tmp_path):
    """`memory.reconcile.strategy off` counted every line of a re-run as an add: '0 written, ... 4 add'."""
    assert cli("config", "set", "memory.reconcile.strategy", "off").exit_code == 0
    source = _file(tmp_path, LINES)
    first = json.loads(_import(cli, source).stdout)
    assert (first["written"], first["decisions"]["add"]) == (4, 4)  # positive control: a first run's adds
    again = json.loads(_import(cli, source).stdout)
    assert (again["written"], again["unchanged"], again["decisions"]["add"]) == (0, 4, 0)


@pytest.mark.usefixtures("no_embedder")
@pytest.mark.parametrize("between", [1, BATCH + 5], ids=["one-window", "two-windows"])
def test_an_id_given_twice_is_counted_once_as_repeated_and_the_last_line_stands(cli, tmp_path, between):
    """The earlier copy of a repeated id was in no count within a window (``lines`` 3, counts 2) and
    a second ``written`` across windows; now it is one ``repeated`` either way."""
    filler = [{"content": f"Filler fact number {i} about the harbour.", "id": f"filler-{i}"} for i in range(between)]
    lines = [{"content": "The gate code is 7788.", "id": "gate-code"}, *filler, {"content": "The gate code is 7789.", "id": "gate-code"}]
    result = _import(cli, _file(tmp_path, lines), "--no-reconcile")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["lines"] == len(lines) == report["written"] + report["unchanged"] + report["repeated"] + report["bad_total"]
    assert (report["written"], report["repeated"]) == (between + 1, 1)  # control: every filler line is written
    shown = cli("memory", "show", "gate-code", "--agent", "ada", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["content"] == "The gate code is 7789."
