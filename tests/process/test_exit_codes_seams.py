"""Issue 21 items 8 and 9: exit codes mean one thing each, usage errors read like every other error,
and a pool whose URL variable is unset degrades that tier instead of failing every recall."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from contextlib import closing

import pytest
from runner import ARCANA, keyword_only, run_arcana

from arcana_cli import exit_codes
from memory.agents import AgentRegistry
from memory.home import Home


def arcana(home, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    return run_arcana(*args, home=home, stdin=stdin, env=env, timeout=60)


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arcana: error: "), stderr
    assert "Usage:" not in stderr and "Error:" not in stderr and "pydantic.dev" not in stderr
    return lines[0]


# -- 2 is what the command was given; 4 is what is stored --------------------------------


def test_an_unknown_or_bad_config_set_argument_is_2_and_the_file_is_untouched(cli, no_embedder):
    assert cli("config", "set", "embedding.min_similarity", "0.3").exit_code == 0  # control
    before = no_embedder.config_path.read_bytes()
    for args in (("embedding.min_simlarity", "0.3"), ("recall.limit", "0"), ("embedding.providers", "fasttext")):
        result = cli("config", "set", *args)
        assert result.exit_code == exit_codes.USAGE, (args, result.stderr)
        one_error_line(result.stderr)
        assert no_embedder.config_path.read_bytes() == before
    assert "did you mean 'embedding.min_similarity'" in cli("config", "set", "embedding.min_simlarity", "1").stderr


def test_a_malformed_file_is_still_4(cli, no_embedder):
    no_embedder.config_path.write_text('{"recall": {"limit": 0}}')
    result = cli("config", "set", "recall.limit", "5")
    assert result.exit_code == exit_codes.CONFIG and str(no_embedder.config_path) in result.stderr


def test_list_keys_take_a_plain_comma_separated_value(cli, no_embedder):
    for value, expected in (("fastembed", ["fastembed"]), ("fastembed, ollama", ["fastembed", "ollama"]),
                            ('["ollama"]', ["ollama"]), ("[]", [])):
        assert cli("config", "set", "embedding.providers", value).exit_code == 0, value
        assert json.loads(no_embedder.config_path.read_text())["embedding"]["providers"] == expected
    assert cli("config", "set", "pools.team.members", "alice,bob").exit_code == 0
    assert json.loads(no_embedder.config_path.read_text())["pools"]["team"]["members"] == ["alice", "bob"]
    kept = cli("config", "set", "default_model", "a,b")  # a string key keeps its commas: one name, not two
    assert kept.exit_code == exit_codes.NOT_FOUND and "no model named 'a,b'" in kept.stderr


def test_agent_set_extraction_and_decay_say_why_and_exit_2(cli, no_embedder, arcana_home):
    assert cli("agent", "create", "ada").exit_code == 0
    assert cli("agent", "set", "ada", "--extraction", "agent_confidence_cap=0.5").exit_code == 0  # control
    capped = cli("agent", "set", "ada", "--extraction", "agent_confidence_cap=1.0")
    assert capped.exit_code == exit_codes.USAGE
    assert "agent_confidence_cap" in one_error_line(capped.stderr) and "less than 1" in capped.stderr
    decayed = cli("agent", "set", "ada", "--decay", "episodic.half_life_days=-1")
    assert decayed.exit_code == exit_codes.USAGE and "greater than 0" in one_error_line(decayed.stderr)
    card = AgentRegistry(arcana_home).resolve("ada")
    assert card.extraction == {"agent_confidence_cap": 0.5} and card.decay == {}  # nothing bad was saved


@pytest.mark.parametrize("with_file", [False, True])
def test_the_same_bad_cap_is_4_from_config_json_and_from_the_environment(no_embedder, with_file):
    assert arcana(no_embedder, "remember", "x", "--agent", "ada").returncode == 0
    fine = arcana(no_embedder, "remember", "y", "--agent", "ada", ARCANA_EXTRACTION_AGENT_CONFIDENCE_CAP="0.5")
    assert fine.returncode == 0, fine.stderr  # control
    if not with_file:
        no_embedder.config_path.unlink()
    from_env = arcana(no_embedder, "remember", "z", "--agent", "ada", ARCANA_EXTRACTION_AGENT_CONFIDENCE_CAP="1.0")
    assert from_env.returncode == exit_codes.CONFIG, from_env.stderr
    assert "ARCANA_EXTRACTION_AGENT_CONFIDENCE_CAP" in one_error_line(from_env.stderr)
    no_embedder.config_path.write_text(json.dumps({"embedding": {"providers": []},
                                                   "memory": {"extraction": {"agent_confidence_cap": 1.0}}}))
    from_file = arcana(no_embedder, "remember", "z", "--agent", "ada")
    assert from_file.returncode == exit_codes.CONFIG and "agent_confidence_cap" in one_error_line(from_file.stderr)


def test_an_unset_api_key_variable_is_2_naming_it(cli, no_embedder, model_server, monkeypatch):
    added = cli("model", "add", "oa", "--provider", "openai", "--base-url", model_server.url, "--model", "m",
                "--api-key-env", "ARCANA_TEST_KEY")
    assert added.exit_code == 0, added.output
    monkeypatch.delenv("ARCANA_TEST_KEY", raising=False)
    unset = cli("model", "check", "oa")
    assert unset.exit_code == exit_codes.USAGE and "ARCANA_TEST_KEY" in one_error_line(unset.stderr)
    monkeypatch.setenv("ARCANA_TEST_KEY", "sk-1")
    assert cli("model", "check", "oa").exit_code == 0  # control: the same model with the key set


def test_names_that_exist_already_are_2(cli, no_embedder, model_server):
    assert cli("agent", "create", "ada").exit_code == 0 and cli("pool", "create", "team").exit_code == 0
    model = ("model", "add", "m", "--provider", "ollama", "--base-url", model_server.url, "--model", "x")
    assert cli(*model).exit_code == 0
    for args in (("agent", "create", "ada"), ("pool", "create", "team"), model):
        again = cli(*args)
        assert again.exit_code == exit_codes.USAGE and "already exists" in one_error_line(again.stderr), args


def test_usage_errors_are_one_arcana_error_line_through_the_real_entry_point(no_embedder):
    assert arcana(no_embedder, "agent", "create", "ada").returncode == 0
    cases = {
        ("run", "ada"): "arcana: error: PROMPT: the prompt is empty; see `arcana run --help`",
        ("mcp", "--agent", "ada", "--http", "nope"): "arcana: error: --http takes HOST:PORT",
        ("recall", "x", "--agent", "ada", "--decay", "1"): "arcana: error: no such option: --decay",
        ("--hme", "x"): "arcana: error: no such option: --hme",
        ("nosuch",): "arcana: error: no such command 'nosuch'; see `arcana --help`",
        ("remember", "x", "--agent", "ada", "--importance", "7"): "arcana: error: '--importance' / '-i'",
        ("remember", "x", "--agent", "ada", "--type", "bogus"): "'bogus' is not one of",
    }
    for args, expected in cases.items():
        done = arcana(no_embedder, *args)
        assert done.returncode == exit_codes.USAGE, (args, done.stderr)
        assert expected in one_error_line(done.stderr) and done.stdout == "", args
    helped = arcana(no_embedder, "agent")  # control: a bare group still prints its help
    assert "Usage: arcana agent" in helped.stdout + helped.stderr


# -- item 8: an unset pool URL variable degrades that tier -------------------------------


@pytest.fixture
def unset_pool(cli, no_embedder, monkeypatch):
    """alice in two pools: 'local' (SQLite, holding a memory) and 'team', on a server whose variable is unset."""
    monkeypatch.delenv("ARCANA_TEST_TEAM_PG", raising=False)
    assert cli("agent", "create", "alice").exit_code == 0
    assert cli("pool", "create", "local").exit_code == 0
    assert cli("agent", "join", "alice", "local").exit_code == 0
    assert cli("remember", "Standup moved to 10:00", "--agent", "alice", "--pool", "local").exit_code == 0
    assert cli("remember", "The user likes green tea", "--agent", "alice").exit_code == 0
    assert cli("config", "set", "pools.team.url_env", "ARCANA_TEST_TEAM_PG").exit_code == 0
    assert cli("config", "set", "pools.team.members", '["alice"]').exit_code == 0
    return no_embedder


def test_recall_degrades_the_tier_whose_url_variable_is_unset(unset_pool):
    done = arcana(unset_pool, "recall", "standup tea", "--agent", "alice", "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    tiers = {tier for r in payload["results"] for tier in r["tiers"]}
    assert tiers == {"private", "pool:local"}  # the other tiers answer
    assert "pool:team" in json.dumps(payload["degraded"])
    assert "pool:team" in done.stderr and "ARCANA_TEST_TEAM_PG is not set" in done.stderr
    audit = [json.loads(line) for line in unset_pool.audit_log.read_text().splitlines()]
    assert any(a.get("tier") == "pool:team" and a.get("event") == "memory_degraded" for a in audit)
    private = arcana(unset_pool, "remember", "The user likes oolong", "--agent", "alice")
    assert private.returncode == 0, private.stderr  # a private write is not taken down either


def test_remember_to_the_unset_pool_prints_its_json_report_and_exits_5(unset_pool):
    done = arcana(unset_pool, "remember", "Deploys on Tuesday", "--agent", "alice", "--pool", "team", "--json")
    assert done.returncode == exit_codes.STORAGE
    report = json.loads(done.stdout)
    assert report["stored"] is False and report["accepted"] == []
    assert "ARCANA_TEST_TEAM_PG is not set" in report["failed"]["pool:team"]
    local = arcana(unset_pool, "remember", "Deploys on Friday", "--agent", "alice", "--pool", "local", "--json")
    assert local.returncode == 0 and json.loads(local.stdout)["stored"] is True  # control
    listed = arcana(unset_pool, "memory", "list", "--pool", "team")  # an operator command on that store: usage
    assert listed.returncode == exit_codes.USAGE and "ARCANA_TEST_TEAM_PG" in one_error_line(listed.stderr)


def test_migrate_up_with_an_unset_url_variable_is_a_usage_error_as_memory_list_is(unset_pool):
    """`migrate up` exited 5 (storage) for a pool whose url_env is unset, where every other command on that
    server's store exits 2 (the invocation lacks the variable). The report still lists every database."""
    listed = arcana(unset_pool, "memory", "list", "--pool", "team")
    assert listed.returncode == exit_codes.USAGE
    done = arcana(unset_pool, "migrate", "up", "--json", "--quiet")  # --quiet: the error line alone on stderr
    assert done.returncode == exit_codes.USAGE, done.stderr
    error = one_error_line(done.stderr)
    assert "pool:team" in error and "ARCANA_TEST_TEAM_PG is not set" in error and "upgrade Arcana" not in error
    states = {r["database"]: r["state"] for r in json.loads(done.stdout)}
    assert states["pools/local.db"] == "current" and states["pool:team"].startswith("not checked: ")
    # Controls: the variable set to a server that is down is the server's problem, 5; so is a local
    # database newer than this Arcana beside the unset variable (what is stored outranks what is missing).
    down = arcana(unset_pool, "migrate", "up", "--quiet", ARCANA_TEST_TEAM_PG="postgresql://arcana@127.0.0.1:1/none")
    assert down.returncode == exit_codes.STORAGE and "unreachable" in one_error_line(down.stderr)
    from memory.migrations.runner import head_version
    from memory.sqlite.connection import dbapi

    conn = dbapi().connect(str(unset_pool.pool_db("local")))
    conn.execute(f"PRAGMA user_version = {head_version() + 1}")
    conn.close()
    both = arcana(unset_pool, "migrate", "up", "--quiet")
    assert both.returncode == exit_codes.STORAGE and "newer than this Arcana" in one_error_line(both.stderr)


