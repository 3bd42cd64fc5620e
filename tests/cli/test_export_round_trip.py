"""Every field that decides what recall returns survives every export format (issue 21 items 2, 3):
export → import → export is diffed field by field for JSON Lines and Markdown, a Markdown round
trip of a superseded fact does not resurrect it, and an ``export --all`` file restores every store
(agents with their ids, pools with their members, the global tier) into a fresh home."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from runner import run_arcana

from memory.limits import MAX_IMPORT_STORES
from memory.operations.export import _FRONT_FIELDS
from memory.types import MemoryEntry


def data(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def ok(result):
    assert result.exit_code == 0, result.output
    return result


def fresh_home(tmp_path: Path, monkeypatch, name: str, *, keyword: bool = True) -> Path:
    home = tmp_path / name
    home.mkdir()
    if keyword:
        (home / "config.json").write_text(json.dumps({"embedding": {"providers": []}}))
    monkeypatch.setenv("ARCANA_HOME", str(home))
    return home


def notes_folder(cli, tmp_path: Path, monkeypatch, name: str, notes: dict[str, str]) -> Path:
    """A fresh home with agent ada, and a folder ``name`` of Markdown notes (file name -> text) to import."""
    fresh_home(tmp_path, monkeypatch, "one")
    ok(cli("agent", "create", "ada"))
    folder = tmp_path / name
    folder.mkdir()
    for file, text in notes.items():
        (folder / file).write_text(text)
    return folder


def varied_store(cli) -> dict[str, str]:
    """An agent whose memories differ in every field recall reads: versions, a retraction,
    hidden, private, pinned, archived, tagged, re-scored, agent-asserted. Ids by role."""
    ids = {}

    def remember(role, text, *extra):
        ids[role] = ok(cli("remember", text, "--agent", "ada", *extra)).stdout.strip()

    remember("paris", "I live in Paris.")
    remember("berlin", "I moved to Berlin.")
    remember("cat", "I have a cat named Miso.")
    remember("no_cat", "I no longer have a cat.")
    remember("hidden", "The door code is 4711.", "--tag", "secret")
    remember("pinned", "Always answer in English.", "--type", "procedural", "--importance", "0.8")
    remember("archived", "The old office was on Main Street.")
    remember("private", "My blood type is A+.")
    ok(cli("memory", "set", ids["hidden"], "--agent", "ada", "--visibility", "hidden"))
    ok(cli("memory", "set", ids["private"], "--agent", "ada", "--visibility", "private"))
    ok(cli("memory", "set", ids["pinned"], "--agent", "ada", "--pin"))
    ok(cli("memory", "forget", ids["archived"], "--agent", "ada"))
    return ids


def jsonl_memories(path: Path) -> dict[str, dict]:
    lines = path.read_text().splitlines()[1:]
    return {m["id"]: m for m in (json.loads(line)["memory"] for line in lines)}


def notes(folder: Path) -> dict[str, dict]:
    """Each note's frontmatter plus its body, by id."""
    found = {}
    for path in folder.glob("*.md"):
        _, front, body = path.read_text().split("---\n", 2)
        meta = yaml.safe_load(front)
        found[meta["id"]] = {**meta, "content": body.removeprefix("\n")}
    return found


def test_every_stored_field_is_in_a_notes_frontmatter():
    """Derived from the model, not listed by hand: a field added to MemoryEntry cannot be left out."""
    stored = {name for name, f in MemoryEntry.model_fields.items() if not f.exclude}
    assert set(_FRONT_FIELDS) | {"content"} == stored
    assert {"valid_from", "valid_to", "supersedes", "superseded_by", "visibility", "pinned", "archived",
            "importance", "confidence_source", "tags", "conflict_with"} <= set(_FRONT_FIELDS)


def test_jsonl_export_import_export_is_the_same_field_by_field(cli, tmp_path, monkeypatch):
    fresh_home(tmp_path, monkeypatch, "one")
    ids = varied_store(cli)
    first = tmp_path / "first.jsonl"
    ok(cli("export", "--all", "-o", str(first)))
    fresh_home(tmp_path, monkeypatch, "two")
    ok(cli("import", str(first)))  # an --all export restores the agent with its id: nothing to rewrite
    second = tmp_path / "second.jsonl"
    ok(cli("export", "--all", "-o", str(second)))
    before, after = jsonl_memories(first), jsonl_memories(second)
    assert set(before) == set(after) == set(ids.values())
    for memory_id, fields in before.items():
        assert after[memory_id] == fields, memory_id  # every field, timestamps and version links too
    assert after[ids["paris"]]["superseded_by"] == ids["berlin"] and after[ids["paris"]]["valid_to"]
    assert (after[ids["hidden"]]["visibility"], after[ids["pinned"]]["pinned"], after[ids["archived"]]["archived"]) == (
        "hidden", True, True)


