"""Issue 21 item 10, the smaller seams: each test failed before its fix, and
each exclusion sits beside a positive control in the same home."""

from __future__ import annotations

import json
import sqlite3

import pytest

from memory.vaults.indexer import check_vault, index_vault
from memory.vaults.registry import VaultRegistry

pytestmark = pytest.mark.usefixtures("no_embedder")


def remember(cli, text: str, *options: str, agent: str = "ada") -> str:
    result = cli("remember", text, "--agent", agent, *options)
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


def ids(cli, *options: str, agent: str = "ada") -> list[str]:
    result = cli("memory", "list", "--agent", agent, "--all", "--json", *options)
    assert result.exit_code == 0, result.stderr
    return [m["id"] for m in json.loads(result.stdout)]


def recall_json(cli, query: str, *options: str) -> dict:
    result = cli("recall", query, "--agent", "ada", "--mode", "keyword", "--json", *options)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# -- vaults ---------------------------------------------------------------------


@pytest.fixture
def notes(make_vault, arcana_home):
    root = make_vault(
        {
            "good.md": "---\ntags: [fine]\n---\nA tidy note that links [[other]].",
            "bad.md": "---\ntags: [unclosed\n---\nA note whose frontmatter is broken.",
            "other.md": "The other note.",
        }
    )
    arcana_home.ensure()
    return VaultRegistry(arcana_home).add(root, "notes")


async def test_vault_check_keeps_reporting_bad_frontmatter_after_an_index(notes):
    before, _ = await check_vault(notes)
    assert before.frontmatter_problems == ["bad.md"]  # the positive control: good.md is not listed
    await index_vault(notes, embed=False)
    after, _ = await check_vault(notes)
    assert after.frontmatter_problems == ["bad.md"]  # unchanged notes are read again, not trusted


def test_vault_index_and_watch_count_links_in_one_wording(notes, cli):
    import asyncio

    from memory.vaults.watcher import describe

    result = cli("vault", "index", "notes")
    assert result.exit_code == 0, result.stderr
    report = asyncio.run(index_vault(notes, embed=False))
    wording = report.links.describe()
    assert "1 found, 1 resolved" in wording
    assert wording in result.stdout + result.stderr
    assert wording in describe(notes, 1, report)


