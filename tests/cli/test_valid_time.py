"""Valid time (issue 21 item 1): a supersession ends the old version when the new fact was said
(its ``valid_from``, else ``created_at``), not when its row was written, on the live path, on a
backdated ``remember --from`` (one file or two runs, in or out of order) and after ``import``."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

BERLIN = {"content": "I live in Berlin", "created_at": "2024-01-01T10:00:00Z"}
LISBON = {"content": "I moved to Lisbon", "created_at": "2024-03-01T10:00:00Z"}


def data(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _file(tmp_path, name, *lines) -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def everything(cli, agent="ada") -> dict[str, dict]:
    return {m["content"]: m for m in data(cli("memory", "list", "--agent", agent, "--all", "--json"))}


def answers(cli, query, *extra, agent="ada") -> list[str]:
    return [r["content"] for r in data(cli("recall", query, "--agent", agent, "--json", *extra))["results"]]


def test_a_backdated_import_ends_berlin_when_lisbon_was_said(cli, tmp_path):
    """The issue's reproduction, with the default offline model and its own query."""
    report = data(cli("remember", "--from", _file(tmp_path, "h.jsonl", BERLIN, LISBON), "--agent", "ada", "--json"))
    assert report["decisions"]["update"] == 1
    for when in ("2024-06-01", "2025-06-01"):
        assert answers(cli, "where do I live", "--as-of", when)[0] == "I moved to Lisbon"
    assert answers(cli, "where do I live", "--as-of", "2024-02-01") == ["I live in Berlin"]
    assert answers(cli, "where do I live", "--as-of", "2023-12-01") == []  # nothing was said yet
    berlin = everything(cli)["I live in Berlin"]
    chain = data(cli("memory", "history", berlin["id"], "--agent", "ada", "--versions", "--json"))
    assert [(v["content"], v["valid_to"]) for v in chain] == [
        ("I live in Berlin", "2024-03-01T10:00:00Z"), ("I moved to Lisbon", None)
    ]
    assert chain[1]["valid_from"] == "2024-03-01T10:00:00Z"
    table = cli("memory", "history", berlin["id"], "--agent", "ada", "--versions").stdout
    assert "2024-03-01T10:00:00+00:00  superseded" in table


@pytest.mark.usefixtures("no_embedder")
def test_the_live_path_ends_the_old_version_when_the_new_one_was_said(cli):
    """Live, "said" and "written" are the same moment: the old version ends as the new one is stored."""
    before = datetime.now(UTC)
    cli("remember", "I live in Berlin.", "--agent", "ada")
    time.sleep(0.05)
    cli("remember", "I moved to Lisbon last month.", "--agent", "ada")
    after = datetime.now(UTC)
    rows = everything(cli)
    berlin, lisbon = rows["I live in Berlin."], rows["I moved to Lisbon last month."]
    ended = datetime.fromisoformat(berlin["valid_to"])
    assert before < ended < after
    assert berlin["valid_to"] == lisbon["valid_from"] == lisbon["created_at"]
    assert answers(cli, "live Berlin Lisbon") == ["I moved to Lisbon last month."]


@pytest.mark.usefixtures("no_embedder")
def test_two_backdated_runs_end_the_stored_version_when_the_new_line_was_said(cli, tmp_path):
    """The second line meets Berlin in the store (not in the same file): the same valid time."""
    cli("remember", "--from", _file(tmp_path, "a.jsonl", BERLIN), "--agent", "ada")
    cli("remember", "--from", _file(tmp_path, "b.jsonl", LISBON), "--agent", "ada")
    berlin = everything(cli)["I live in Berlin"]
    assert berlin["valid_to"] == "2024-03-01T10:00:00Z" and berlin["superseded_by"]
    assert answers(cli, "live Berlin Lisbon", "--as-of", "2024-02-01") == ["I live in Berlin"]
    assert answers(cli, "live Berlin Lisbon", "--as-of", "2024-06-01") == ["I moved to Lisbon"]


@pytest.mark.usefixtures("no_embedder")
def test_an_older_statement_imported_late_never_ends_the_newer_fact(cli, tmp_path):
    """Lisbon (March) is stored first; Berlin (January) arrives afterwards. Berlin becomes the
    version before Lisbon, ended when Lisbon began: Lisbon still answers now."""
    cli("remember", "--from", _file(tmp_path, "a.jsonl", LISBON), "--agent", "ada")
    cli("remember", "--from", _file(tmp_path, "b.jsonl", BERLIN), "--agent", "ada")
    rows = everything(cli)
    berlin, lisbon = rows["I live in Berlin"], rows["I moved to Lisbon"]
    assert lisbon["valid_to"] is None and lisbon["supersedes"] == berlin["id"]
    assert (berlin["valid_to"], berlin["superseded_by"]) == ("2024-03-01T10:00:00Z", lisbon["id"])
    assert answers(cli, "live Berlin Lisbon") == ["I moved to Lisbon"]
    assert answers(cli, "live Berlin Lisbon", "--as-of", "2024-02-01") == ["I live in Berlin"]
    chain = data(cli("memory", "history", lisbon["id"], "--agent", "ada", "--versions", "--json"))
    assert [v["content"] for v in chain] == ["I live in Berlin", "I moved to Lisbon"]


