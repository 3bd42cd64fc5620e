"""A restore reaches the copies a home's agents have on a server tier: a backup holds only the
home's SQLite files, so a memory hidden in the backup but promoted again since kept answering every
agent from the PostgreSQL global tier after the restore. Real homes, the real Typer app, a real
PostgreSQL (tests/support/pg_server.py)."""

from __future__ import annotations

import json

import pytest
from runner import keyword_only

from memory.home import Home

CONTROL = "kingfisher control fact"


def ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def recalled(cli, agent: str, *words: str) -> set[str]:
    """Which of ``words`` ``agent`` recalls (keyword OR); the control must answer too (a positive control)."""
    query = " ".join([*words, "kingfisher"])
    contents = [r["content"] for r in ok(cli("recall", query, "--agent", agent, "--mode", "keyword", "--limit", "50",
                                             "--json"))["results"]]
    assert CONTROL in contents, f"{agent} lost the control memory: {contents}"
    return {word for word in words if any(word in c for c in contents)}


def on_server(home: Home, variable: str) -> None:
    """A keyword-only home whose global tier is the PostgreSQL server named by ``variable``."""
    keyword_only(home)
    config = json.loads(home.config_path.read_text())
    home.config_path.write_text(json.dumps({**config, "memory": {"global_url_env": variable}}))


def promoted(cli, text: str, agent: str, *home: str) -> str:
    said = ok(cli(*home, "remember", text, "--agent", agent, "--importance", "0.95", "--json"))
    assert said["accepted"] == ["private", "global"], said
    return said["id"]


@pytest.fixture
def two_homes(cli, arcana_home, tmp_path, pg_url, monkeypatch):
    """This home (ada, bob) and another (carol) sharing one PostgreSQL global tier; carol's copy is live."""
    monkeypatch.setenv("GLOBAL_PG", pg_url)
    other = Home(tmp_path / "other-home")
    for home in (arcana_home, other):
        on_server(home, "GLOBAL_PG")
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    assert cli("--home", str(other.root), "agent", "create", "carol").exit_code == 0
    promoted(cli, "carol osprey fact", "carol", "--home", str(other.root))
    promoted(cli, CONTROL, "ada")
    return arcana_home, other


def hidden_in_the_backup_live_since(cli, tmp_path) -> tuple[str, str, str]:
    """ada's two memories, hidden / forgotten when the backup is taken, made visible / restored since
    (their copies live again); the backup's path."""
    secret = promoted(cli, "heron zebracode", "ada")
    forgotten = promoted(cli, "plover archivecode", "ada")
    ok(cli("memory", "set", secret, "--visibility", "hidden", "--agent", "ada", "--json"))
    ok(cli("memory", "forget", forgotten, "--agent", "ada", "--json"))
    assert recalled(cli, "bob", "zebracode", "archivecode", "osprey") <= {"osprey"}
    backup = ok(cli("backup", str(tmp_path / "backups"), "--json"))["path"]
    ok(cli("memory", "set", secret, "--visibility", "visible", "--agent", "ada", "--json"))
    ok(cli("memory", "restore", forgotten, "--agent", "ada", "--json"))
    return secret, forgotten, backup


def test_a_restore_withdraws_the_server_copy_of_a_memory_it_hides_again(cli, two_homes, tmp_path):
    """Hidden in the backup, visible (promoted again) since: after the restore ada's memory is hidden
    and its copy is gone from the server; one forgotten in the backup has its copy archived again.
    Controls: ada's other promoted fact still answers bob, and carol's copy (another home's, same
    server) is untouched."""
    secret, _, backup = hidden_in_the_backup_live_since(cli, tmp_path)
    assert recalled(cli, "bob", "zebracode", "archivecode", "osprey") == {"zebracode", "archivecode", "osprey"}

    result = cli("restore", backup, "--force", "--json")
    assert ok(cli("memory", "show", secret, "--agent", "ada", "--json"))["visibility"] == "hidden"
    assert recalled(cli, "bob", "zebracode", "archivecode", "osprey") == {"osprey"}
    assert recalled(cli, "ada", "zebracode", "archivecode", "osprey") == {"osprey"}
    report = ok(result)["copies"]
    assert (report["withdrawn"], report["archived"], report["unchecked"]) == (1, 1, []), report
    assert "withdrew 1 copy, archived 1 copy" in result.stderr


def test_a_sqlite_global_tier_is_restored_with_the_home(cli, no_embedder, tmp_path):
    """The positive control of the hole: ``global.db`` is in the backup, so its copies come back as
    they were with no server to check (``tier`` None); bob no longer recalls the hidden fact."""
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    promoted(cli, CONTROL, "ada")
    _, _, backup = hidden_in_the_backup_live_since(cli, tmp_path)
    assert recalled(cli, "bob", "zebracode", "archivecode") == {"zebracode", "archivecode"}

    report = ok(cli("restore", backup, "--force", "--json"))["copies"]
    assert report["tier"] is None and report["withdrawn"] == report["archived"] == 0, report
    assert recalled(cli, "bob", "zebracode", "archivecode") == set()


