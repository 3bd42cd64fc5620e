"""`arcana agent`: create, list, show, rename, delete — by name or by id."""

from __future__ import annotations

import json

import pytest

from memory.errors import ConfigError

# Keyword-only homes: these tests are about the store, not the embedding model.
pytestmark = pytest.mark.usefixtures("no_embedder")


def create(cli, name: str) -> dict:
    result = cli("agent", "create", name, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_create_prints_the_id_and_writes_a_card(cli, arcana_home):
    result = cli("agent", "create", "ada")
    assert result.exit_code == 0
    agent_id = result.stdout.strip()
    card = json.loads((arcana_home.agent_dir(agent_id) / "agent.json").read_text())
    assert (card["id"], card["name"]) == (agent_id, "ada")


def test_list_is_sorted_by_name(cli):
    ids = {name: create(cli, name)["id"] for name in ("zed", "ada", "mia")}
    listed = json.loads(cli("agent", "list", "--json").stdout)
    assert [(a["name"], a["id"]) for a in listed] == [(n, ids[n]) for n in ("ada", "mia", "zed")]
    table = cli("agent", "list").stdout
    assert table.index("ada") < table.index("mia") < table.index("zed")


def test_empty_list(cli):
    result = cli("agent", "list", "--json")
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])


@pytest.mark.parametrize("by", ["name", "id", "prefix"])
def test_show_by_name_id_or_prefix(cli, arcana_home, by):
    card = create(cli, "ada")
    create(cli, "bob")
    key = {"name": "ada", "id": card["id"], "prefix": card["id"][:8]}[by]
    shown = json.loads(cli("agent", "show", key, "--json").stdout)
    assert shown["id"] == card["id"] and shown["memory_db"] == str(arcana_home.agent_db(card["id"]))


def test_show_unknown_is_exit_3(cli):
    result = cli("agent", "show", "ghost")
    assert result.exit_code == 3 and "no agent named 'ghost'" in result.stderr and result.stdout == ""


def test_duplicate_and_invalid_names_are_rejected(cli):
    create(cli, "ada")
    duplicate = cli("agent", "create", "ada")
    assert duplicate.exit_code == 2 and "already exists" in duplicate.stderr
    for bad in ("-x", "has space", "a/b", "x" * 65):
        result = cli("agent", "create", "--", bad) if bad.startswith("-") else cli("agent", "create", bad)
        assert result.exit_code == 2 and "invalid agent name" in result.stderr, bad  # invalid input
    assert [a["name"] for a in json.loads(cli("agent", "list", "--json").stdout)] == ["ada"]