@pytest.mark.usefixtures("no_embedder")
def test_an_import_keeps_the_valid_times(cli, tmp_path, monkeypatch):
    """``export`` then ``import`` into a fresh home: the same answers at the same moments."""
    cli("remember", "--from", _file(tmp_path, "h.jsonl", BERLIN, LISBON), "--agent", "ada")
    dump = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(dump)).exit_code == 0
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("ARCANA_HOME", str(fresh))
    fresh.mkdir()
    (fresh / "config.json").write_text(json.dumps({"embedding": {"providers": []}}))
    assert cli("import", str(dump), "--agent", "ada").exit_code == 0
    assert answers(cli, "live Berlin Lisbon", "--as-of", "2024-02-01") == ["I live in Berlin"]
    assert answers(cli, "live Berlin Lisbon", "--as-of", "2025-06-01") == ["I moved to Lisbon"]
    assert answers(cli, "live Berlin Lisbon") == ["I moved to Lisbon"]
    assert everything(cli)["I live in Berlin"]["valid_to"] == "2024-03-01T10:00:00Z"


@pytest.fixture(params=["sqlite", "postgres"])
async def engine_store(request, tmp_path):
    from engines import open_store

    adapter = open_store(request.param, tmp_path, request)
    await adapter.connect()
    yield adapter
    await adapter.aclose()


async def test_the_supersession_ends_at_the_time_it_is_given(engine_store):
    """The adapter's contract on both engines: ``at`` is the valid time; a version that began
    after ``at`` is not ended, the new row ends before it instead."""
    from memory.types import Audience, MemoryEntry

    store = engine_store

    def said(text, day):
        return MemoryEntry(agent_id="a", content=text, created_at=datetime(2024, 1, day, tzinfo=UTC))

    old, new, older = said("old", 10), said("new", 20), said("older", 5)
    await store.write_many([old, new, older])
    assert await store.supersede([old.id], new.id, new.created_at) == [old.id]
    assert await store.get(old.id) is None  # recall no longer sees it ...
    ended = await store.get(old.id, audience=Audience.OPERATOR)
    assert ended.valid_to == new.created_at  # ... ended when "new" was said, not now
    assert (await store.get(new.id)).valid_from == new.created_at
    assert await store.supersede([new.id], older.id, older.created_at) == []  # "new" began after "older"
    kept = await store.get(new.id)
    late = await store.get(older.id, audience=Audience.OPERATOR)
    assert kept.valid_to is None and kept.supersedes == old.id  # its own predecessor link is kept
    assert (late.valid_to, late.superseded_by) == (new.created_at, new.id)


async def test_a_version_stamped_ahead_of_this_clock_is_ended_by_a_fact_said_now(engine_store):
    """A row whose time is still to come (a line from a machine whose clock ran ahead, or this
    clock stepped back since) was kept current over the update said now, which ended itself instead;
    a row from the past that began after ``at`` (the control) still stays."""
    from datetime import timedelta

    from memory.types import Audience, MemoryEntry

    store = engine_store
    now = datetime.now(UTC)
    ahead = MemoryEntry(agent_id="a", content="ahead", created_at=now + timedelta(hours=1))
    past = MemoryEntry(agent_id="a", content="past", created_at=now - timedelta(days=1))
    update, late = (MemoryEntry(agent_id="a", content=t, created_at=at) for t, at in
                    (("update", now), ("late", now - timedelta(days=2))))
    await store.write_many([ahead, past, update, late])
    assert await store.supersede([ahead.id], update.id, update.created_at) == [ahead.id]
    assert await store.get(ahead.id) is None and (await store.get(update.id)).valid_to is None
    ended = await store.get(ahead.id, audience=Audience.OPERATOR)
    assert (ended.valid_to, ended.superseded_by) == (update.created_at, update.id)
    assert await store.supersede([past.id], late.id, late.created_at) == []  # the control: "past" is newer
    assert (await store.get(past.id)).valid_to is None and await store.get(late.id) is None


@pytest.mark.usefixtures("no_embedder")
def test_the_user_moving_ends_a_fact_stamped_ahead_of_this_clock(cli, tmp_path):
    """Berlin came from a machine whose clock ran an hour ahead; "I moved to Lisbon", said now, was
    decided an update and yet ended itself (supersedes []), and recall kept answering Berlin. The
    control: an older statement imported late (bob, 2024) still never ends the newer fact."""
    from datetime import timedelta

    ahead = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    cli("remember", "--from", _file(tmp_path, "ahead.jsonl", {**BERLIN, "created_at": ahead}), "--agent", "ada")
    moved = data(cli("remember", "I moved to Lisbon", "--agent", "ada", "--json"))
    berlin = everything(cli)["I live in Berlin"]
    assert moved["decision"] == "update" and moved["supersedes"] == [berlin["id"]]
    assert answers(cli, "live Berlin Lisbon") == ["I moved to Lisbon"]
    cli("remember", "--from", _file(tmp_path, "a.jsonl", LISBON), "--agent", "bob")
    cli("remember", "--from", _file(tmp_path, "b.jsonl", BERLIN), "--agent", "bob")
    assert answers(cli, "live Berlin Lisbon", agent="bob") == ["I moved to Lisbon"]