def test_markdown_export_import_export_is_the_same_field_by_field(cli, tmp_path, monkeypatch):
    fresh_home(tmp_path, monkeypatch, "one")
    ids = varied_store(cli)
    first = tmp_path / "first"
    ok(cli("export", "--format", "markdown", "--agent", "ada", "-o", str(first)))
    fresh_home(tmp_path, monkeypatch, "two")
    ok(cli("import", str(first), "--agent", "ada"))
    second = tmp_path / "second"
    ok(cli("export", "--format", "markdown", "--agent", "ada", "-o", str(second)))
    before, after = notes(first), notes(second)
    assert set(before) == set(after) == set(ids.values())
    for memory_id, fields in before.items():
        # agent_id is the importing agent's (a new agent in the new home): the one field import rewrites
        differ = {k for k in fields if k != "agent_id" and after[memory_id].get(k) != fields[k]}
        assert differ == set(), (memory_id, {k: (fields[k], after[memory_id].get(k)) for k in differ})
    paris = after[ids["paris"]]
    assert paris["superseded_by"] == ids["berlin"] and paris["valid_to"] is not None
    assert after[ids["berlin"]]["supersedes"] == ids["paris"] and after[ids["berlin"]]["valid_from"] is not None


def test_a_markdown_round_trip_does_not_resurrect_paris(cli, tmp_path, monkeypatch):
    """The issue's reproduction, with the default offline model: Berlin answers, Paris stays ended."""
    fresh_home(tmp_path, monkeypatch, "one", keyword=False)
    ok(cli("remember", "I live in Paris", "--agent", "ada"))
    ok(cli("remember", "I moved to Berlin", "--agent", "ada"))
    folder = tmp_path / "notes"
    ok(cli("export", "--format", "markdown", "--agent", "ada", "-o", str(folder)))
    fresh_home(tmp_path, monkeypatch, "two", keyword=False)
    ok(cli("import", str(folder), "--agent", "ada"))
    results = [r["content"] for r in data(cli("recall", "where do I live", "--agent", "ada", "--json"))["results"]]
    assert results[0] == "I moved to Berlin" and "I live in Paris" not in results
    listed = {m["content"]: m for m in data(cli("memory", "list", "--agent", "ada", "--all", "--json"))}
    assert listed["I live in Paris"]["valid_to"] and listed["I live in Paris"]["superseded_by"]


@pytest.fixture
def team_home(cli, tmp_path, monkeypatch):
    """Two agents (one with no memories), a pool with one member, the global tier; exported --all."""
    fresh_home(tmp_path, monkeypatch, "one")
    ok(cli("remember", "I live in Paris.", "--agent", "ada"))
    ok(cli("remember", "I moved to Berlin.", "--agent", "ada"))
    ok(cli("agent", "create", "bob"))
    ok(cli("pool", "create", "team"))
    ok(cli("agent", "join", "ada", "team"))
    ok(cli("remember", "Standup is at nine.", "--agent", "ada", "--pool", "team"))
    ok(cli("remember", "The company is called Acme.", "--agent", "ada", "--scope", "global"))
    agents = {a["name"]: a["id"] for a in data(cli("agent", "list", "--json"))}
    dump = tmp_path / "all.jsonl"
    ok(cli("export", "--all", "-o", str(dump)))
    return dump, agents


def test_an_all_export_restores_every_store_into_a_fresh_home(cli, tmp_path, monkeypatch, team_home):
    dump, agents = team_home
    fresh_home(tmp_path, monkeypatch, "two")
    report = data(cli("import", str(dump), "--json"))
    assert {s["store"]: (s["created"], s["read"]) for s in report["stores"]} == {
        "agent:ada": (True, 2), "agent:bob": (True, 0), "pool:team": (True, 1), "global": (False, 1)}
    assert report["joined"] == 1
    assert {a["name"]: a["id"] for a in data(cli("agent", "list", "--json"))} == agents  # the same ids
    recalled = {r["content"]: r["tiers"] for r in data(cli("recall", "standup Acme Berlin Paris", "--agent", "ada", "--json"))["results"]}
    assert set(recalled) == {"I moved to Berlin.", "Standup is at nine.", "The company is called Acme."}  # not Paris
    assert recalled["Standup is at nine."] == ["pool:team"]
    bob = data(cli("recall", "standup Acme Berlin", "--agent", "bob", "--json"))["results"]
    assert [r["content"] for r in bob] == ["The company is called Acme."]  # not a pool member, not ada's
    again = data(cli("import", str(dump), "--json"))  # a second run changes nothing
    assert {s["store"]: s["ops"] for s in again["stores"] if s["read"]} == {
        "agent:ada": {"noop": 2}, "pool:team": {"noop": 1}, "global": {"noop": 1}}


