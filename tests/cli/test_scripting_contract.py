"""The scripting contract over every command that it applies to (man/commands.md, man/exit-codes.md):
a destructive command asked about something that does not exist says so (exit 3) before it asks for
--yes, and a command that fails says why in an `arcana: error:` line, --quiet or not."""

from __future__ import annotations

import json

import pytest
from typer.main import get_command

from arcana_cli.app import app
from command_tree import leaves

pytestmark = pytest.mark.usefixtures("no_embedder")

MISSING = "00000000-0000-0000-0000-000000000000"

# Every command with --yes, and arguments naming a target that does not exist (or, for prune, a purge of one).
DESTRUCTIVE = {
    "agent delete": ["agent", "delete", "nobody"],
    "pool remove": ["pool", "remove", "nopool"],
    "vault remove": ["vault", "remove", "novault"],
    "quarantine dismiss": ["quarantine", "dismiss", "noitem"],
    "memory purge": ["memory", "purge", MISSING, "--agent", "ada"],
    "prune": ["prune", "--pool", "nopool", "--mode", "purge", "--min-importance", "0.5"],
    "export": ["export", "--agent", "nobody", "-o", "notes.txt"],  # run where notes.txt holds something
}


def test_every_destructive_command_says_not_found_before_it_asks_for_yes(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("my own notes\n")
    with_yes = {name for name, command in leaves(get_command(app)) if any(p.name == "yes" for p in command.params)}
    assert with_yes == set(DESTRUCTIVE), "a new destructive command: add its missing-target case here"
    assert cli("remember", "keep me", "--agent", "ada").exit_code == 0
    for name, args in DESTRUCTIVE.items():
        done = cli(*args)  # stdin is not a terminal: nothing to ask on
        assert done.exit_code == 3, (name, done.exit_code, done.stderr)
        [line] = done.stderr.splitlines()
        assert line.startswith("arcana: error: ") and "pass --yes" not in line, (name, line)
    for variant in (["memory", "purge", MISSING[:8], "--agent", "ada"], ["prune", "--agent", "nobody", "--mode", "purge"]):
        done = cli(*variant)
        assert done.exit_code == 3 and "pass --yes" not in done.stderr, (variant, done.stderr)


def test_a_destructive_command_on_what_exists_still_needs_yes(cli):
    """Control: the same commands on a target that exists refuse without --yes (exit 2) and change nothing."""
    made = cli("remember", "keep me", "--agent", "ada", "--importance", "0.1", "--json")
    memory_id = json.loads(made.stdout)["id"]
    for args in (["memory", "purge", memory_id[:8], "--agent", "ada"], ["prune", "--agent", "ada", "--mode", "purge",
                                                                         "--min-importance", "0.5"]):
        done = cli(*args)
        assert done.exit_code == 2 and "pass --yes" in done.stderr, (args, done.stderr)
    # The question names the whole id, not the prefix typed.
    assert f"purge memory {memory_id}:" in cli("memory", "purge", memory_id[:8], "--agent", "ada").stderr
    listed = cli("memory", "list", "--agent", "ada", "--json")
    assert [m["id"] for m in json.loads(listed.stdout)] == [memory_id]


# -- a failure is an error line, under --quiet too ------------------------------------------------

# Commands that work through every store and report each; a store that fails makes the run fail.
EVERY_STORE = {
    "consolidate": (["consolidate", "--all"], 5),
    "reindex": (["reindex", "--all"], 5),
    "doctor": (["doctor"], 1),
    "prune": (["prune", "--all", "--pool", "team", "--min-importance", "0.1"], 5),
    "export": (["export", "--all"], 5),
    "migrate up": (["migrate", "up"], 5),
}


@pytest.fixture
def team_from_the_future(cli, arcana_home):
    """A home whose pool 'team' was written by a newer Arcana (exit 5 wherever it is opened); ada is fine."""
    from memory.migrations.runner import head_version
    from memory.sqlite.connection import dbapi

    assert cli("remember", "ada's own note", "--agent", "ada").exit_code == 0
    assert cli("pool", "create", "team").exit_code == 0
    assert cli("agent", "join", "ada", "team").exit_code == 0
    assert cli("remember", "a team note", "--agent", "ada", "--pool", "team").exit_code == 0
    conn = dbapi().connect(str(arcana_home.pool_db("team")))
    conn.execute(f"PRAGMA user_version = {head_version() + 1}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


@pytest.mark.parametrize("quiet", [[], ["--quiet"]], ids=["plain", "quiet"])
@pytest.mark.parametrize("name", list(EVERY_STORE))
def test_a_run_that_fails_a_store_says_so_in_an_error_line(cli, team_from_the_future, name, quiet):
    """consolidate and reindex exited 5 with only a 'warning:' line, and under --quiet (the cron line)
    with nothing at all; doctor exited 1 with no line on stderr; migrate up exited 0 leaving the database
    unmigrated (a deploy's `migrate up && restart` went on). Every failure is an `arcana: error:` line."""
    args, code = EVERY_STORE[name]
    done = cli(*quiet, *args)
    assert done.exit_code == code, (done.exit_code, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("arcana: error: ")]
    assert errors and all("team" in line for line in errors), done.stderr
    assert "newer than this Arcana" in done.stderr or "FAIL" in done.stdout


def test_migrate_up_names_a_database_it_cannot_read_and_exits_5(cli, arcana_home):
    """A database that is not one (a torn copy) was skipped with exit 0, and under --quiet nothing said it."""
    assert cli("remember", "ada's own note", "--agent", "ada").exit_code == 0
    assert cli("pool", "create", "team").exit_code == 0
    arcana_home.pool_db("team").write_bytes(b"this is not a database" * 10)
    for quiet in ([], ["--quiet"]):
        done = cli(*quiet, "migrate", "up", "--json")
        assert done.exit_code == 5, done.stderr
        [error] = [line for line in done.stderr.splitlines() if line.startswith("arcana: error: ")]
        assert "pools/team.db" in error and "unreadable" in error, error
        states = {r["database"]: r["state"] for r in json.loads(done.stdout)}  # the report is still printed
        assert states["pools/team.db"].startswith("unreadable") and "current" in states.values()


@pytest.mark.parametrize("name", ["consolidate", "reindex", "doctor", "migrate up"])
def test_a_run_whose_stores_are_all_well_has_no_error_line(cli, name):
    """Control: the same commands over a sound home exit 0, and --quiet leaves stderr empty."""
    assert cli("remember", "ada's own note", "--agent", "ada").exit_code == 0
    args, _ = EVERY_STORE[name]
    done = cli("--quiet", *args)
    assert done.exit_code == 0 and done.stderr == "", done.stderr


@pytest.mark.parametrize("quiet", [[], ["--quiet"]], ids=["plain", "quiet"])
def test_a_memory_no_tier_stored_says_why_in_its_error_line(cli, team_from_the_future, quiet):
    """The error said 'see the warnings above', and under --quiet there were none: the reason was nowhere."""
    done = cli(*quiet, "remember", "a new team fact", "--agent", "ada", "--pool", "team")
    assert done.exit_code == 5, done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("arcana: error: ")]
    assert "memory not stored" in error and "pool:team" in error and "newer than this Arcana" in error, error
    assert "above" not in error
    control = cli(*quiet, "remember", "ada's second note", "--agent", "ada")  # the private tier is fine
    assert control.exit_code == 0


# -- the cron commands are silent under --quiet unless something fails ---------------------------


def _cron_commands() -> list[str]:
    """The commands man/commands.md calls the cron commands."""
    import re

    import docs_gen

    text = (docs_gen.ROOT / "man" / "commands.md").read_text(encoding="utf-8")
    listed = re.search(r"The cron commands \(([^)]*)\)", text.replace("\n  ", " "))
    return re.findall(r"`([a-z ]+)`", listed.group(1))


CRON_ARGS = {
    "prune": ["prune", "--all", "--min-importance", "0.1"],
    "reindex": ["reindex", "--all"],
    "consolidate": ["consolidate", "--all"],
    "vault index": ["vault", "index", "--all"],
}


def test_every_cron_command_has_quiet_and_is_silent_under_it_when_all_is_well(cli, make_vault, arcana_home):
    """vault index, a cron command, had no --quiet and printed its five-line report under the global one
    (a cron mail every run); the others print nothing. Each still reports under plain and --json."""
    cron = _cron_commands()
    assert set(cron) == set(CRON_ARGS), cron
    commands = dict(leaves(get_command(app)))
    assert cli("remember", "The user prefers metric units.", "--agent", "ada").exit_code == 0
    assert cli("vault", "add", str(make_vault({"a.md": "A note."})), "--name", "notes").exit_code == 0
    for name in cron:
        assert "quiet" in [p.name for p in commands[name].params], name
        for quiet in (["--quiet"], []):
            args = CRON_ARGS[name]
            done = cli(*args, *quiet) if quiet else cli(*args)
            assert done.exit_code == 0, (name, done.stderr)
            if quiet:
                assert done.stdout == "" and done.stderr == "", (name, done.stdout, done.stderr)
            else:
                assert done.stdout.strip(), name  # control: the report is there without --quiet
        data = cli(*CRON_ARGS[name], "--quiet", "--json")
        assert data.exit_code == 0 and json.loads(data.stdout) is not None, name  # --json is data, kept


def test_migrate_up_prints_no_report_under_its_quiet_but_json_still_does(cli):
    """`migrate up --quiet` printed its table all the same; its --quiet is the cron commands' (the only
    other commands with one of their own, beside `vault watch`'s, which hides its pass lines): no report,
    --json still data, plain still the table."""
    commands = dict(leaves(get_command(app)))
    own_quiet = {name for name, command in commands.items() if "quiet" in [p.name for p in command.params]}
    assert own_quiet == set(_cron_commands()) | {"migrate up", "vault watch"}, own_quiet
    assert cli("remember", "The user prefers metric units.", "--agent", "ada").exit_code == 0
    quiet = cli("migrate", "up", "--quiet")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    data = cli("migrate", "up", "--quiet", "--json")
    assert data.exit_code == 0 and [r["state"] for r in json.loads(data.stdout)] == ["current"]
    assert data.stderr == ""
    plain = cli("migrate", "up")  # control: the table is there without --quiet
    assert plain.exit_code == 0 and "current" in plain.stdout and "nothing to migrate" in plain.stderr


def test_vault_index_all_names_every_vault_that_failed_under_quiet(cli, make_vault, tmp_path):
    """Two missing folders: both named in error lines (under --quiet, where the per-vault warnings were
    silenced and only the first was raised); the sound vault is still indexed."""
    assert cli("vault", "add", str(make_vault({"a.md": "A note."})), "--name", "notes").exit_code == 0
    for gone in ("first", "second"):
        folder = make_vault({"x.md": "x"}, name=gone)
        assert cli("vault", "add", str(folder), "--name", gone).exit_code == 0
        folder.rename(tmp_path / f"{gone}-moved")
    done = cli("vault", "index", "--all", "--quiet", "--json")
    assert done.exit_code == 3, done.stderr
    listed = {r["vault"]: r for r in json.loads(done.stdout)}
    assert set(listed) == {"notes", "first", "second"} and "error" not in listed["notes"]
    assert "missing" in listed["first"]["error"] and "missing" in listed["second"]["error"]
    errors = [line for line in done.stderr.splitlines() if line.startswith("arcana: error: ")]
    assert len(errors) == 2 and "first" in errors[0] and "second" in errors[1], done.stderr


# -- the fix an error names works ------------------------------------------------------------------

UNUSABLE_NAMES = ["", "two words", "a/b"]  # an unset variable, a phrase, a path: `agent create` refuses each


@pytest.mark.parametrize("name", UNUSABLE_NAMES, ids=["empty", "space", "slash"])
@pytest.mark.parametrize("args", [["recall", "x", "--agent", "{}"], ["agent", "show", "{}"], ["session", "list", "--agent", "{}"],
                                  ["pool", "show", "{}"], ["recall", "x", "--agent", "ada", "--pool", "{}"]],
                         ids=["recall-agent", "agent-show", "session-list", "pool-show", "recall-pool"])
def test_a_name_that_cannot_exist_is_not_found_without_a_fix_that_fails(cli, args, name):
    """`--agent "$AGENT"` with the variable unset said: create it with `arcana agent create ` (exit 2 itself)."""
    assert cli("remember", "a note", "--agent", "ada").exit_code == 0
    done = cli(*[a.replace("{}", name) for a in args])
    assert done.exit_code == 3, done.stderr
    [line] = done.stderr.splitlines()
    assert "create it with" not in line and ("list`" in line), line


def test_a_missing_valid_name_still_points_to_create(cli):
    """Control: a name that could exist is still sent to `agent create` / `pool create`, and that works."""
    for args, fix in ((["agent", "show", "newbie"], ["agent", "create", "newbie"]), (["pool", "show", "crew"], ["pool", "create", "crew"])):
        done = cli(*args)
        assert done.exit_code == 3 and f"`arcana {' '.join(fix)}`" in done.stderr, done.stderr
        assert cli(*fix).exit_code == 0
        assert cli(*args).exit_code == 0


# -- --json is strict JSON: no number JSON has not -------------------------------------------------


def _strict_json(text: str):
    """json.loads that refuses Infinity and NaN, as jq and every other strict parser does."""

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_no_config_key_takes_a_number_json_cannot_hold(cli, arcana_home):
    """`config set embedding.vector_weight 1e999` wrote Infinity into config.json, and `config get --json`
    printed it: neither is JSON. Every key refuses it (exit 2, file unchanged) or stores a real value."""
    keys = [k for k in _strict_json(cli("config", "keys", "--json").stdout) if "<name>" not in k]
    assert len(keys) > 30
    for key in keys:
        for value in ("1e999", "-1e999", "Infinity", "NaN", "inf"):
            before = arcana_home.config_path.read_bytes() if arcana_home.config_path.exists() else None
            done = cli("config", "set", key, value)
            if done.exit_code != 0:
                # default_model takes a string ("inf"), then refuses it as no registered model: exit 3.
                assert done.exit_code == 2 or (key == "default_model" and done.exit_code == 3), (key, value, done.stderr)
                after = arcana_home.config_path.read_bytes() if arcana_home.config_path.exists() else None
                assert after == before, (key, value)
                continue
            _strict_json(arcana_home.config_path.read_text())  # the file stays JSON
            _strict_json(cli("config", "show", "--json").stdout)
            _strict_json(cli("config", "get", key, "--json").stdout)
    assert cli("config", "set", "embedding.vector_weight", "0.7").exit_code == 0  # control: a real weight is taken
    assert _strict_json(cli("config", "get", "embedding.vector_weight", "--json").stdout) == 0.7


@pytest.mark.parametrize("value", ["1e999", "inf", "nan"])
def test_agent_set_refuses_a_decay_that_json_cannot_hold(cli, value):
    """`--decay episodic.half_life_days=1e999` was taken (exit 0) and stored as null in the card, after
    which every recall of the agent failed with exit 4, blaming the card."""
    assert cli("remember", "The user prefers metric units.", "--agent", "ada").exit_code == 0
    done = cli("agent", "set", "ada", "--decay", f"episodic.half_life_days={value}")
    assert done.exit_code == 2 and "half_life_days" in done.stderr, done.stderr
    assert cli("recall", "metric units", "--agent", "ada").exit_code == 0
    shown = _strict_json(cli("agent", "show", "ada", "--json").stdout)
    assert shown["decay"] == {}
    ok = cli("agent", "set", "ada", "--decay", "episodic.half_life_days=3")  # control: a real half-life is taken
    assert ok.exit_code == 0 and cli("recall", "metric units", "--agent", "ada").exit_code == 0


def test_both_fusion_weights_zero_is_refused_not_a_traceback_later(cli, arcana_home):
    """Each `config set embedding.*_weight 0` was taken; with both at 0 every recall and remember then
    died with a Python traceback ('fusion weights must be ... not both zero')."""
    assert cli("remember", "The user prefers metric units.", "--agent", "ada").exit_code == 0
    assert cli("config", "set", "embedding.vector_weight", "0").exit_code == 0  # control: one at 0 is a choice
    before = arcana_home.config_path.read_bytes()
    done = cli("config", "set", "embedding.keyword_weight", "0")
    assert done.exit_code == 2 and "keyword_weight" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert arcana_home.config_path.read_bytes() == before
    assert cli("recall", "metric units", "--agent", "ada").exit_code == 0
    # The same values written by hand: the file is refused (exit 4) in one line, never a traceback.
    config = json.loads(before)
    config["embedding"]["keyword_weight"] = 0
    arcana_home.config_path.write_text(json.dumps(config))
    for args in (("recall", "metric units", "--agent", "ada"), ("config", "validate")):
        done = cli(*args)
        assert done.exit_code == 4 and done.stderr.startswith("arcana: error: "), (args, done.exit_code, done.stderr)
        assert "keyword_weight" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


@pytest.mark.parametrize(("verb", "does"), [("prune", "prunes"), ("reindex", "reindexes"), ("consolidate", "consolidates")])
def test_agent_and_all_together_is_one_usage_line_in_english(cli, verb, does):
    """It said '--all already reindexs every agent'."""
    assert cli("remember", "a note", "--agent", "ada").exit_code == 0
    done = cli(verb, "--agent", "ada", "--all")
    assert done.exit_code == 2 and f"--all already {does} every agent" in done.stderr, done.stderr


# -- an error is one line, whatever it echoes ---------------------------------------------------------

SERVING = {"mcp", "ui", "vault watch", "run", "host save"}  # serve, stream or read a hook: not this walk


def test_every_command_refusing_a_value_with_a_newline_says_so_in_one_line(cli, tmp_path, monkeypatch):
    """A value with a newline in it (`--agent "$(cat file)"`) was echoed as is: the error ran onto a
    second line, which a script reading the one `arcana: error:` line cut in half."""
    monkeypatch.chdir(tmp_path)  # a command that takes the value as a path (backup, export -o) writes here
    assert cli("remember", "a note", "--agent", "ada").exit_code == 0
    checked = 0
    for name, command in leaves(get_command(app)):
        if name in SERVING:
            continue
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        options = [p for p in command.params if p.param_type_name == "option" and not p.is_flag
                   and p.name not in ("json_", "quiet")]
        for target in arguments + options:
            argv = name.split()
            argv += ["bad\nvalue" if p is target else "ada" for p in arguments]
            argv += [*target.opts[:1], "bad\nvalue"] if target in options else []
            argv += [x for p in options if p.required and p is not target for x in (p.opts[0], "ada")]
            done = cli(*argv, input="")
            assert done.exception is None or isinstance(done.exception, SystemExit), (argv, done.exception)
            if done.exit_code != 0:
                checked += 1
                assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("arcana: error: "), (argv, done.stderr)
    assert checked > 50


def test_a_command_with_nothing_to_print_prints_nothing_not_an_empty_line(cli):
    """`context` for an agent with no memories printed a bare newline (what a session-start hook then put
    before the model), as did `vault index --all` with no vault; --json still prints its document."""
    assert cli("agent", "create", "newbie").exit_code == 0
    for args in (["context", "anything", "--agent", "newbie"], ["vault", "index", "--all"]):
        done = cli(*args)
        assert done.exit_code == 0 and done.stdout == "", (args, repr(done.stdout))
        assert json.loads(cli(*args, "--json").stdout) is not None
    assert cli("remember", "The user prefers metric units.", "--agent", "newbie").exit_code == 0
    assert "metric units" in cli("context", "units", "--agent", "newbie").stdout  # control: data is printed
