"""Issue 21 item 7: a typo must not make an agent unseen.

The rule (man/memory.md#agents): a command that stores for an agent (remember,
import --agent, run, agent join) creates an unknown one and says so on stderr,
even under --quiet; a read refuses with exit 3 and a did-you-mean; `arcana mcp`
refuses unless given --create.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from arcana_cli import exit_codes


def names(cli) -> list[str]:
    return sorted(a["name"] for a in json.loads(cli("agent", "list", "--json").stdout))


@pytest.fixture
def keyword_home(cli, no_embedder):
    assert cli("remember", "The user likes green tea", "--agent", "ada").exit_code == 0
    return no_embedder


def test_remember_creates_and_says_so_even_under_quiet(cli, no_embedder):
    made = cli("--quiet", "remember", "The user likes green tea", "--agent", "ada")
    assert made.exit_code == 0, made.output
    assert "created agent 'ada'" in made.stderr and names(cli) == ["ada"]
    again = cli("--quiet", "remember", "The user likes oolong", "--agent", "ada")  # control: an existing agent
    assert again.exit_code == 0 and again.stderr == ""
    typo = cli("remember", "The user likes coffee", "--agent", "adaa")
    assert typo.exit_code == 0
    assert "created agent 'adaa'" in typo.stderr and "did you mean 'ada'" in typo.stderr
    assert "arcana agent delete adaa" in typo.stderr


def test_recall_of_an_unknown_agent_is_3_with_a_suggestion_and_creates_nothing(cli, keyword_home):
    found = cli("recall", "green tea", "--agent", "ada", "--json")  # control: the agent that exists
    assert found.exit_code == 0 and json.loads(found.stdout)["results"]
    for typo in ("adaa", "Ada"):
        refused = cli("recall", "green tea", "--agent", typo)
        assert refused.exit_code == exit_codes.NOT_FOUND
        assert refused.stderr.count("\n") == 1 and "did you mean 'ada'" in refused.stderr
    assert names(cli) == ["ada"]


def test_agent_join_creates_an_unknown_agent_but_not_for_an_unknown_pool(cli, keyword_home):
    assert cli("pool", "create", "team").exit_code == 0
    nopool = cli("agent", "join", "bob", "nope")
    assert nopool.exit_code == exit_codes.NOT_FOUND and names(cli) == ["ada"]
    joined = cli("agent", "join", "bob", "team", "--json")
    assert joined.exit_code == 0, joined.output
    assert "created agent 'bob'" in joined.stderr and json.loads(joined.stdout)["member"] is True
    assert cli("remember", "Standup at 10", "--agent", "bob", "--pool", "team").exit_code == 0
    assert cli("recall", "standup", "--agent", "bob", "--json").exit_code == 0
    left = cli("agent", "leave", "carol", "team")  # leaving stores nothing: an unknown agent is 3
    assert left.exit_code == exit_codes.NOT_FOUND and names(cli) == ["ada", "bob"]


def test_run_creates_an_unknown_agent_once_its_model_is_known(cli, no_embedder, model_server):
    nomodel = cli("run", "ghost", "hello")
    assert nomodel.exit_code == exit_codes.USAGE and "no model to run with" in nomodel.stderr
    assert names(cli) == []  # a run that cannot start creates nothing
    added = cli("model", "add", "loop", "--provider", "ollama", "--base-url", model_server.url, "--model", "tiny", "--default")
    assert added.exit_code == 0, added.output
    bare = cli("run", "ghost", "hello", "--no-memory")  # stores nothing: the agent must exist
    assert bare.exit_code == exit_codes.NOT_FOUND and names(cli) == []
    ran = cli("run", "ghost", "hello")
    assert ran.exit_code == 0, ran.output
    assert "created agent 'ghost'" in ran.stderr and names(cli) == ["ghost"]


def test_a_first_run_whose_model_fails_takes_back_the_agent_it_created(cli, no_embedder, model_server):
    from model_server import free_port

    dead = f"http://127.0.0.1:{free_port()}"
    for name, url in (("dead", dead), ("loop", model_server.url)):
        added = cli("model", "add", name, "--provider", "ollama", "--base-url", url, "--model", "tiny")
        assert added.exit_code == 0, added.output
    assert cli("run", "ada", "I prefer green tea.", "--model", "loop").exit_code == 0  # control: made, and kept
    failed = cli("run", "ghost", "hello", "--model", "dead")
    assert failed.exit_code == exit_codes.MODEL_UNAVAILABLE
    assert "created agent 'ghost'" in failed.stderr and "removed agent 'ghost' again" in failed.stderr
    assert names(cli) == ["ada"]
    kept = cli("run", "ada", "hello", "--model", "dead")  # an agent the run did not create stays, memories and all
    assert kept.exit_code == exit_codes.MODEL_UNAVAILABLE and "removed" not in kept.stderr
    assert names(cli) == ["ada"] and json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)


def test_an_agent_holding_a_memory_is_not_discarded(cli, no_embedder):
    """What another process stored for the new agent before the failed run took it back keeps it."""
    import asyncio

    from memory.agents import AgentRegistry
    from memory.operator.edits import discard_unused_agent

    assert cli("remember", "The user likes oolong", "--agent", "bob").exit_code == 0
    empty, _ = AgentRegistry(no_embedder).resolve_or_create("carol")  # control: holds nothing
    bob = AgentRegistry(no_embedder).resolve("bob")
    assert asyncio.run(discard_unused_agent(no_embedder, bob.id)) is None
    assert asyncio.run(discard_unused_agent(no_embedder, empty.id)) is not None
    assert names(cli) == ["bob"]


def test_import_into_an_unknown_agent_creates_it(cli, keyword_home, tmp_path):
    exported = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "--output", str(exported)).exit_code == 0
    imported = cli("import", str(exported), "--agent", "ada2")
    assert imported.exit_code == 0, imported.output
    assert "created agent 'ada2'" in imported.stderr and names(cli) == ["ada", "ada2"]


def _mcp(home, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ARCANA_HOME": str(home.root)}
    return subprocess.run([sys.executable, "-m", "arcana_cli.main", "mcp", *args], input="", capture_output=True,
                          text=True, env=env, timeout=60)


def test_mcp_refuses_an_unknown_agent_unless_told_to_create_it(cli, keyword_home):
    refused = _mcp(keyword_home, "--agent", "adaa")
    assert refused.returncode == exit_codes.NOT_FOUND
    assert refused.stdout == "" and "did you mean 'ada'" in refused.stderr and names(cli) == ["ada"]
    served = _mcp(keyword_home, "--agent", "ada")  # control: an existing agent is served (stdin at EOF: it stops)
    assert served.returncode == 0 and "serving agent 'ada'" in served.stderr and "created" not in served.stderr
    created = _mcp(keyword_home, "--agent", "fresh", "--create")
    assert created.returncode == 0, created.stderr
    assert "created agent 'fresh'" in created.stderr and names(cli) == ["ada", "fresh"]


def test_a_write_that_cannot_start_creates_no_agent(cli, no_embedder, tmp_path):
    assert cli("remember", "--from", str(tmp_path / "missing.jsonl"), "--agent", "zed").exit_code == exit_codes.USAGE
    assert cli("remember", "   ", "--agent", "zed").exit_code == exit_codes.USAGE
    assert names(cli) == []
    lines = tmp_path / "one.jsonl"
    lines.write_text('{"content": "The user likes green tea"}\n')
    made = cli("remember", "--from", str(lines), "--agent", "zed")  # control: the same command with a file
    assert made.exit_code == 0 and "created agent 'zed'" in made.stderr and names(cli) == ["zed"]