def test_an_all_export_into_one_target_is_refused_saying_how(cli, tmp_path, monkeypatch, team_home):
    dump, _ = team_home
    fresh_home(tmp_path, monkeypatch, "two")
    refused = cli("import", str(dump), "--agent", "x")
    assert refused.exit_code == 2
    assert "export --all" in refused.output and "give no --agent, --pool or --global" in refused.output
    assert data(cli("agent", "list", "--json")) == []  # nothing was touched, no agent made
    one = tmp_path / "ada.jsonl"
    monkeypatch.setenv("ARCANA_HOME", str(tmp_path / "one"))
    ok(cli("export", "--agent", "ada", "-o", str(one)))
    monkeypatch.setenv("ARCANA_HOME", str(tmp_path / "two"))
    untargeted = cli("import", str(one))  # a one-store export still needs its target
    assert untargeted.exit_code == 2 and "only an `export --all` file" in untargeted.output
    ok(cli("import", str(one), "--agent", "x"))  # positive control: with a target it imports
    assert [m["content"] for m in data(cli("memory", "list", "--agent", "x", "--json"))] == ["I moved to Berlin."]



def test_arcana_agent_is_a_default_that_yields_to_another_store(cli, tmp_path, monkeypatch, team_home):
    """With ARCANA_AGENT set (man/commands.md: the default for --agent), `export --pool team`,
    `export --all` and the import of an --all file said "give exactly one of ... (got --agent, --pool)"
    or "give no --agent", though no --agent was typed; `memory list --pool` lets the pool win."""
    dump, _ = team_home
    monkeypatch.setenv("ARCANA_AGENT", "bob")
    pool = tmp_path / "team.jsonl"
    ok(cli("export", "--pool", "team", "-o", str(pool)))
    assert [json.loads(line)["memory"]["content"] for line in pool.read_text().splitlines()[1:]] == ["Standup is at nine."]
    ok(cli("export", "--all", "-o", str(tmp_path / "again.jsonl"), "--yes"))
    monkeypatch.setenv("ARCANA_AGENT", "ada")
    mine = data(cli("export", "--json", "-o", str(tmp_path / "ada.jsonl")))  # the control: alone, it is --agent
    assert mine["memories"] == 2 and mine["stores"] == ["agent:ada"], mine
    typed = cli("export", "--agent", "ada", "--pool", "team")  # two targets typed are still refused
    assert typed.exit_code == 2 and "got --agent, --pool" in typed.output
    fresh_home(tmp_path, monkeypatch, "two")
    report = data(cli("import", str(dump), "--json"))
    assert {s["store"] for s in report["stores"]} == {"agent:ada", "agent:bob", "pool:team", "global"}
    assert {a["name"] for a in data(cli("agent", "list", "--json"))} == {"ada", "bob"}

def test_a_hostile_all_header_is_refused_before_any_store_is_touched(cli, tmp_path, monkeypatch, team_home):
    dump, _ = team_home
    lines = dump.read_text().splitlines()
    head = json.loads(lines[0])
    head["exported"]["all"].append("pool:../../etc")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    fresh_home(tmp_path, monkeypatch, "two")
    refused = cli("import", str(bad))
    assert refused.exit_code == 2 and "invalid pool name" in refused.output
    assert data(cli("agent", "list", "--json")) == []  # no agent made, no pool
    ok(cli("import", str(dump)))  # positive control: the untouched file restores
    assert {a["name"] for a in data(cli("agent", "list", "--json"))} == {"ada", "bob"}


@pytest.mark.parametrize("label", [{"store": "agent:ada"}, ["agent:ada"], 7])
def test_an_all_header_label_that_is_not_a_string_is_one_line_and_exit_2(tmp_path, monkeypatch, team_home, label):
    """A label of the header's ``all`` that is a JSON object or list was a TypeError traceback (exit 1)."""
    dump, _ = team_home
    lines = dump.read_text().splitlines()
    head = json.loads(lines[0])
    head["exported"]["all"].append(label)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    home = fresh_home(tmp_path, monkeypatch, "two")
    refused = run_arcana("import", str(bad), home=home)
    assert refused.returncode == 2, refused.stderr
    assert "not agent:NAME, pool:NAME or global" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert json.loads(run_arcana("agent", "list", "--json", home=home).stdout) == []
    assert run_arcana("import", str(dump), home=home).returncode == 0  # positive control: the real file restores