def test_a_server_out_of_reach_leaves_the_home_restored_and_says_how_to_finish(cli, two_homes, tmp_path, pg_url,
                                                                                 monkeypatch):
    """The restore completes (ada's memory is hidden again) but exits 5 naming the agents whose copies
    were not checked and `arcana restore --copies`; run once the server is back, that withdraws the copy."""
    from arcana_cli import exit_codes

    secret, _, backup = hidden_in_the_backup_live_since(cli, tmp_path)
    monkeypatch.setenv("GLOBAL_PG", "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2")
    result = cli("restore", backup, "--force", "--json")
    assert result.exit_code == exit_codes.STORAGE, result.output
    report = json.loads(result.stdout)["copies"]
    assert len(report["unchecked"]) == 2 and report["withdrawn"] == 0, report
    assert "were not checked" in result.stderr and "arcana restore --copies" in result.stderr
    assert ok(cli("memory", "show", secret, "--agent", "ada", "--json"))["visibility"] == "hidden"

    monkeypatch.setenv("GLOBAL_PG", pg_url)
    assert recalled(cli, "bob", "zebracode", "osprey") == {"zebracode", "osprey"}  # still live until finished
    report = ok(cli("restore", "--copies", "--json"))["copies"]
    assert (report["withdrawn"], report["archived"], report["unchecked"]) == (1, 1, []), report
    assert recalled(cli, "bob", "zebracode", "osprey") == {"osprey"}


@pytest.mark.parametrize("later", [False, True])
def test_a_restore_withdraws_the_server_copies_of_what_it_takes_away(cli, two_homes, tmp_path, pg_url, monkeypatch,
                                                                     later):
    """Said after the backup, a promoted memory's copy on the server outlived the restore that took the
    memory away (and dan, an agent made since, with his): bob went on recalling both, and no `memory`
    command of an agent here reached them. Controls: ada's fact from before the backup and carol's copy
    (another home's) still answer bob, and so does what ada wrote to the global tier itself. ``later``:
    the server is out of reach during the restore, and `restore --copies` finishes it."""
    backup = ok(cli("backup", str(tmp_path / "backups"), "--json"))["path"]
    promoted(cli, "heron latecode", "ada")
    assert cli("agent", "create", "dan").exit_code == 0
    promoted(cli, "dunlin lostcode", "dan")
    direct = ok(cli("remember", "ada directcode", "--agent", "ada", "--scope", "global", "--json"))
    assert direct["accepted"] == ["global"], direct
    words = ("latecode", "lostcode", "directcode", "osprey")
    assert recalled(cli, "bob", *words) == set(words)

    if later:
        monkeypatch.setenv("GLOBAL_PG", "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2")
        assert cli("restore", backup, "--force", "--json").exit_code != 0
        monkeypatch.setenv("GLOBAL_PG", pg_url)
        report = ok(cli("restore", "--copies", "--json"))["copies"]
    else:
        report = ok(cli("restore", backup, "--force", "--json"))["copies"]
    assert recalled(cli, "bob", *words) == {"directcode", "osprey"}
    assert (report["withdrawn"], report["unchecked"]) == (2, []), report


def test_restore_copies_compares_with_a_replaced_home_inside_the_trash_only(tmp_path):
    """`restore --copies` reads the last pre-restore folder's agents: a link planted under that name
    (to another home's agents) or a file is no such folder; the real one (the control) is taken."""
    from memory.operations.backup import last_replaced

    home = Home(tmp_path / "home")
    real = home.trash_dir / "pre-restore-20260101T000000Z"
    real.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "agents").mkdir(parents=True)
    (home.trash_dir / "pre-restore-20991231T000000Z").symlink_to(elsewhere)
    (home.trash_dir / "pre-restore-20990101T000000Z").write_text("")
    assert last_replaced(home).root == real


def test_a_restore_leaves_the_server_copy_of_a_restatement_consolidation_merged(cli, two_homes, tmp_path):
    """Consolidation archives a promoted restatement into the memory that says it (not promoted) and
    leaves its copy live: bob reads the fact from the server. A restore of the same home archived that
    copy as if ada had forgotten the memory, and bob never read it again. Control: the copy of a memory
    ada forgot is archived by the same restore."""
    keeper = ok(cli("remember", "Wren nest code 4471.", "--agent", "ada", "--no-reconcile", "--json"))
    assert keeper["accepted"] == ["private"]
    absorbed = ok(cli("remember", "Wren nest code 4471", "--agent", "ada", "--no-reconcile", "--importance", "0.95",
                      "--json"))
    assert absorbed["accepted"] == ["private", "global"]
    forgotten = promoted(cli, "plover archivecode", "ada")
    merged = ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]
    assert (merged["merged"], merged["merged_sources"]) == (1, 1), merged
    ok(cli("memory", "forget", forgotten, "--agent", "ada", "--json"))
    backup = ok(cli("backup", str(tmp_path / "backups"), "--json"))["path"]
    ok(cli("memory", "restore", forgotten, "--agent", "ada", "--json"))  # its copy answers again
    assert recalled(cli, "bob", "4471", "archivecode") == {"4471", "archivecode"}

    ok(cli("restore", backup, "--force", "--json"))
    assert recalled(cli, "bob", "4471", "archivecode") == {"4471"}
