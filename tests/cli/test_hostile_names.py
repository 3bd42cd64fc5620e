"""Every name or id that becomes part of a path is checked where it is loaded, whatever wrote it.

Agent ids and names from agent.json, pool and vault names from config.json
(written by `config set`, a restore or a text editor), `embedding.fastembed_model`,
and `vault add --pool`. Each attack is paired with the legitimate name beside it
in the same home, so a check that refuses everything fails too.
"""

from __future__ import annotations

import json
import os

import pytest

from arcana_cli import exit_codes


def _files_outside(root, before: set[str]) -> set[str]:
    return {p for p in _listing(root)} - before


def _listing(root) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        found |= {os.path.join(dirpath, n) for n in dirnames + filenames}
    return found


def _one_line(result) -> None:
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().startswith("arcana: error:"), result.stderr


def test_an_agent_card_whose_id_is_a_path_is_refused_and_creates_nothing_outside(cli, arcana_home, tmp_path, no_embedder):
    assert cli("remember", "the legitimate one", "--agent", "ada").exit_code == 0
    assert cli("recall", "legitimate", "--agent", "ada").exit_code == 0  # positive control
    card_dir = next(arcana_home.agents_dir.iterdir())
    card = json.loads((card_dir / "agent.json").read_text())
    evil_dir = arcana_home.agents_dir / "evil"
    evil_dir.mkdir()
    (evil_dir / "agent.json").write_text(json.dumps({**card, "id": "../../../escaped", "name": "evil"}))
    before = _listing(tmp_path)
    result = cli("remember", "planted", "--agent", "evil")
    assert result.exit_code == exit_codes.CONFIG
    _one_line(result)
    assert "agent id" in result.stderr and "../../../escaped" in result.stderr
    assert not (tmp_path.parent / "escaped").exists() and not (tmp_path / "escaped").exists()
    assert _files_outside(tmp_path, before) == set()


def test_a_card_claiming_another_agents_id_is_refused(cli, arcana_home, no_embedder):
    assert cli("remember", "ada's own", "--agent", "ada").exit_code == 0
    card_dir = next(arcana_home.agents_dir.iterdir())
    card = json.loads((card_dir / "agent.json").read_text())
    twin = arcana_home.agents_dir / "0123456789abcdef0123456789abcdef"
    twin.mkdir()
    (twin / "agent.json").write_text(json.dumps({**card, "name": "mallory"}))
    for who in ("mallory", twin.name, twin.name[:8]):  # the copy is refused whichever way it is asked for
        result = cli("recall", "own", "--agent", who)
        assert result.exit_code == exit_codes.CONFIG, who
        _one_line(result)
        assert "is not its folder's name" in result.stderr
    # it takes nothing over: ada's id and name still reach ada's own card and store (and only hers)
    for who in (card["id"], "ada"):
        result = cli("recall", "own", "--agent", who, "--json")
        assert result.exit_code == 0 and [r["content"] for r in json.loads(result.stdout)["results"]] == ["ada's own"]
    listed = cli("agent", "list", "--json")
    assert listed.exit_code == exit_codes.CONFIG and [a["name"] for a in json.loads(listed.stdout)] == ["ada"]
    assert str(twin) in listed.stderr


@pytest.mark.parametrize("name", ["/abs/path", "sub/dir", "..", "../../p"])
def test_config_set_refuses_a_pool_name_that_is_a_path(cli, arcana_home, tmp_path, name):
    assert cli("config", "set", "pools.team.members", '["ada"]').exit_code == 0  # positive control
    before = _listing(tmp_path)
    result = cli("config", "set", f"pools.{name}.members", '["ada"]')
    assert result.exit_code in (exit_codes.CONFIG, exit_codes.USAGE), result.stderr
    _one_line(result)
    assert name not in json.loads(arcana_home.config_path.read_text())["pools"]
    assert _files_outside(tmp_path, before) == set()


@pytest.mark.parametrize("section", ["pools", "vaults"])
def test_a_config_json_with_a_path_as_a_pool_or_vault_name_is_refused_at_load(cli, arcana_home, tmp_path, section, no_embedder):
    assert cli("remember", "x", "--agent", "ada").exit_code == 0
    config = json.loads(arcana_home.config_path.read_text()) if arcana_home.config_path.exists() else {}
    value = {"members": ["ada"]} if section == "pools" else {"path": str(tmp_path)}
    config[section] = {"good": value}
    arcana_home.config_path.write_text(json.dumps(config))
    assert cli("recall", "x", "--agent", "ada").exit_code == 0  # positive control
    escape = str(tmp_path / "abs-escape")  # absolute: pools/<it>.db would be tmp_path/abs-escape.db
    config[section] = {escape: value, "sub/dir": value}
    arcana_home.config_path.write_text(json.dumps(config))
    before = _listing(tmp_path)
    result = cli("recall", "x", "--agent", "ada")
    assert result.exit_code == exit_codes.CONFIG
    _one_line(result)
    assert _files_outside(tmp_path, before) == set()