@pytest.mark.parametrize("kind", ["agent", "pool"])
def test_an_all_header_naming_more_stores_than_the_limit_is_refused_before_any_is_made(
        tmp_path, monkeypatch, team_home, kind):
    """A header of 2,000 agent labels and no memory line made ~1,850 agents before it was stopped: a
    file decides how much an import creates, so past MAX_IMPORT_STORES it is refused up front (exit 2,
    one line) and the home is left as it was; the real file's stores, its positive control, restore."""
    dump, _ = team_home
    lines = dump.read_text().splitlines()
    head = json.loads(lines[0])
    head["exported"]["all"] += [f"{kind}:s{i}" for i in range(MAX_IMPORT_STORES)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    home = fresh_home(tmp_path, monkeypatch, "two")
    refused = run_arcana("import", str(bad), home=home)
    assert refused.returncode == 2, refused.stderr
    assert f"over the limit of {MAX_IMPORT_STORES:,}" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    assert json.loads(run_arcana("agent", "list", "--json", home=home).stdout) == []
    assert json.loads(run_arcana("pool", "list", "--json", home=home).stdout) == []
    restored = run_arcana("import", str(dump), home=home)
    assert restored.returncode == 0, restored.stderr
    assert {a["name"] for a in json.loads(run_arcana("agent", "list", "--json", home=home).stdout)} == {"ada", "bob"}


CARD_READS: list[str] = []  # agent cards opened while a test records them (an audit hook cannot be removed)


def _count_card_reads(event: str, args: tuple) -> None:
    if event == "open" and CARD_READS and str(args[0]).endswith("agent.json"):
        CARD_READS.append(str(args[0]))


sys.addaudithook(_count_card_reads)


@pytest.mark.parametrize("described", [True, False])
def test_restoring_the_agents_of_an_all_header_reads_each_card_a_bounded_number_of_times(
        cli, tmp_path, monkeypatch, described):
    """Each agent a header restored re-read every card made before it (a scan per lookup, two or three
    per agent), so 2,000 agents took ever longer, ~N² card reads in all. Now the agents are resolved
    against one scan. Counted as the cards opened, for a header with ids and one of labels only; every
    agent is made, with its id when the header gives one."""
    agents = 120
    stores = [{"store": f"agent:a{i}", "agent_id": f"id{i:04d}"} for i in range(agents)]
    head = {"format": "arcana-export", "version": 1,
            "exported": {"all": [d["store"] for d in stores], **({"stores": stores} if described else {})}}
    dump = tmp_path / "agents.jsonl"
    dump.write_text(json.dumps(head) + "\n")
    fresh_home(tmp_path, monkeypatch, "many")
    ok(cli("agent", "create", "ada"))  # one agent there already: found, never made again
    CARD_READS[:] = ["(recording)"]
    try:
        ok(cli("import", str(dump)))
    finally:
        reads, CARD_READS[:] = len(CARD_READS) - 1, []
    listed = data(cli("agent", "list", "--json"))
    assert len(listed) == agents + 1
    if described:
        assert {a["id"] for a in listed} >= {d["agent_id"] for d in stores}
    assert reads <= 3 * (agents + 1), reads


def _import_into_a_fresh_home(cli, tmp_path, monkeypatch, head: dict, lines: list[str]):
    """Import ``lines`` under the edited ``head`` into a fresh home; it must be refused (exit 2, one
    line) with no agent made, not even one the header names before the bad one."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    fresh_home(tmp_path, monkeypatch, "two")
    refused = cli("import", str(bad))
    assert refused.exit_code == 2, refused.output
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert data(cli("agent", "list", "--json")) == []
    return refused


@pytest.mark.parametrize("agent_id", ["../../evil", "a/b", ""])
def test_a_path_like_agent_id_in_an_all_header_is_refused_before_any_agent_is_made(
        cli, tmp_path, monkeypatch, team_home, agent_id):
    """A store descriptor's agent id becomes the agent's folder name. One that is path-like was refused
    only when its agent was being made, after the agents before it in the header had been created, and
    with pydantic's three-line ValidationError rather than one line."""
    dump, _ = team_home
    lines = dump.read_text().splitlines()
    head = json.loads(lines[0])
    stores = head["exported"]["stores"]
    assert [d["store"] for d in stores][:2] == ["agent:ada", "agent:bob"]
    stores[1]["agent_id"] = agent_id
    refused = _import_into_a_fresh_home(cli, tmp_path, monkeypatch, head, lines)
    assert "agent id" in refused.stderr, refused.stderr
    ok(cli("import", str(dump)))  # positive control: the untouched file restores
    assert {a["name"] for a in data(cli("agent", "list", "--json"))} == {"ada", "bob"}


def test_two_agents_of_an_all_header_with_one_id_are_refused_before_any_is_made(cli, tmp_path, monkeypatch, team_home):
    """Two agent stores given one id were both restored into the first: bob's lines went silently into
    ada's store, bob was never made, and the import exited 0. Refused up front instead (exit 2, one line)."""
    dump, agents = team_home
    lines = dump.read_text().splitlines()
    head = json.loads(lines[0])
    bob = next(d for d in head["exported"]["stores"] if d["store"] == "agent:bob")
    bob["agent_id"] = agents["ada"]
    refused = _import_into_a_fresh_home(cli, tmp_path, monkeypatch, head, lines)
    assert "agent:ada and agent:bob" in refused.stderr, refused.stderr
    ok(cli("import", str(dump)))  # positive control: the untouched file restores both
    assert {a["name"]: a["id"] for a in data(cli("agent", "list", "--json"))} == agents


@pytest.mark.parametrize("points_at", ["name", "prefix"])
def test_a_header_agent_id_naming_another_agent_never_puts_a_store_into_its(cli, tmp_path, monkeypatch, team_home,
                                                                             points_at):
    """A descriptor's agent id is matched exactly: bob's name or an id prefix of his in ada's descriptor
    put ada's lines into bob's store (reported as ada's); they go to ada, by her name, as before."""
    dump, agents = team_home
    lines = dump.read_text().splitlines()
    head = json.loads(lines[0])
    (ada,) = [d for d in head["exported"]["stores"] if d["store"] == "agent:ada"]
    ada["agent_id"] = "bob" if points_at == "name" else agents["bob"][:8]
    aimed = tmp_path / "aimed.jsonl"
    aimed.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    report = data(cli("import", str(aimed), "--json"))
    assert {s["store"]: s["ops"] for s in report["stores"] if s["read"]}["agent:ada"] == {"noop": 2}  # ada's, again
    assert [m["content"] for m in data(cli("memory", "list", "--agent", "bob", "--json"))] == []
    assert "I moved to Berlin." in [m["content"] for m in data(cli("memory", "list", "--agent", "ada", "--json"))]


def test_an_all_import_never_joins_an_agent_to_a_pool_that_was_already_there(cli, tmp_path, monkeypatch, team_home):
    """A file's header names pool members; only a pool the import creates takes them. A pool of
    this home keeps its members, so a file cannot let an agent read a pool the operator kept it out of."""
    dump, agents = team_home
    lines = dump.read_text().splitlines()
    head = json.loads(lines[0])
    for store in head["exported"]["stores"]:
        if store["store"] == "pool:team":
            store["members"] = [agents["ada"], agents["bob"]]  # bob was never a member
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text(json.dumps(head) + "\n")  # the header alone: no memory line at all
    ok(cli("agent", "leave", "ada", "team"))  # the operator took ada out after the export
    report = data(cli("import", str(hostile), "--json"))
    assert report["joined"] == 0
    assert data(cli("pool", "show", "team", "--json"))["members"] == []
    for name in ("ada", "bob"):
        recalled = [r["content"] for r in data(cli("recall", "standup", "--agent", name, "--json"))["results"]]
        assert "Standup is at nine." not in recalled, name
    # Positive control: the same file into a fresh home creates the pool, and its members join it.
    fresh_home(tmp_path, monkeypatch, "three")
    report = data(cli("import", str(hostile), "--json"))
    assert report["joined"] == 2
    assert sorted(data(cli("pool", "show", "team", "--json"))["members"]) == ["ada", "bob"]


def test_an_all_import_into_a_home_whose_agent_has_another_id_keeps_its_copies_its_own(cli, tmp_path, monkeypatch):
    """An --all file restored into a home where 'ada' exists with another id put her private lines
    into that ada but kept the file's id on the global copies: hiding her fact there left its copy
    live (bob, and ada, still recalled it from the global tier) and deleting her withdrew none."""
    fresh_home(tmp_path, monkeypatch, "one")
    secret = ok(cli("remember", "heron zebracode", "--agent", "ada", "--importance", "0.95")).stdout.strip()
    ok(cli("remember", "kingfisher control fact", "--agent", "ada", "--importance", "0.95"))
    dump = tmp_path / "all.jsonl"
    ok(cli("export", "--all", "-o", str(dump)))
    fresh_home(tmp_path, monkeypatch, "two")
    ok(cli("agent", "create", "ada"))  # the same name, a new id
    ok(cli("agent", "create", "bob"))
    ok(cli("import", str(dump)))
    ada = {a["name"]: a["id"] for a in data(cli("agent", "list", "--json"))}["ada"]
    assert {m["agent_id"] for m in data(cli("memory", "list", "--global", "--all", "--json"))} == {ada}

    def bob_recalls():
        return {r["content"] for r in data(cli("recall", "zebracode kingfisher", "--agent", "bob", "--mode", "keyword",
                                               "--json"))["results"]}

    assert bob_recalls() == {"heron zebracode", "kingfisher control fact"}
    hidden = data(cli("memory", "set", secret, "--agent", "ada", "--visibility", "hidden", "--json"))
    assert [c["op"] for c in hidden["copies"]] == ["withdraw"]
    assert bob_recalls() == {"kingfisher control fact"}  # the control's copy still answers
    gone = data(cli("agent", "delete", "ada", "--yes", "--json"))
    assert gone["copies"]["count"] == 1
    assert data(cli("memory", "list", "--global", "--all", "--json")) == []


def test_a_strict_all_import_with_a_bad_line_restores_nothing(cli, tmp_path, monkeypatch, team_home):
    dump, _ = team_home
    lines = dump.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    stray = json.dumps({"store": "pool:elsewhere", "memory": json.loads(lines[1])["memory"]})
    bad.write_text("\n".join([*lines, stray]) + "\n")
    fresh_home(tmp_path, monkeypatch, "two")
    refused = cli("import", str(bad), "--strict")
    assert refused.exit_code == 2 and "names no store of this export ('pool:elsewhere')" in refused.output
    assert data(cli("agent", "list", "--json")) == []
    lenient = cli("import", str(bad), "--json")  # without --strict the good lines go in, the stray one is named
    assert lenient.exit_code == 2 and json.loads(lenient.stdout)["read"] == 4


def _without_stores(dump, tmp_path):
    """``dump`` as an `--all` export written before its header described its stores."""
    lines = dump.read_text().splitlines()
    head = json.loads(lines[0])
    del head["exported"]["stores"]
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    return old


def test_an_all_export_from_before_stores_were_described_restores_by_name(cli, tmp_path, monkeypatch, team_home):
    dump, agents = team_home
    old = _without_stores(dump, tmp_path)
    fresh_home(tmp_path, monkeypatch, "two")
    report = data(cli("import", str(old), "--json"))
    assert {s["store"] for s in report["stores"]} == {"agent:ada", "agent:bob", "pool:team", "global"}
    assert {a["name"] for a in data(cli("agent", "list", "--json"))} == {"ada", "bob"}
    recalled = [r["content"] for r in data(cli("recall", "Berlin Paris", "--agent", "ada", "--json"))["results"]]
    assert recalled == ["I moved to Berlin."]


def test_an_all_export_from_before_stores_were_described_keeps_the_copies_their_agents(cli, tmp_path, monkeypatch):
    """With no ids in the header, ada is made anew under another id, and her promoted copies kept the
    file's id for their agent: forgetting her fact left its copy answering in the global tier. The
    file's id is learnt from her own lines, so her copies are hers; the other copy is the control."""
    fresh_home(tmp_path, monkeypatch, "one")
    gone, kept = (data(cli("remember", text, "--agent", "ada", "--importance", "0.95", "--json"))
                  for text in ("The heron nests by the lake.", "The kingfisher nests by the river."))
    assert gone["accepted"] == kept["accepted"] == ["private", "global"]
    dump = tmp_path / "all.jsonl"
    ok(cli("export", "--all", "-o", str(dump)))
    old = _without_stores(dump, tmp_path)
    fresh_home(tmp_path, monkeypatch, "two")
    ok(cli("import", str(old)))
    (ada,) = data(cli("agent", "list", "--json"))
    copies = {m["id"]: m["agent_id"] for m in data(cli("memory", "list", "--global", "--json"))}
    assert copies == {gone["id"]: ada["id"], kept["id"]: ada["id"]}
    ok(cli("memory", "forget", gone["id"], "--agent", "ada"))
    assert [m["id"] for m in data(cli("memory", "list", "--global", "--json"))] == [kept["id"]]


def merged_store(cli) -> dict[str, str]:
    """Two teas consolidated into one (a ``consolidates`` edge from the keeper to the other), and a
    fact nothing carries. Ids by role."""
    for text in ("I like tea.", "I like tea.", "I prefer night trains."):
        ok(cli("remember", "--agent", "ada", "--no-reconcile", text))
    (merge,) = data(cli("consolidate", "--agent", "ada", "--dry-run", "--json"))["agents"][0]["decisions"]["merges"]
    ok(cli("consolidate", "--agent", "ada"))
    trains = next(m["id"] for m in data(cli("memory", "list", "--agent", "ada", "--json")) if "trains" in m["content"])
    return {"keeper": merge["keep"], "source": merge["sources"][0], "trains": trains}


def shown(cli, memory_id: str) -> tuple[str, bool]:
    memory = data(cli("memory", "show", memory_id, "--agent", "ada", "--json"))
    return memory["visibility"], memory["archived"]


@pytest.mark.parametrize("form", ["jsonl", "markdown"])
def test_what_a_consolidated_memory_carries_survives_a_round_trip(cli, tmp_path, monkeypatch, form):
    """Hidden means hidden in every copy: hiding a source reaches the memory that carries its content,
    in the imported store exactly as in the original (the edge used to be left out of every export)."""
    fresh_home(tmp_path, monkeypatch, "one")
    ids = merged_store(cli)
    exported = tmp_path / ("export.jsonl" if form == "jsonl" else "notes")
    ok(cli("export", "--agent", "ada", "-o", str(exported), *(["--format", "markdown"] if form == "markdown" else [])))
    if form == "jsonl":
        lines = [json.loads(line) for line in exported.read_text().splitlines()[1:]]
        assert {r["memory"]["id"]: r.get("sources") for r in lines}[ids["keeper"]] == [ids["source"]]
    ok(cli("memory", "set", ids["source"], "--agent", "ada", "--visibility", "hidden"))
    original = {role: shown(cli, i) for role, i in ids.items()}
    assert original["keeper"] != ("visible", False) and original["trains"] == ("visible", False)

    fresh_home(tmp_path, monkeypatch, "two")
    ok(cli("agent", "create", "ada"))
    ok(cli("import", str(exported), "--agent", "ada"))
    assert shown(cli, ids["keeper"]) == ("visible", False)  # positive control: imported as it was exported
    ok(cli("memory", "set", ids["source"], "--agent", "ada", "--visibility", "hidden"))
    assert {role: shown(cli, i) for role, i in ids.items()} == original


def test_an_import_refuses_sources_that_are_not_memory_ids(cli, tmp_path, monkeypatch):
    fresh_home(tmp_path, monkeypatch, "one")
    ok(cli("agent", "create", "ada"))
    header = {"format": "arcana-export", "version": 1, "with_history": False, "with_vectors": False, "model": None}
    good = {"memory": {"id": "m1", "agent_id": "x", "content": "I like tea."}, "sources": ["m0"]}
    bad = {"memory": {"id": "m2", "agent_id": "x", "content": "I like coffee."}, "sources": "m0; DROP TABLE"}
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (header, good, bad)) + "\n")
    done = cli("import", str(path), "--agent", "ada", "--json")
    assert done.exit_code == 2, done.output  # a bad line: named, the good ones stored (man/exit-codes.md)
    report = json.loads(done.stdout)
    assert report["bad"] == [{"where": "line 3", "error": "invalid sources: a list of the memory ids it was made from"}]
    assert report["ops"] == {"insert": 1}  # the good line (a positive control) is in