def test_an_unset_global_url_variable_degrades_the_global_tier_too(cli, no_embedder, monkeypatch):
    monkeypatch.delenv("ARCANA_TEST_GLOBAL_PG", raising=False)
    assert cli("remember", "The user likes green tea", "--agent", "alice").exit_code == 0
    assert cli("config", "set", "memory.global_url_env", "ARCANA_TEST_GLOBAL_PG").exit_code == 0
    done = arcana(no_embedder, "recall", "green tea", "--agent", "alice", "--json")
    assert done.returncode == 0, done.stderr
    assert [r["content"] for r in json.loads(done.stdout)["results"]] == ["The user likes green tea"]
    assert "tier global degraded" in done.stderr and "ARCANA_TEST_GLOBAL_PG is not set" in done.stderr


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/mem"), reason="needs Linux /proc")
def test_a_file_the_system_refuses_to_read_is_one_line_exit_1(no_embedder, tmp_path):
    """An OSError no check names (here EIO reading /proc/self/mem) ended in a traceback."""
    assert arcana(no_embedder.root, "remember", "the deploy runs on Tuesdays", "--agent", "ada").returncode == 0
    for args in (("import", "/proc/self/mem", "--agent", "ada"), ("remember", "--from", "/proc/self/mem", "--agent", "ada")):
        result = arcana(no_embedder.root, *args)
        assert result.returncode == exit_codes.FAILURE, (args, result.stderr)
        assert "input/output error" in one_error_line(result.stderr) and "Traceback" not in result.stderr
    export = tmp_path / "ada.jsonl"  # positive control: a readable file imports
    assert arcana(no_embedder.root, "export", "--agent", "ada", "-o", str(export)).returncode == 0
    assert arcana(no_embedder.root, "import", str(export), "--agent", "copy", "--no-embed").returncode == 0