def test_memory_pools_list_refuses_a_path(cli, arcana_home):
    assert cli("config", "set", "memory.pools", '["team"]').exit_code == 0
    result = cli("config", "set", "memory.pools", '["../../etc/x"]')
    assert result.exit_code == exit_codes.USAGE
    _one_line(result)


def test_fastembed_model_must_be_a_model_name(cli, arcana_home):
    assert cli("config", "set", "embedding.fastembed_model", "BAAI/bge-small-en-v1.5").exit_code == 0
    for bad in ("../../../../etc/passwd", "/etc/passwd", "a/../../b", "org/name/extra"):
        result = cli("config", "set", "embedding.fastembed_model", bad)
        assert result.exit_code == exit_codes.USAGE, bad
        _one_line(result)
    assert json.loads(arcana_home.config_path.read_text())["embedding"]["fastembed_model"] == "BAAI/bge-small-en-v1.5"


def test_vault_add_refuses_a_pool_that_does_not_exist(cli, arcana_home, tmp_path, make_vault):
    folder = make_vault({"a.md": "alpha"})
    assert cli("pool", "create", "team").exit_code == 0
    bad = cli("vault", "add", str(folder), "--name", "v1", "--pool", "../../p")
    assert bad.exit_code in (exit_codes.USAGE, exit_codes.NOT_FOUND)
    _one_line(bad)
    missing = cli("vault", "add", str(folder), "--name", "v1", "--pool", "nosuch")
    assert missing.exit_code == exit_codes.NOT_FOUND
    _one_line(missing)
    assert "v1" not in json.loads(arcana_home.config_path.read_text()).get("vaults", {})
    assert cli("vault", "add", str(folder), "--name", "v1", "--pool", "team").exit_code == 0  # positive control


def test_the_path_builders_refuse_what_slipped_past_loading(arcana_home):
    from memory.errors import ConfigError

    assert arcana_home.pool_db("team").name == "team.db"
    for build in (arcana_home.agent_dir, arcana_home.pool_db, arcana_home.vault_db):
        for bad in ("../x", "/abs", "a/b", "", ".."):
            with pytest.raises(ConfigError):
                build(bad)


def test_a_config_nested_100000_deep_exits_4_with_one_line(cli, arcana_home, no_embedder):
    assert cli("remember", "x", "--agent", "ada").exit_code == 0
    arcana_home.config_path.write_text('{"memory":' + "[" * 100_000 + "]" * 100_000 + "}")
    for args in (("recall", "x", "--agent", "ada"), ("config", "validate"), ("doctor",)):
        result = cli(*args)
        assert result.exit_code in (exit_codes.CONFIG, exit_codes.FAILURE), (args, result.exit_code)
        assert "Traceback" not in result.stderr and result.exception is None or isinstance(result.exception, SystemExit)
        if args[0] != "doctor":
            assert result.exit_code == exit_codes.CONFIG
            assert "nested too deeply" in result.stderr
    arcana_home.config_path.write_text("{}")
    assert cli("recall", "x", "--agent", "ada").exit_code == 0  # positive control


HOSTILE = "\x1b]0;pwned\x07\x1b[31m" + "x" * 100_000  # retitles and recolours a terminal, then runs on


@pytest.mark.parametrize("args", [
    ("agent", "create", "{}"), ("recall", "x", "--agent", "{}"), ("agent", "show", "{}"), ("pool", "create", "{}"),
    ("pool", "show", "{}"), ("vault", "status", "{}"), ("model", "remove", "{}"),
], ids=lambda args: " ".join(a for a in args if a != "{}"))
def test_a_hostile_name_is_echoed_escaped_and_short(cli, args, no_embedder):
    """An error echoing the name showed 2,000 of its characters (the line's own cut); one helper now
    quotes every agent, pool, vault and model name it echoes: escaped, cut, its length said. The
    control: a short bad name is still echoed whole."""
    def line_for(name: str) -> str:
        result = cli(*(a.replace("{}", name) for a in args))
        assert result.exit_code in (exit_codes.USAGE, exit_codes.NOT_FOUND), result.output[:300]
        _one_line(result)
        (line,) = result.stderr.strip().splitlines()
        return line

    assert "'no/pe'" in line_for("no/pe")
    line = line_for(HOSTILE)
    assert len(line) < 400, line[:400]
    assert "\x1b" not in line and "'\\x1b]0;pwned\\x07" in line and f"({len(HOSTILE):,} characters)" in line