def test_a_notes_own_sources_property_is_not_taken_for_what_it_carries(cli, tmp_path, monkeypatch):
    folder = notes_folder(cli, tmp_path, monkeypatch, "vault", {
        "tea.md": "---\nsources: Wikipedia\n---\n\nGreen tea has less caffeine than coffee.\n",
        "trains.md": "---\ntags: [travel]\n---\n\nNight trains run from Vienna.\n",
    })
    report = data(cli("import", str(folder), "--agent", "ada", "--json"))
    assert report["bad"] == [] and report["ops"] == {"insert": 2}  # both notes are in; the property is theirs


@pytest.mark.parametrize("form", ["jsonl", "markdown"])
def test_a_digest_is_still_a_digest_after_a_round_trip(cli, tmp_path, monkeypatch, form):
    """A digest was known only by its ledger's ``consolidate`` insert, which an import does not carry:
    in the new home prune archived it instead of condensing it, and consolidate walked it as a plain
    fact (to merge into, or be merged). The merge keeper beside it (the control) stays no digest."""
    fresh_home(tmp_path, monkeypatch, "one")
    turns = tmp_path / "turns.jsonl"
    turns.write_text("".join(json.dumps(line) + "\n" for line in (
        {"content": "Caroline: I went to an LGBTQ support group and it was so very powerful for me.",
         "type": "episodic", "session": "s1", "created_at": "2023-05-08T10:00:00Z"},
        {"content": "Melanie: I painted a sunrise over the lake, and it was such a quiet morning.",
         "type": "episodic", "session": "s1", "created_at": "2023-05-08T10:01:00Z"})))
    ok(cli("remember", "--from", str(turns), "--agent", "ada", "--no-reconcile"))
    ids = merged_store(cli)
    (digest,) = [m for m in data(cli("memory", "list", "--agent", "ada", "--json")) if "LGBTQ" in m["content"]]
    budget = str(sum(len(m["content"].encode()) for m in data(cli("memory", "list", "--agent", "ada", "--json"))) - 10)
    plan = data(cli("prune", "--agent", "ada", "--max-bytes", budget, "--dry-run", "--json"))["agents"][0]
    assert [c["id"] for c in plan["condensations"]] == [digest["id"]] and plan["victim_ids"] == []
    exported = tmp_path / ("export.jsonl" if form == "jsonl" else "notes")
    ok(cli("export", "--agent", "ada", "-o", str(exported), *(["--format", "markdown"] if form == "markdown" else [])))

    fresh_home(tmp_path, monkeypatch, "two")
    ok(cli("agent", "create", "ada"))
    ok(cli("import", str(exported), "--agent", "ada"))
    again = data(cli("prune", "--agent", "ada", "--max-bytes", budget, "--dry-run", "--json"))["agents"][0]
    assert again["condensations"] == plan["condensations"] and again["victim_ids"] == []
    if form == "jsonl":
        lines = {r["memory"]["id"]: r for r in map(json.loads, exported.read_text().splitlines()[1:])}
        assert lines[digest["id"]]["digest"] is True and "digest" not in lines[ids["keeper"]]