def test_consolidate_all_counts_a_failed_store_as_failed(tmp_path):
    """`consolidate --all` with one agent's store newer than this Arcana: exit 5 naming it, and the
    summary counts the store it consolidated (ada, the control, whose row is read) apart from the one
    that failed; it said 'across 2 store(s)'."""
    home = Home(tmp_path / "home")
    keyword_only(home)
    for name in ("ada", "bob"):
        assert run_arcana("remember", f"{name} takes tea at four", "-a", name, home=home).returncode == 0
    bob = json.loads(run_arcana("agent", "show", "bob", "--json", home=home).stdout)["id"]
    with closing(sqlite3.connect(home.agent_db(bob))) as db:
        db.execute("PRAGMA user_version = 999")
    done = run_arcana("consolidate", "--all", home=home)
    assert done.returncode == exit_codes.STORAGE and f"bob: {home.agent_db(bob)}: schema version 999" in done.stderr
    assert "across 1 store(s) (1 more failed)" in done.stderr
    data = run_arcana("consolidate", "--all", "--json", home=home)
    assert data.returncode == exit_codes.STORAGE
    assert [(a["agent"], a.get("scanned"), "error" in a) for a in json.loads(data.stdout)["agents"]] == [
        ("ada", 1, False), ("bob", None, True)]


