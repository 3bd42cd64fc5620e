"""Seams between commands: one concept, one behaviour and one message in every command that has it.

Each test failed before its fix; each refusal sits beside a positive control.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("no_embedder")


def one_line_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arcana: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# -- a maintenance run's selection ----------------------------------------------


@pytest.mark.parametrize("verb", ["prune", "reindex", "consolidate"])
def test_a_selection_error_names_the_command_it_came_from(cli, verb):
    assert cli("remember", "Deploys happen on Tuesdays", "--agent", "ada").exit_code == 0

    nothing = cli(verb)
    assert nothing.exit_code == 2
    assert f"nothing to {verb}; name a store" in one_line_error(nothing)

    both = cli(verb, "--agent", "ada", "--all")
    assert both.exit_code == 2
    assert f"--all already {'reindexes' if verb == 'reindex' else verb + 's'} every agent" in one_line_error(both)

    named = cli(verb, "--agent", "ada", *(["--min-importance", "0.01"] if verb == "prune" else []))
    assert named.exit_code == 0, named.stderr  # positive control: a named store runs


# -- an agent id prefix ----------------------------------------------------------


def test_an_ambiguous_agent_id_prefix_is_said_as_a_memory_ids_is_and_never_sends_to_agent_create(cli, arcana_home):
    from memory.agents import AgentCard, AgentRegistry

    registry = AgentRegistry(arcana_home)
    ada, bob = "abcdef" + "0" * 26, "abcdef" + "1" * 26  # two ids that share their first six digits
    registry.save(AgentCard(id=ada, name="ada"))
    registry.save(AgentCard(id=bob, name="bob"))
    assert cli("remember", "Deploys happen on Tuesdays", "--agent", "ada").exit_code == 0

    for args in (("recall", "deploys", "--agent", "abcdef"), ("agent", "show", "abcdef"),
                 ("remember", "another fact", "--agent", "abcdef")):
        result = cli(*args)
        assert result.exit_code == 3, (args, result.stderr)
        line = one_line_error(result)
        assert "'abcdef' is ambiguous (2 agents: 'ada', 'bob'); give more characters" in line, line
    assert sorted(c.name for c in registry.list()) == ["ada", "bob"]  # a store command made no third agent

    # An id-like name that no agent has is not one `agent create` would take: the hint says where to look.
    missing = cli("agent", "show", "fedcba")
    assert missing.exit_code == 3
    assert "agent create" not in one_line_error(missing) and "arcana agent list" in missing.stderr
    assert cli("agent", "create", "fedcba").exit_code == 2  # why: such a name is refused
    typo = cli("agent", "show", "adaa")
    assert typo.exit_code == 3 and "did you mean 'ada'" in typo.stderr and "arcana agent create adaa" in typo.stderr

    # Positive controls: a longer prefix and the name still reach each agent.
    shown = cli("recall", "deploys", "--agent", ada[:7], "--json")
    assert shown.exit_code == 0 and '"agent": "ada"' in shown.stdout
    assert cli("agent", "show", bob[:7]).exit_code == 0


# -- vault index and embedding ---------------------------------------------------


def vault_index(cli, name: str) -> tuple[dict, str]:
    import json

    result = cli("vault", "index", name, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_vault_index_in_a_keyword_only_home_warns_of_nothing_as_reindex_does(cli, make_vault):
    notes = make_vault({"a.md": "# Deploys\nDeploys happen on Tuesdays.", "b.md": "Cats sleep a lot."})
    assert cli("vault", "add", str(notes), "--name", "notes").exit_code == 0
    for _ in range(2):  # the first pass and a cron rerun with nothing changed
        report, stderr = vault_index(cli, "notes")
        assert report["embedding"] == "keyword-only" and report["notices"] == [], report["notices"]
        assert "warning" not in stderr, stderr
    reindex = cli("reindex", "--all")
    assert reindex.exit_code == 0 and "warning" not in reindex.stderr  # the same home, the same silence
    found = cli("vault", "search", "notes", "deploys", "--json")
    assert found.exit_code == 0 and '"path": "a.md"' in found.stdout  # positive control: the index answers


def test_vault_index_with_its_embedder_down_names_the_command_that_embeds_it_later(
    cli, make_vault, arcana_home, offline_like_ollama
):
    import json

    def embedder_at(url: str) -> None:
        arcana_home.config_path.write_text(json.dumps({"embedding": {
            "providers": ["ollama"], "ollama_model": "all-minilm", "ollama_url": url}}))

    notes = make_vault({"a.md": "# Deploys\nDeploys happen on Tuesdays.", "b.md": "Cats sleep a lot."})
    embedder_at("http://127.0.0.1:9")  # nothing listens there
    assert cli("vault", "add", str(notes), "--name", "notes").exit_code == 0
    report, _ = vault_index(cli, "notes")
    assert report["embedded"] == 0 and len(report["notices"]) == 1
    notice = report["notices"][0]
    assert "`arcana vault index notes`" in notice and "arcana reindex" not in notice, notice

    assert cli("config", "set", "embedding.ollama_url", offline_like_ollama.url).exit_code == 0  # the embedder is back
    assert cli("reindex", "--all").exit_code == 0  # what the notice used to advise: vaults are not its stores
    report, stderr = vault_index(cli, "notes")  # what it advises now embeds the notes
    assert report["embedded"] == 2 and report["notices"] == [], (report, stderr)


def test_vault_search_refuses_an_empty_query_as_recall_does(cli, make_vault):
    notes = make_vault({"a.md": "# Deploys\nDeploys happen on Tuesdays.", "b.md": "Cats sleep a lot."})
    assert cli("vault", "add", str(notes), "--name", "notes").exit_code == 0
    assert cli("remember", "Deploys happen on Tuesdays", "--agent", "ada").exit_code == 0
    for query in ("", "   "):
        recalled = cli("recall", query, "--agent", "ada")
        assert recalled.exit_code == 2 and "the query is empty" in one_line_error(recalled)
        for indexed in (False, True):  # the folder itself, then its index
            searched = cli("vault", "search", "notes", query, "--json")
            assert searched.exit_code == 2, (indexed, searched.stdout)
            assert "the query is empty" in one_line_error(searched) and searched.stdout == ""
            assert cli("vault", "index", "notes").exit_code == 0
    found = cli("vault", "search", "notes", "deploys", "--json")  # positive control
    assert found.exit_code == 0 and '"path": "a.md"' in found.stdout and '"path": "b.md"' not in found.stdout


# -- --since / --as-of -----------------------------------------------------------


@pytest.mark.parametrize("option", ["--since", "--as-of"])
def test_a_duration_of_non_ascii_digits_is_a_usage_error_not_a_traceback(cli, option):
    assert cli("remember", "Deploys happen on Tuesdays", "--agent", "ada").exit_code == 0
    for value in ("²d", "1²h", "٣w"):
        result = cli("recall", "deploys", "--agent", "ada", option, value)
        assert result.exit_code == 2, (value, result.output)
        assert "use a duration like 7d, 12h, 2w or an ISO date" in one_line_error(result)
    control = cli("recall", "deploys", "--agent", "ada", option, "7d" if option == "--since" else "0m", "--json")
    assert control.exit_code == 0 and "Tuesdays" in control.stdout


# -- exit 75 ---------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["prune", "reindex", "consolidate"])
def test_every_command_that_exits_75_is_on_the_manuals_75_row(cli, arcana_home, verb):
    from arcana_cli import exit_codes
    from memory.locks import exclusive

    assert cli("remember", "Deploys happen on Tuesdays", "--agent", "ada").exit_code == 0
    args = [verb, "--all", *(["--min-importance", "0.01"] if verb == "prune" else [])]
    with exclusive(arcana_home.locks_dir / f"{verb}.lock", verb):
        busy = cli(*args)
    assert busy.exit_code == exit_codes.BUSY and f"another {verb} is running" in one_line_error(busy)
    assert cli(*args).exit_code == 0  # positive control: the lock free, the same run succeeds
    meaning = dict(exit_codes.TABLE)[exit_codes.BUSY]
    assert verb in meaning, f"man/exit-codes.md's 75 row says {meaning!r}, but `arcana {verb}` exits 75"