@pytest.mark.parametrize("form", ["jsonl", "markdown"])
def test_a_merged_source_answers_as_of_before_the_merge_after_export_and_import(cli, tmp_path, monkeypatch, form):
    """A source consolidation archived answers `recall --as-of` a time before its merge began; an
    export wrote it as `archived: true` like a forgotten one, the import archived it as the operator's,
    and in the new home it answered at no time. The forgotten memory beside it is the control: it stays
    silent in both homes."""
    import time

    fresh_home(tmp_path, monkeypatch, "first", keyword=False)  # "with milk" carries "I like tea" by meaning
    ids = [data(cli("remember", text, "--agent", "ada", "--no-reconcile", "--json"))["id"]
           for text in ("I like ferry rides.", "I like tea.")]
    time.sleep(0.05)
    data(cli("remember", "I like tea with milk.", "--agent", "ada", "--no-reconcile", "--json"))
    ok(cli("memory", "forget", ids[0], "--agent", "ada"))
    ok(cli("consolidate", "--agent", "ada"))
    then = data(cli("memory", "show", ids[1], "--agent", "ada", "--json"))["created_at"]  # before the merge began
    dump = tmp_path / ("ada.jsonl" if form == "jsonl" else "notes")
    ok(cli("export", "--agent", "ada", "-o", str(dump), *(["--format", "markdown"] if form == "markdown" else [])))

    def answers(home) -> list[str]:
        found = data(cli("--home", str(home), "recall", "I like", "--agent", "ada", "--as-of", then, "--json"))
        return [r["id"] for r in found["results"]]

    second = tmp_path / "second"
    ok(cli("--home", str(second), "import", str(dump), "--agent", "ada"))
    first = tmp_path / "first"
    assert answers(first) == [ids[1]]  # control: the source answers then, the forgotten one does not
    assert answers(second) == [ids[1]]