@pytest.mark.parametrize("by", ["name", "id"])
def test_rename_keeps_id_and_memory(cli, by):
    card = create(cli, "ada")
    assert cli("remember", "ada likes tea", "--agent", "ada").exit_code == 0
    result = cli("agent", "rename", "ada" if by == "name" else card["id"], "ada2", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["id"] == card["id"]
    assert cli("agent", "show", "ada").exit_code == 3
    recalled = json.loads(cli("recall", "tea", "--agent", "ada2", "--json").stdout)["results"]
    assert [r["content"] for r in recalled] == ["ada likes tea"]


def test_rename_onto_an_existing_name_fails(cli):
    create(cli, "ada")
    create(cli, "bob")
    result = cli("agent", "rename", "ada", "bob")
    assert result.exit_code == 2
    assert {a["name"] for a in json.loads(cli("agent", "list", "--json").stdout)} == {"ada", "bob"}


def test_delete_without_yes_refuses_when_stdin_is_not_a_tty(cli, arcana_home):
    card = create(cli, "ada")
    result = cli("agent", "delete", "ada", input="y\n")
    assert result.exit_code == 2 and "--yes" in result.stderr
    assert arcana_home.agent_dir(card["id"]).exists()


@pytest.mark.parametrize("by", ["name", "id"])
def test_delete_moves_everything_to_the_trash(cli, arcana_home, by):
    card = create(cli, "ada")
    create(cli, "bob")
    assert cli("remember", "kept in the trash", "--agent", "ada").exit_code == 0
    before = sorted(p.relative_to(arcana_home.agent_dir(card["id"])) for p in arcana_home.agent_dir(card["id"]).rglob("*"))
    result = cli("agent", "delete", "ada" if by == "name" else card["id"], "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    moved = arcana_home.root / json.loads(result.stdout)["moved_to"]
    assert moved.parent == arcana_home.trash_dir
    assert sorted(p.relative_to(moved) for p in moved.rglob("*")) == before  # nothing deleted
    assert not arcana_home.agent_dir(card["id"]).exists()
    assert [a["name"] for a in json.loads(cli("agent", "list", "--json").stdout)] == ["bob"]
    assert "trash" in result.stderr


def test_a_card_written_before_pools_moved_to_config_still_loads(arcana_home):
    from memory.agents import AgentRegistry

    registry = AgentRegistry(arcana_home)
    card = registry.create("old-timer")
    path = arcana_home.agent_dir(card.id) / "agent.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "pools": ["team"]}))
    assert registry.resolve("old-timer").id == card.id
    path.write_text(json.dumps({**data, "pool": ["team"]}))  # control: a real typo is still refused
    with pytest.raises(ConfigError, match="agent.json"):
        registry.resolve("old-timer")


def test_agent_set_decay_validates_before_saving(cli, arcana_home):
    create(cli, "ada")
    changed = cli("agent", "set", "ada", "--decay", "episodic.half_life_days=3", "--decay", "semantic.floor=0.5", "--json")
    assert changed.exit_code == 0, changed.stderr
    assert json.loads(changed.stdout)["decay"] == {"episodic": {"half_life_days": 3}, "semantic": {"floor": 0.5}}
    bad = cli("agent", "set", "ada", "--decay", "episodic.half_life_days=-1")
    assert bad.exit_code == 2 and "--decay episodic.half_life_days" in bad.stderr  # the option, not the card
    assert cli("agent", "set", "ada", "--decay", "sometype.floor=0.1").exit_code == 2
    assert cli("agent", "set", "ada", "--decay", "episodic").exit_code == 2
    card = json.loads(cli("agent", "show", "ada", "--json").stdout)
    assert card["decay"] == {"episodic": {"half_life_days": 3}, "semantic": {"floor": 0.5}}  # bad values saved nothing


def test_agent_set_decay_mends_a_card_with_more_than_one_bad_field(cli, arcana_home):
    """The command the card's error names could not fix the card: it checked the option merged with the
    card's whole block, so a second hand-edited bad field failed it, blamed on the option (exit 2).
    Now each option is checked on its own, null clears a field, and what the card still holds wrong is
    the card's error (exit 4, nothing saved), until one command mends it all."""
    card = create(cli, "ada")
    path = arcana_home.agent_dir(card["id"]) / "agent.json"
    data = json.loads(path.read_text())
    broken = {"semantic": {"half_life_days": -5, "bogus": 1}, "sematic": {"half_life_days": 10},
              "episodic": {"half_life_days": 3}}
    path.write_text(json.dumps({**data, "decay": broken}))
    one = cli("agent", "set", "ada", "--decay", "semantic.half_life_days=30")
    assert one.exit_code == 4 and str(path) in one.stderr and "decay.semantic.bogus" in one.stderr
    assert "null clears it" in one.stderr and "--decay semantic" not in one.stderr  # the card's error, not the option's
    assert json.loads(path.read_text())["decay"] == broken  # nothing saved
    bad = cli("agent", "set", "ada", "--decay", "semantic.half_life_days=0")
    assert bad.exit_code == 2 and "--decay semantic.half_life_days" in bad.stderr  # a bad option is still the option's
    mended = cli("agent", "set", "ada", "--decay", "semantic.half_life_days=30", "--decay", "semantic.bogus=null",
                 "--decay", "sematic.half_life_days=null", "--json")
    assert mended.exit_code == 0, mended.stderr
    # the card's good field kept (the control), the bad ones replaced or cleared
    assert json.loads(mended.stdout)["decay"] == {"semantic": {"half_life_days": 30}, "episodic": {"half_life_days": 3}}
    assert cli("recall", "anything", "--agent", "ada").exit_code == 0


@pytest.mark.parametrize("bad, why", [("NaN", "NaN is not a JSON value"),  # not JSON: refused by the reader
                                      ("-5", "memory_weights.semantic: Input should be greater than or equal to 0"),
                                      ("1e308", "memory_weights.semantic: Input should be less than or equal to 1")])
def test_a_hand_edited_weight_outside_0_to_1_is_the_cards_error(cli, arcana_home, bad, why):
    """`agent set --weight` takes 0..1, but a card edited by hand to NaN was read as it was: every
    `recall --json` printed the bare word NaN (jq refuses it), and -5 ranked the type below everything."""
    card = create(cli, "ada")
    assert cli("remember", "the user prefers metric units", "--agent", "ada", "--type", "semantic").exit_code == 0
    path = arcana_home.agent_dir(card["id"]) / "agent.json"
    path.write_text(path.read_text().replace('"memory_weights": {}', f'"memory_weights": {{"semantic": {bad}}}'))
    edited = path.read_text()
    refused = cli("recall", "metric units", "--agent", "ada", "--json")
    lines = refused.stderr.strip().splitlines()
    assert (refused.exit_code, refused.stdout) == (4, "")
    assert len(lines) == 1 and str(path) in lines[0] and why in lines[0]
    assert path.read_text() == edited
    path.write_text(edited.replace(f'"semantic": {bad}', '"semantic": 1'))  # control: the top of the range
    recalled = cli("recall", "metric units", "--agent", "ada", "--json")
    assert recalled.exit_code == 0, recalled.stderr
    assert [r["content"] for r in json.loads(recalled.stdout)["results"]] == ["the user prefers metric units"]


def test_a_hand_edited_extraction_block_is_exit_4_naming_the_card(cli, arcana_home):
    """A card's `extraction` was read as any dict: `"max_content": "lots"` passed, and every recall and
    remember of the agent then failed with exit 2 ('invalid max_content'), naming neither card nor fix."""
    card = create(cli, "ada")
    path = arcana_home.agent_dir(card["id"]) / "agent.json"
    clean = path.read_text()
    for block, named in (('{"max_content": "lots"}', "extraction: max_content: Input should be a valid integer"),
                         ('{"bogus": 1}', "extraction: unknown key 'bogus'")):
        path.write_text(clean.replace('"extraction": {}', f'"extraction": {block}'))
        for args in (("recall", "tea", "--agent", "ada"), ("remember", "tea at five", "--agent", "ada")):
            result = cli(*args)
            lines = result.stderr.strip().splitlines()
            assert (result.exit_code, len(lines)) == (4, 1), (args, lines)
            assert str(path) in lines[0] and named in lines[0], lines
        assert block in path.read_text()  # unchanged
    # valid alone, but together with config.json's defaults a cap above user_confidence: the agent's error
    path.write_text(clean.replace('"extraction": {}', '"extraction": {"agent_confidence_cap": 0.95}'))
    result = cli("recall", "tea", "--agent", "ada")
    assert result.exit_code == 4 and "agent 'ada' extraction" in result.stderr and "agent set ada" in result.stderr
    assert cli("agent", "set", "ada", "--extraction", "user_confidence=0.99").exit_code == 0  # its fix, and control
    assert cli("remember", "tea at five", "--agent", "ada").exit_code == 0
    assert "tea at five" in cli("recall", "tea", "--agent", "ada", "--json").stdout


def test_a_name_two_cards_hold_is_refused_never_taken_for_either_agent(cli, arcana_home):
    """A card edited (or copied) to another agent's name was taken silently: `--agent ada` reached
    whichever folder sorted first, so ada's next memory went into bob's store, and doctor said ok."""
    ada, bob = create(cli, "ada")["id"], create(cli, "bob")["id"]
    for name in ("ada", "bob"):
        assert cli("remember", f"{name} keeps the ledger", "--agent", name).exit_code == 0
    path = arcana_home.agent_dir(bob) / "agent.json"
    path.write_text(path.read_text().replace('"name": "bob"', '"name": "ada"'))
    for args in (("remember", "the vault code is 1234", "--agent", "ada"), ("recall", "ledger", "--agent", "ada"),
                 ("agent", "delete", "ada", "--yes")):
        refused = cli(*args)
        lines = refused.stderr.strip().splitlines()
        assert (refused.exit_code, len(lines), refused.stdout) == (4, 1, ""), (args, lines)
        assert ada in lines[0] and bob in lines[0] and "agent rename" in lines[0]
    doctor = cli("doctor")
    assert doctor.exit_code == 1 and f"the agent name 'ada' is on 2 agents' cards" in doctor.stdout
    # control: each is reached by its id, holding only its own memory; renamed, the name is ada's again
    for agent_id, own in ((ada, "ada keeps the ledger"), (bob, "bob keeps the ledger")):
        found = json.loads(cli("recall", "ledger", "--agent", agent_id, "--json").stdout)["results"]
        assert [r["content"] for r in found] == [own]
    assert cli("agent", "rename", bob, "bob").exit_code == 0
    assert cli("remember", "the vault code is 1234", "--agent", "ada").exit_code == 0
    found = json.loads(cli("recall", "vault code", "--agent", bob, "--json").stdout)["results"]
    assert found == [] and "1234" in cli("recall", "vault code", "--agent", ada).stdout
    assert cli("doctor").stdout.count("FAIL  agent cards") == 0