def test_an_error_echoing_a_huge_value_stays_a_readable_line(tmp_path):
    """`memory show` of a 100,000-character id printed a 100,000-character error line (MCP tool errors
    the same). The line is cut in its middle, keeping its start and its end (where a message says
    how to fix it); a short id's message (the control) is printed whole."""
    home = Home(tmp_path / "home")
    keyword_only(home)
    assert run_arcana("remember", "tea at four", "-a", "ada", home=home).returncode == 0
    short = run_arcana("memory", "show", "zzzzzzzz", "-a", "ada", home=home)
    huge = run_arcana("memory", "show", "z" * 100_000, "-a", "ada", home=home)
    assert short.returncode == huge.returncode == exit_codes.NOT_FOUND
    assert short.stderr.count("\n") == huge.stderr.count("\n") == 1 and "characters…]" not in short.stderr
    assert len(huge.stderr) < 2_100 and "characters…]" in huge.stderr
    assert huge.stderr.startswith("arcana: error: no memory with id 'zzz") and huge.stderr.endswith("zzz'\n")


def test_a_command_run_with_stdin_closed_is_one_line_not_a_traceback(tmp_path):
    """Started with stdin closed (`<&-`, as cron or a launcher may), Python has no sys.stdin: `remember`
    with no TEXT, `remember --from -`, `import -` and a destructive command without --yes asked it
    whether it was a terminal and died in an AttributeError traceback, exit 1. Each is now the error
    an empty, non-terminal stdin gets; the control, TEXT given, still stores with stdin closed."""
    home = Home(tmp_path / "home")
    keyword_only(home)
    closed = [
        (("remember", "--agent", "cc"), exit_codes.USAGE),
        (("remember", "--agent", "cc", "--from", "-"), exit_codes.USAGE),
        (("import", "-"), exit_codes.USAGE),
        (("agent", "delete", "cc"), exit_codes.USAGE),
    ]
    env = {**os.environ, "ARCANA_HOME": str(home.root)}
    assert run_arcana("remember", "the heron nests by the lake", "--agent", "cc", home=home).returncode == 0
    for args, code in closed:
        done = subprocess.run(["/bin/sh", "-c", 'exec "$@" <&-', "sh", *ARCANA, *args],
                              capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == code and "Traceback" not in done.stderr, (args, done.stderr)
        one_error_line(done.stderr)
    done = subprocess.run(["/bin/sh", "-c", 'exec "$@" <&-', "sh", *ARCANA, "remember", "kingfisher by the river",
                           "--agent", "cc"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert AgentRegistry(home).resolve("cc")  # the refused delete left the agent