@pytest.mark.parametrize("form", ["jsonl", "markdown"])
def test_what_a_claim_only_quotes_keeps_its_one_way_through_a_round_trip(cli, tmp_path, monkeypatch, form):
    """A claim's ``quoted`` link runs one way: a Markdown note flattened it into plain ``sources``, so in
    the home it was imported into forgetting the claim also reached the fact it quoted. In both forms a
    hide of the fact still reaches the claim (the control: the link is there, and only that way)."""
    fresh_home(tmp_path, monkeypatch, "one")
    ok(cli("agent", "create", "ada"))
    fact = {"memory": {"id": "fact", "agent_id": "x", "content": "My locker code is 4471"}}
    claim = {"memory": {"id": "claim", "agent_id": "x", "content": "The user's locker code 4471 opens locker twelve"},
             "sources": ["fact"], "quoted": ["fact"]}
    header = {"format": "arcana-export", "version": 1, "with_history": False, "with_vectors": False, "model": None}
    made = tmp_path / "made.jsonl"
    made.write_text("".join(json.dumps(x) + "\n" for x in (header, fact, claim)))
    ok(cli("import", str(made), "--agent", "ada"))
    exported = tmp_path / ("export.jsonl" if form == "jsonl" else "notes")
    ok(cli("export", "--agent", "ada", "-o", str(exported), *(["--format", "markdown"] if form == "markdown" else [])))

    fresh_home(tmp_path, monkeypatch, "two")
    ok(cli("agent", "create", "ada"))
    ok(cli("import", str(exported), "--agent", "ada"))
    ok(cli("memory", "forget", "claim", "--agent", "ada"))
    recalled = data(cli("recall", "locker code", "--agent", "ada", "--json"))["results"]
    assert [r["id"] for r in recalled] == ["fact"]  # the claim went, the fact it quoted stays
    ok(cli("memory", "restore", "claim", "--agent", "ada"))
    done = data(cli("memory", "set", "fact", "--agent", "ada", "--visibility", "hidden", "--json"))
    assert [r["id"] for r in done["reached"]] == ["claim"]


