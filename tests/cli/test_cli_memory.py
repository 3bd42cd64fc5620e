"""The memory commands through the real Typer app: remember, recall, memory
list/show/forget/restore/purge/set/history, init and doctor."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest

pytestmark = pytest.mark.usefixtures("no_embedder")


def remember(cli, text: str, *options: str, agent: str = "ada") -> str:
    result = cli("remember", text, "--agent", agent, *options)
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


def recall(cli, query: str, *options: str, agent: str = "ada") -> list[dict]:
    result = cli("recall", query, "--agent", agent, "--mode", "keyword", "--json", *options)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["results"]


def contents(results: list[dict]) -> list[str]:
    return [r["content"] for r in results]


# -- remember ---------------------------------------------------------------------


def test_remember_prints_only_the_new_id(cli):
    result = cli("remember", "the kettle is blue", "--agent", "ada")
    assert result.exit_code == 0
    memory_id = result.stdout.strip()
    assert result.stdout == memory_id + "\n" and len(memory_id) == 36
    shown = json.loads(cli("memory", "show", memory_id, "--agent", "ada", "--json").stdout)
    assert (shown["content"], shown["type"], shown["importance"]) == ("the kettle is blue", "semantic", 0.5)


def test_remember_options_are_stored(cli):
    memory_id = remember(cli, "deploys go out on fridays", "--type", "procedural", "--importance", "0.8", "--pin",
                         "--tag", "ops", "--tag", "#deploy", "--visibility", "private")
    shown = json.loads(cli("memory", "show", memory_id, "--agent", "ada", "--json").stdout)
    assert (shown["type"], shown["importance"], shown["pinned"], shown["tags"], shown["visibility"]) == (
        "procedural", 0.8, True, ["ops", "deploy"], "private"
    )


@pytest.mark.parametrize("args", [(), ("-",)])
def test_remember_reads_stdin(cli, args):
    result = cli("remember", *args, "--agent", "ada", input="  piped in from a script\n")
    assert result.exit_code == 0, result.stderr
    assert contents(recall(cli, "piped script")) == ["piped in from a script"]


@pytest.mark.parametrize("args, stdin", [(("   ",), None), ((), ""), ((), "  \n ")])
def test_remember_rejects_empty_text(cli, args, stdin):
    result = cli("remember", *args, "--agent", "ada", input=stdin)
    assert result.exit_code == 2 and "empty" in result.stderr


def test_remember_json(cli):
    result = cli("remember", "json please", "--agent", "ada", "--json")
    payload = json.loads(result.stdout)
    assert payload["agent"] == "ada" and len(payload["id"]) == 36


# -- recall -----------------------------------------------------------------------


def test_recall_table_has_the_promised_columns(cli):
    remember(cli, "the kettle is blue", "--importance", "0.7")
    result = cli("recall", "kettle", "--agent", "ada", "--mode", "keyword")
    assert result.exit_code == 0
    header = result.stdout.splitlines()[0].split()
    assert {"score", "type", "age"} <= set(header) and any(h.startswith("imp") for h in header)
    assert "the kettle is blue" in result.stdout and "0.70" in result.stdout


def test_recall_json_is_clean_and_ranked(cli):
    remember(cli, "coffee once in a long sentence about trains and weather and more")
    remember(cli, "coffee coffee coffee")
    result = cli("recall", "coffee", "--agent", "ada", "--mode", "keyword", "--json")
    payload = json.loads(result.stdout)  # nothing but JSON on stdout
    assert payload["query"] == "coffee"
    assert contents(payload["results"])[0] == "coffee coffee coffee"
    assert payload["results"][0]["score"] >= payload["results"][1]["score"]


def test_recall_excludes_private_and_hidden_but_list_all_shows_them(cli):
    remember(cli, "lantern visible")
    remember(cli, "lantern private", "--visibility", "private")
    remember(cli, "lantern hidden", "--visibility", "hidden")
    assert contents(recall(cli, "lantern")) == ["lantern visible"]
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    assert contents(listed) == ["lantern visible"]
    everything = json.loads(cli("memory", "list", "--agent", "ada", "--all", "--json").stdout)
    assert sorted(contents(everything)) == ["lantern hidden", "lantern private", "lantern visible"]


def test_recall_filters_with_positive_controls(cli):
    remember(cli, "filter probe preference", "--type", "preference")
    remember(cli, "filter probe episodic", "--type", "episodic")
    assert len(recall(cli, "probe")) == 2
    assert contents(recall(cli, "probe", "--type", "preference")) == ["filter probe preference"]
    assert len(recall(cli, "probe", "--since", "1h")) == 2
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    assert recall(cli, "probe", "--since", tomorrow) == []
    assert len(recall(cli, "probe", "--min-confidence", "1.0")) == 2
    assert len(recall(cli, "probe", "--limit", "1")) == 1


def test_recall_bad_since_is_a_usage_error(cli):
    remember(cli, "anything")
    result = cli("recall", "x", "--agent", "ada", "--since", "last tuesday")
    assert result.exit_code == 2 and "--since" in result.stderr


def test_recall_unknown_agent_is_exit_3(cli):
    result = cli("recall", "x", "--agent", "nobody")
    assert result.exit_code == 3 and result.stdout == ""


def test_recall_nothing_found_is_success_with_a_note(cli):
    remember(cli, "something")
    result = cli("recall", "zebra", "--agent", "ada", "--mode", "keyword")
    assert result.exit_code == 0 and "no memories matched" in result.stderr


# -- memory -------------------------------------------------------------------------


def test_memory_show_by_prefix(cli):
    memory_id = remember(cli, "prefix lookup")
    shown = cli("memory", "show", memory_id[:8], "--agent", "ada")
    assert shown.exit_code == 0 and memory_id in shown.stdout and "prefix lookup" in shown.stdout
    missing = cli("memory", "show", "ffffffff", "--agent", "ada")
    assert missing.exit_code == 3


def test_an_ambiguous_prefix_says_how_many_it_matches(cli, tmp_path):
    """It said "ambiguous (5 matches)" of a prefix 60 memories share (the lookup stopped at 5): now it
    reads up to 50 and says "50 or more" at that cap; a count under the cap is exact, and a
    unique prefix still resolves (the controls), live or purged (the ledger's ids)."""
    lines = [json.dumps({"id": f"abcdef-{i:03}", "content": f"numbered note {i}"}) for i in range(60)]
    (tmp_path / "ids.jsonl").write_text("\n".join(lines) + "\n")
    assert cli("remember", "--from", str(tmp_path / "ids.jsonl"), "--agent", "ada", "--no-reconcile").exit_code == 0
    many = cli("memory", "show", "abcdef", "--agent", "ada")
    assert many.exit_code == 3 and "is ambiguous (50 or more matches)" in many.stderr
    some = cli("memory", "show", "abcdef-00", "--agent", "ada")
    assert some.exit_code == 3 and "is ambiguous (10 matches)" in some.stderr
    assert "numbered note 7" in cli("memory", "show", "abcdef-007", "--agent", "ada").stdout
    assert cli("prune", "--agent", "ada", "--max-entries", "0", "--mode", "purge", "--yes").exit_code == 0
    assert cli("memory", "show", "abcdef-007", "--agent", "ada").exit_code == 3  # purged: its ledger remains
    purged = cli("memory", "history", "abcdef-0", "--agent", "ada")
    assert purged.exit_code == 3 and "is ambiguous (50 or more matches)" in purged.stderr
    assert cli("memory", "history", "abcdef-007", "--agent", "ada", "--json").exit_code == 0


def test_forget_restore_purge_and_history(cli):
    keep = remember(cli, "harbour keeper")
    memory_id = remember(cli, "harbour lifecycle")
    assert cli("memory", "forget", memory_id, "--agent", "ada").exit_code == 0
    assert contents(recall(cli, "harbour")) == ["harbour keeper"]
    archived = json.loads(cli("memory", "list", "--agent", "ada", "--archived", "--json").stdout)
    assert {r["id"]: r["archived"] for r in archived}[memory_id] is True

    assert cli("memory", "restore", memory_id[:10], "--agent", "ada").exit_code == 0
    assert sorted(contents(recall(cli, "harbour"))) == ["harbour keeper", "harbour lifecycle"]

    refused = cli("memory", "purge", memory_id, "--agent", "ada")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert len(recall(cli, "harbour")) == 2
    assert cli("memory", "purge", memory_id, "--agent", "ada", "--yes").exit_code == 0
    assert contents(recall(cli, "harbour")) == ["harbour keeper"]
    assert cli("memory", "show", memory_id, "--agent", "ada").exit_code == 3

    history = json.loads(cli("memory", "history", memory_id, "--agent", "ada", "--json").stdout)
    assert [h["op"] for h in history] == ["insert", "archive", "restore", "purge"]
    assert all(h["actor"].startswith("cli") for h in history)
    table = cli("memory", "history", memory_id, "--agent", "ada").stdout
    assert "archive" in table and "purge" in table
    assert [h["op"] for h in json.loads(cli("memory", "history", keep, "--agent", "ada", "--json").stdout)] == ["insert"]


def test_forget_twice_says_already(cli):
    memory_id = remember(cli, "twice")
    assert cli("memory", "forget", memory_id, "--agent", "ada").exit_code == 0
    again = cli("memory", "forget", memory_id, "--agent", "ada", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["changed"] is False


def test_memory_set(cli):
    memory_id = remember(cli, "beacon editable")
    result = cli("memory", "set", memory_id, "--agent", "ada", "--importance", "0.9", "--pin", "--tag", "x",
                 "--json")
    assert result.exit_code == 0
    changed = json.loads(result.stdout)
    assert (changed["importance"], changed["pinned"], changed["tags"]) == (0.9, True, ["x"])
    assert cli("memory", "set", memory_id, "--agent", "ada", "--visibility", "hidden").exit_code == 0
    assert recall(cli, "beacon") == []
    assert cli("memory", "set", memory_id, "--agent", "ada", "--visibility", "visible",
               "--content", "beacon rewritten").exit_code == 0
    assert contents(recall(cli, "rewritten")) == ["beacon rewritten"]
    nothing = cli("memory", "set", memory_id, "--agent", "ada")
    assert nothing.exit_code == 2
    ops = [h["op"] for h in json.loads(cli("memory", "history", memory_id, "--agent", "ada", "--json").stdout)]
    assert ops == ["insert", "update", "visibility", "update"]


def test_memory_list_orders_pinned_then_importance(cli):
    remember(cli, "low", "--importance", "0.1")
    remember(cli, "high", "--importance", "0.9")
    remember(cli, "pinned", "--importance", "0.2", "--pin")
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    assert contents(listed) == ["pinned", "high", "low"]
    assert len(json.loads(cli("memory", "list", "--agent", "ada", "--limit", "2", "--json").stdout)) == 2


# -- init and doctor ------------------------------------------------------------------


def test_init_is_idempotent_and_never_overwrites(cli, arcana_home):
    arcana_home.config_path.unlink()
    first = cli("init", "--json")
    assert first.exit_code == 0 and json.loads(first.stdout)["created"] is True
    assert oct(os.stat(arcana_home.root).st_mode & 0o777) == "0o700"
    assert cli("config", "set", "recall.limit", "7").exit_code == 0
    before = arcana_home.config_path.read_bytes()
    second = cli("init", "--json")
    assert second.exit_code == 0 and json.loads(second.stdout)["created"] is False
    assert arcana_home.config_path.read_bytes() == before


def test_doctor_healthy_home(cli):
    assert cli("init").exit_code == 0
    remember(cli, "a healthy memory")
    result = cli("doctor", "--json")
    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["healthy"] is True
    names = {c["name"] for c in report["checks"]}
    assert {"round trip", "fts5", "config"} <= names


def test_doctor_names_the_corrupt_database(cli, arcana_home):
    assert cli("init").exit_code == 0
    remember(cli, "fine", agent="good")
    remember(cli, "soon broken", agent="bad")
    bad_id = json.loads(cli("agent", "show", "bad", "--json").stdout)["id"]
    db = arcana_home.agent_db(bad_id)
    with open(db, "r+b") as handle:
        handle.write(os.urandom(100))
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    failed = [c for c in json.loads(result.stdout)["checks"] if not c["ok"]]
    assert failed and all(bad_id in c["name"] + c["detail"] or "(bad)" in c["name"] for c in failed)
    assert any(bad_id in c["name"] for c in failed)
    table = cli("doctor")
    assert table.exit_code == 1 and "FAIL" in table.stdout and bad_id in table.stdout.replace("\n", "").replace(" ", "")
    assert db.exists()  # doctor diagnoses; it never moves or repairs


def test_memory_list_filters_before_the_limit_and_is_not_a_recall_hit(cli):
    visible = remember(cli, "plain visible note", "--importance", "0.1")
    for i in range(5):
        remember(cli, f"hidden note {i}", "--importance", "0.9", "--visibility", "hidden")
    assert cli("memory", "forget", visible, "--agent", "ada").exit_code == 0
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--archived", "--limit", "3", "--json").stdout)
    assert [r["id"] for r in listed] == [visible]
    assert cli("memory", "restore", visible, "--agent", "ada").exit_code == 0
    for _ in range(3):
        cli("memory", "list", "--agent", "ada", "--json")
    shown = json.loads(cli("memory", "show", visible, "--agent", "ada", "--json").stdout)
    assert shown["access_count"] == 0
    recall(cli, "plain")
    shown = json.loads(cli("memory", "show", visible, "--agent", "ada", "--json").stdout)
    assert shown["access_count"] == 1