def test_a_watch_pid_no_process_can_have_is_no_watch_not_a_traceback(notes, cli):
    """The state file's watch_pid is read off disk: one past a C long was an OverflowError traceback
    from `vault status` (exit 1); it is no running watch now."""
    import os

    from memory.vaults.state import update_state

    update_state(notes.state_path, watch_pid=os.getpid())  # control: a live pid is a running watch
    shown = cli("vault", "status", "notes", "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["watch"]["running"] is True, shown.output
    update_state(notes.state_path, watch_pid=10**30)
    shown = cli("vault", "status", "notes", "--json")
    assert shown.exit_code == 0, shown.output
    assert (json.loads(shown.stdout)["watch"]["running"], json.loads(shown.stdout)["watch"]["pid"]) == (False, None)


# -- memory history ids -----------------------------------------------------------


def test_history_takes_a_prefix_after_a_purge_and_refuses_a_short_one(cli):
    gone = remember(cli, "I live in Paris")
    kept = remember(cli, "I drink tea")
    assert cli("memory", "purge", gone, "--agent", "ada", "--yes").exit_code == 0
    for name in (gone, gone[:8]):
        result = cli("memory", "history", name, "--agent", "ada", "--json")
        assert result.exit_code == 0, result.stderr
        assert [r["op"] for r in json.loads(result.stdout)] == ["insert", "purge"]
    live = cli("memory", "history", kept[:8], "--agent", "ada", "--json")  # control: a live prefix
    assert [r["op"] for r in json.loads(live.stdout)] == ["insert"]
    short = cli("memory", "history", kept[:4], "--agent", "ada")
    assert short.exit_code == 2 and "at least 6 characters" in short.stderr and "no memory" not in short.stderr
    assert cli("memory", "show", kept[:4], "--agent", "ada").exit_code == 2
    assert cli("memory", "history", "zzzzzzzz", "--agent", "ada").exit_code == 3  # a long unknown one is not found


# -- pins in ranking --------------------------------------------------------------


def test_a_pin_breaks_near_ties_but_never_lifts_a_weak_match_over_the_answer(cli):
    answer = remember(cli, "I prefer green tea over coffee in the morning")
    weak = remember(cli, "The office coffee machine is on floor two", "--pin")
    results = recall_json(cli, "prefer green tea over coffee")["results"]
    assert [r["id"] for r in results] == [answer, weak]  # both match; the strong one leads
    # Control: between two equal matches the pinned one leads, and a listing puts pins first.
    twin_a = remember(cli, "quarterly budget review notes 2023")
    twin_b = remember(cli, "quarterly budget review notes 2024", "--pin")
    tied = [r["id"] for r in recall_json(cli, "quarterly budget review")["results"]]
    assert tied.index(twin_b) < tied.index(twin_a)
    assert ids(cli)[:2] == sorted([weak, twin_b], key=ids(cli).index)


# -- recall messages and --tag --------------------------------------------------------


def test_recall_says_what_was_searched_when_nothing_matched(cli):
    remember(cli, "the kettle is blue")
    hit = cli("recall", "kettle", "--agent", "ada", "--mode", "keyword")
    assert "answered by: keyword from" in hit.stderr
    miss = cli("recall", "submarine", "--agent", "ada", "--mode", "keyword")
    assert miss.exit_code == 0 and "answered by" not in miss.stderr
    assert "no memories matched (searched private" in miss.stderr


def test_recall_tag_filters_through_admission(cli):
    tagged = remember(cli, "deploys go out on fridays", "--tag", "ops")
    untagged = remember(cli, "deploys of the website are manual")
    assert {r["id"] for r in recall_json(cli, "deploys")["results"]} == {tagged, untagged}  # control
    assert [r["id"] for r in recall_json(cli, "deploys", "--tag", "ops")["results"]] == [tagged]
    assert recall_json(cli, "deploys", "--tag", "ops", "--tag", "other")["results"] == []  # every tag


def test_a_tag_filter_is_read_as_stored_tags_are(cli):
    """A stored tag is trimmed and loses a leading '#' ('remember --tag " #ops "' stores 'ops'), but the
    filter was taken as typed: recall with the same --tag found nothing."""
    tagged = remember(cli, "deploys go out on fridays", "--tag", " #ops ")
    untagged = remember(cli, "deploys of the website are manual")
    for typed in (" #ops ", "ops", "#ops", "ops "):
        assert [r["id"] for r in recall_json(cli, "deploys", "--tag", typed)["results"]] == [tagged], typed
    assert recall_json(cli, "deploys", "--tag", "op")["results"] == []  # the control: another tag still excludes
    # a tag that is nothing once trimmed is no tag, as in remember: no filter
    assert {r["id"] for r in recall_json(cli, "deploys", "--tag", " ")["results"]} == {tagged, untagged}


async def test_mcp_recall_takes_tags_and_names_no_cli_flag(arcana_home):
    from mcp_client import call, seed, session
    from runner import keyword_only

    keyword_only(arcana_home)
    _, made = await seed(
        arcana_home, "alice", [{"content": "zebra stripes", "tags": ["zoo"]}, {"content": "okapi zebra cousin"}]
    )
    async with session("--agent", "alice") as client:
        error, found = await call(client, "recall", query="zebra")
        assert not error and {r["id"] for r in found["results"]} == set(made.values())
        error, found = await call(client, "recall", query="zebra", tags=["zoo"])
        assert not error and [r["id"] for r in found["results"]] == [made["zebra"]]
        error, text = await call(client, "remember", content="a shared note", scope="shared")
        assert error and "pool" in text and "--pool" not in text


# -- confirmation ---------------------------------------------------------------------


def test_destructive_commands_refuse_without_yes_in_the_documented_format(cli):
    memory_id = remember(cli, "keep me")
    result = cli("memory", "purge", memory_id, "--agent", "ada")
    assert result.exit_code == 2
    assert result.stderr.startswith("arcana: error: ") and "pass --yes" in result.stderr
    assert "Invalid value" not in result.stderr and len(result.stderr.splitlines()) == 1
    assert ids(cli) == [memory_id]


def test_prune_purge_needs_yes_off_a_terminal(cli):
    low = remember(cli, "a passing remark", "--importance", "0.05")
    high = remember(cli, "an important fact", "--importance", "0.9")
    refused = cli("prune", "--all", "--min-importance", "0.2", "--mode", "purge")
    assert refused.exit_code == 2 and "pass --yes" in refused.stderr
    assert set(ids(cli)) == {low, high}  # nothing removed
    planned = cli("prune", "--all", "--min-importance", "0.2", "--mode", "purge", "--dry-run", "--json")
    assert planned.exit_code == 0 and json.loads(planned.stdout)["removed"] == 1
    archived = cli("prune", "--all", "--min-importance", "0.2", "--json")  # archive is restorable: no --yes
    assert archived.exit_code == 0
    assert cli("memory", "restore", low, "--agent", "ada").exit_code == 0
    done = cli("prune", "--all", "--min-importance", "0.2", "--mode", "purge", "--yes", "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["removed"] == 1
    assert ids(cli) == [high]


# -- doctor ---------------------------------------------------------------------------


def test_doctor_fail_row_does_not_say_ok(cli, arcana_home):
    from memory.migrations.runner import head_version

    remember(cli, "first", agent="ada")
    remember(cli, "second", agent="bob")
    conn = sqlite3.connect(sorted(arcana_home.databases())[-1])  # one database "from a newer Arcana"
    conn.execute(f"PRAGMA user_version = {head_version() + 1}")
    conn.close()
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    rows = {c["name"]: c for c in json.loads(result.stdout)["checks"] if c["name"].startswith("db ")}
    failed = [c for c in rows.values() if not c["ok"]]
    assert len(failed) == 1 and "upgrade Arcana" in failed[0]["detail"] and "ok" not in failed[0]["detail"]
    assert any(c["ok"] and c["detail"].startswith("integrity ok") for c in rows.values())  # control


def test_an_unregistered_pool_is_exit_3_for_remember_and_recall_as_everywhere_and_makes_no_agent(cli):
    """`remember --pool typo` was exit 2 (every other command: 3) after creating the agent it named."""
    for args in (("remember", "a fact", "--agent", "newbie", "--pool", "typo"), ("recall", "fact", "--agent", "newbie", "--pool", "typo")):
        done = cli(*args)
        assert done.exit_code == 3 and "no pool named 'typo'" in done.stderr, done.output
    assert "newbie" not in cli("agent", "list").stdout
    assert cli("pool", "create", "team").exit_code == 0  # control: a registered pool the agent has not joined
    done = cli("remember", "a fact", "--agent", "newbie", "--pool", "team")
    assert done.exit_code == 2 and "unknown pool 'team' for this agent" in done.stderr, done.output