@pytest.mark.parametrize(("front", "error"), [
    ("sources: [fact]\nquoted: Einstein", "invalid quoted: a list of those of its sources an agent's claim only quotes"),
    ("sources: [fact]\nquoted: [other]", "invalid quoted: a list of those of its sources an agent's claim only quotes"),
    ("archived: true\nconsolidated: maybe", "invalid consolidated: true (archived into a merge or digest) or false"),
])
def test_a_notes_bad_quoted_or_consolidated_is_a_bad_note_and_the_rest_are_in(cli, tmp_path, monkeypatch, front, error):
    """Refused as a line's are, named on one line (exit 2); the notes beside it (the controls) are in."""
    folder = notes_folder(cli, tmp_path, monkeypatch, "notes", {
        "fact.md": "---\nid: fact\n---\n\nMy locker code is 4471\n",
        "claim.md": "---\nid: claim\nsources: [fact]\nquoted: [fact]\n---\n\nLocker 4471 is twelve\n",
        "old.md": "---\nid: old\narchived: true\nconsolidated: true\n---\n\nI like tea.\n",
        "bad.md": f"---\nid: bad\n{front}\n---\n\nI like coffee.\n",
    })
    done = cli("import", str(folder), "--agent", "ada", "--json")
    assert done.exit_code == 2, done.output
    report = json.loads(done.stdout)
    assert report["bad"] == [{"where": "bad.md", "error": error}]
    assert report["ops"] == {"insert": 3}
    assert [line for line in done.stderr.splitlines() if "bad.md" in line] == [f"arcana: error: {folder}: bad.md: {error}"]
