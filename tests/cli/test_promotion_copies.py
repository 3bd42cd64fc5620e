"""A promoted copy is the same memory: every operator edit through --agent reaches it,
or the command fails loudly (issue 9, item 1). Real homes, the real Typer app,
real processes holding the global tier's lock, the loopback model server."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

import pytest
from federation_faults import corrupt_file, locked_by_another_process, locked_once
from typer.main import get_command

from arcana_cli import exit_codes
from arcana_cli.app import app
from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.operator import edits as operator_edits
from memory.operator.edits import MUTATORS, Edit, GlobalCopies, MemoryEditor
from memory.sqlite.connection import connect_readonly
from memory.types import Audience, MemoryEntry, MemoryQuery, MemoryType, Visibility

READ_ONLY = {"list", "show", "history"}
TARGETING = {"memory_id", "agent", "pool", "global_", "json_", "yes"}  # which memory, not what to do to it
CONTROL = "kingfisher control fact"


@pytest.fixture
def home(cli, no_embedder):
    """ada and bob; the global tier exists (keyword only), a tight global write budget, one control memory."""
    no_embedder.connections_path.parent.mkdir(parents=True, exist_ok=True)
    no_embedder.connections_path.write_text(json.dumps({"global": {"write_timeout_ms": 1500}}))
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    control = ok(cli("remember", CONTROL, "--agent", "ada", "--importance", "0.95", "--json"))
    assert control["accepted"] == ["private", "global"]
    return no_embedder


def ok(result) -> dict | list:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def recalled(cli, agent: str, *words: str) -> set[str]:
    """Which of ``words`` ``agent`` recalls (keyword OR), the unrelated control required as a positive control."""
    query = " ".join([*words, "kingfisher"])
    results = ok(cli("recall", query, "--agent", agent, "--mode", "keyword", "--limit", "100", "--json"))["results"]
    contents = [r["content"] for r in results]
    assert CONTROL in contents, f"{agent} lost the unrelated control memory: {contents}"
    return {word for word in words if any(word in c for c in contents)}


async def copies_and_ops(home, agent_id: str, ids: list[str]) -> dict[str, tuple[MemoryEntry | None, str, str]]:
    """Per id: the global copy (operator read), and the last op in the private and the global ledger."""
    private = SQLiteAdapter.for_agent(agent_id, home=home)
    shared = SQLiteAdapter(home.global_db)
    try:
        found = {}
        for memory_id in ids:
            copy = await shared.get(memory_id, audience=Audience.OPERATOR, include_archived=True)
            ops = [(await store.history(memory_id))[-1].op for store in (private, shared)]
            found[memory_id] = (copy, *ops)
        return found
    finally:
        await private.aclose()
        await shared.aclose()


@dataclass
class Case:
    """One operator action: what to run, what the global copy must then look like, the op each ledger records."""

    args: list[str]
    copy: object  # callable(copy dict | None) -> bool
    visible: bool  # does bob still recall it? (ada too, unless ``ada`` says otherwise)
    private_op: str
    global_op: str
    prepare: list[list[str]] = field(default_factory=list)
    ada: bool | None = None
    content: str = "fact {word}"
    later: str | None = None  # remembered (promoted too) after the memory, to supersede it before the action
    on_copy: bool = True  # the copy is there to be named with --global (not when it was withdrawn)


CASES: dict[tuple[str, str | None], list[Case]] = {
    ("forget", None): [Case(["forget"], lambda c: c["archived"], False, "archive", "archive")],
    ("restore", None): [
        Case(["restore"], lambda c: not c["archived"], True, "restore", "restore", prepare=[["forget"]])
    ],
    ("purge", None): [Case(["purge", "--yes"], lambda c: c is None, False, "purge", "purge")],
    ("set", "importance"): [
        Case(["set", "--importance", "0.5"], lambda c: c is None, False, "update", "withdraw", ada=True),  # still hers
        # symmetry: raising it back promotes a fresh copy
        Case(["set", "--importance", "0.97"], lambda c: c["importance"] == 0.97, True, "update", "insert",
             prepare=[["set", "--importance", "0.5"]], on_copy=False),
    ],
    ("set", "type_"): [Case(["set", "--type", "procedural"], lambda c: c["type"] == "procedural", True, "update", "update")],
    ("set", "visibility"): [
        # only visible memories are promotable (issue 20 item 7): hiding withdraws the copy
        Case(["set", "--visibility", "hidden"], lambda c: c is None, False, "visibility", "withdraw"),
        Case(["set", "--visibility", "private"], lambda c: c is None, False, "visibility", "withdraw"),
    ],
    ("set", "pin"): [Case(["set", "--pin"], lambda c: c["pinned"], True, "pin", "pin")],
    ("set", "tag"): [Case(["set", "--tag", "birds"], lambda c: c["tags"] == ["birds"], True, "update", "update")],
    ("set", "content"): [
        Case(["set", "--content", "reworded"], lambda c: c["content"].startswith("reworded"), True, "update", "update")
    ],
    ("revert", "to"): [
        # back to the text its insert left, after a rewording: the copy follows ("{insert}": the row's seq)
        Case(["revert", "--to", "{insert}"], lambda c: c["content"].startswith("fact heron"), True, "update", "update",
             prepare=[["set", "--content", "reworded elsewhere"]]),
    ],
    ("set", "current"): [
        Case(["set", "--current"], lambda c: c["valid_to"] is None and c["superseded_by"] is None, True,
             "make_current", "make_current", content="My favourite bird is the {word}.",
             later="My favourite bird is the osprey now."),
    ],
}


def operator_mutators() -> set[tuple[str, str | None]]:
    """Every mutating `arcana memory` command, and each of `set`'s options, read off the real CLI."""
    group = get_command(app).commands["memory"]
    found: set[tuple[str, str | None]] = set()
    for name, command in group.commands.items():
        if name in READ_ONLY:
            continue
        options = [p.name for p in command.params if p.name not in TARGETING]
        found |= {(name, o) for o in options} if options else {(name, None)}
    return found


@pytest.mark.parametrize("via", ["--agent", "--global"])
def test_every_operator_mutator_reaches_the_promoted_copy(cli, home, via):
    """Through --agent the edit reaches the copy; through --global, on the copy, it reaches the
    agent's original and so every copy alike: hidden on the copy alone, ada went on recalling it."""
    mutators = operator_mutators()
    assert mutators - CASES.keys() == set(), "a new operator mutator: add a case proving it reaches promoted copies"
    assert CASES.keys() - mutators == set(), "a case for a mutator the CLI no longer has"
    cases = [(key, case) for key, group in CASES.items() for case in group if via == "--agent" or case.on_copy]
    whose = ["--agent", "ada"] if via == "--agent" else ["--global"]
    done = {}
    for number, ((command, option), case) in enumerate(cases):
        word = f"heron{chr(97 + number)}"  # one marker word per case: herona, heronb, ...
        written = ok(cli("remember", case.content.format(word=word), "--agent", "ada", "--importance", "0.95", "--json"))
        assert written["accepted"] == ["private", "global"]  # promoted before the edit
        if case.later:
            later = ok(cli("remember", case.later, "--agent", "ada", "--importance", "0.95", "--json"))
            assert later["supersedes"] == [written["id"]] and "global" in later["accepted"]
        for step in case.prepare:
            ok(cli("memory", step[0], written["id"], "--agent", "ada", *step[1:], "--json"))
        insert = ok(cli("memory", "history", written["id"], *whose, "--json"))[0]["seq"]
        args = [f"reworded {word}" if a == "reworded" else str(insert) if a == "{insert}" else a for a in case.args]
        result = cli("memory", args[0], written["id"], *whose, *args[1:], "--json")
        assert result.exit_code == 0, f"{args}: {result.output}"
        done[word] = (written["id"], f"memory {command} {option or ''}: {args}", case)
    ada = AgentRegistry(home).resolve("ada")
    state = asyncio.run(copies_and_ops(home, ada.id, [memory_id for memory_id, _, _ in done.values()]))
    for memory_id, label, case in done.values():
        copy, private_op, global_op = state[memory_id]
        assert case.copy(None if copy is None else copy.model_dump(mode="json")), f"{label}: the copy did not follow"
        assert (private_op, global_op) == (case.private_op, case.global_op), f"{label}: each store's own ledger"
    for agent in ("bob", "ada"):
        seen = recalled(cli, agent, *done)
        for word, (_, label, case) in done.items():
            visible = case.visible if agent == "bob" or case.ada is None else case.ada
            assert (word in seen) is visible, f"{label}: recall --agent {agent}"


async def test_every_core_mutator_reaches_the_copy(arcana_home):
    """The library side of the same rule: each of MUTATORS, through MemoryEditor, changes the copy."""
    private = SQLiteAdapter.for_agent("ada", home=arcana_home, actor="test")
    shared = SQLiteAdapter(arcana_home.global_db, actor="test")
    writer = SQLiteAdapter.for_agent("ada", home=arcana_home, actor="test", global_store=shared)
    editor = MemoryEditor(private, copies=GlobalCopies(arcana_home, actor="test", timeout=5))
    edits = {
        "archive": (Edit("archive"), lambda c: c.archived),
        "restore": (Edit("restore"), lambda c: not c.archived),
        "purge": (Edit("purge"), lambda c: c is None),
        "set_visibility": (Edit("set_visibility", Visibility.HIDDEN), lambda c: c is None),  # withdrawn
        "set_pinned": (Edit("set_pinned", True), lambda c: c.pinned),
        "update": (Edit("update", changes={"type": MemoryType.PROCEDURAL}), lambda c: c.type is MemoryType.PROCEDURAL),
        "supersede": (Edit("supersede", ("its-successor", None)), lambda c: c.valid_to and c.superseded_by == "its-successor"),
        "make_current": (Edit("make_current"), lambda c: c.valid_to is None and c.superseded_by is None),
        "reinforce": (Edit("reinforce", (0.03, None, False)), lambda c: c.importance == pytest.approx(0.98)),
    }
    assert set(edits) == set(MUTATORS)
    bystander = MemoryEntry(agent_id="ada", content="a bystander", importance=0.95)
    await writer.write(bystander)
    for op, (edit, expected) in edits.items():
        entry = MemoryEntry(agent_id="ada", content=f"core {op}", importance=0.95, archived=op == "restore")
        await writer.write(entry)
        if op == "make_current":  # something to undo, on both copies
            await editor.apply(entry.id, Edit("supersede", ("its-successor", None)))
        report = await editor.apply(entry.id, edit)
        copy = await shared.get(entry.id, audience=Audience.OPERATOR, include_archived=True)
        assert expected(copy), op
        expected_op = "withdraw" if op == "set_visibility" else op
        assert [(c.tier, c.op, c.changed) for c in report.copies] == [("global", expected_op, True)], op
    assert writer.promotion_errors == []
    assert await shared.get(bystander.id) is not None  # control: an unrelated copy untouched
    for store in (editor, private, shared, writer):
        await store.aclose()


def test_a_locked_global_tier_fails_the_edit_naming_the_live_copy(cli, home):
    memory_id = ok(cli("remember", "fact heronlock", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    with locked_by_another_process(home.global_db):
        started = time.monotonic()
        refused = cli("memory", "set", memory_id, "--agent", "ada", "--visibility", "hidden")
        assert time.monotonic() - started < 10  # the 1.5 s write budget bounds the lock wait (SQLite's own is 30 s)
        assert refused.exit_code == exit_codes.STORAGE, refused.output
        assert f"memory {memory_id}" in refused.stderr and "global copy" in refused.stderr
        assert "still live" in refused.stderr and refused.stdout == ""
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        kept = cli("memory", "purge", memory_id, "--agent", "ada", "--yes")  # the copy first, or a re-run finds nothing
        assert kept.exit_code == exit_codes.STORAGE and f"memory {memory_id} was not purged" in kept.stderr
        assert ok(cli("memory", "show", memory_id, "--agent", "ada", "--json"))["id"] == memory_id
    assert recalled(cli, "bob", "heronlock") == {"heronlock"}  # honestly still live, as the error said
    again = ok(cli("memory", "set", memory_id, "--agent", "ada", "--visibility", "hidden", "--json"))
    assert again["copies"] == [{"tier": "global", "op": "withdraw", "changed": True}]
    assert recalled(cli, "bob", "heronlock") == set()
    corrupt_file(home.global_db)
    broken = cli("memory", "forget", memory_id, "--agent", "ada")
    assert broken.exit_code == exit_codes.STORAGE and "may still be live" in broken.stderr
    unpromoted = ok(cli("remember", "fact heronlow", "--agent", "ada", "--json"))["id"]  # never promoted
    assert ok(cli("memory", "forget", unpromoted, "--agent", "ada", "--json"))["changed"] is True


@pytest.mark.parametrize("how", ["remember", "from"])
def test_a_supersession_the_global_tier_missed_is_finished_by_saying_the_new_fact_again(cli, home, tmp_path, how):
    """"I moved to Lisbon" while the global tier was locked ended Berlin in ada's store only and warned
    to run the same command again; that re-run is a restatement (a noop), or for `remember --from` a
    line skipped as imported, so Berlin's copy stayed current and answered bob, and ada, for good.
    The re-run now ends it."""
    berlin = ok(cli("remember", "I live in Berlin", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    lines = tmp_path / "moved.jsonl"
    lines.write_text(json.dumps({"content": "I moved to Lisbon"}) + "\n")
    args = ["I moved to Lisbon"] if how == "remember" else ["--from", str(lines)]
    with locked_by_another_process(home.global_db):
        moved = ok(cli("remember", *args, "--agent", "ada", "--json"))
    if how == "remember":
        assert moved["supersedes"] == [berlin]
    assert any(f"memory {berlin}" in w and "still live" in w for w in moved["warnings"]), moved["warnings"]
    assert recalled(cli, "bob", "Berlin") == {"Berlin"}  # honestly still live, as the warning said
    again = ok(cli("remember", *args, "--agent", "ada", "--json"))
    assert again["warnings"] == []
    assert recalled(cli, "bob", "Berlin") == set()
    assert recalled(cli, "ada", "Berlin", "Lisbon") == {"Lisbon"}
    lisbon = {m["content"]: m["id"] for m in ok(cli("memory", "list", "--agent", "ada", "--json"))}["I moved to Lisbon"]
    copies = {m["id"]: m for m in ok(cli("memory", "list", "--global", "--all", "--json"))}
    assert copies[berlin]["superseded_by"] == lisbon


def test_restating_a_fact_whose_old_version_was_never_promoted_leaves_the_global_tier_alone(cli, home):
    """Only a version that was promotable can have a copy to end: restating Lisbon over a Berlin said
    at 0.5 neither reads an unreadable global tier nor warns about it (the control: a promoted one does)."""
    ok(cli("remember", "I live in Berlin", "--agent", "ada", "--json"))
    ok(cli("remember", "I moved to Lisbon", "--agent", "ada", "--json"))
    ok(cli("remember", "My dog is called Rex", "--agent", "ada", "--importance", "0.95", "--json"))
    ok(cli("remember", "My dog is now called Max", "--agent", "ada", "--json"))
    corrupt_file(home.global_db)
    again = ok(cli("remember", "I moved to Lisbon", "--agent", "ada", "--json"))
    assert again["decision"] == "noop" and again["warnings"] == []
    control = ok(cli("remember", "My dog is now called Max", "--agent", "ada", "--json"))
    assert any("not checked" in w for w in control["warnings"]), control["warnings"]


def test_a_failed_withdrawal_fails_again_until_the_copy_is_gone(cli, home):
    """Lowering the importance withdraws the copy; with the global tier unreadable that fails, and so
    must every re-run while it stays so, though the memory is no longer promotable (it was, once)."""
    memory_id = ok(cli("remember", "fact heronlow", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    never = ok(cli("remember", "fact heronnever", "--agent", "ada", "--importance", "0.5", "--json"))["id"]
    assert not home.global_db.with_name("global.db-wal").exists()  # every write is in the file itself
    intact = home.global_db.read_bytes()
    corrupt_file(home.global_db)
    for attempt in range(2):
        refused = cli("memory", "set", memory_id, "--agent", "ada", "--importance", "0.5")
        assert refused.exit_code == exit_codes.STORAGE, (attempt, refused.output)
        assert "may still be live" in refused.stderr
    # control: a memory that was never promotable has no copy to wait for
    assert ok(cli("memory", "set", never, "--agent", "ada", "--tag", "x", "--json"))["tags"] == ["x"]
    home.global_db.write_bytes(intact)
    assert recalled(cli, "bob", "heronlow") == {"heronlow"}  # honestly still live, as the errors said
    again = ok(cli("memory", "set", memory_id, "--agent", "ada", "--importance", "0.5", "--json"))
    assert again["copies"] == [{"tier": "global", "op": "withdraw", "changed": True}]
    assert recalled(cli, "bob", "heronlow") == set()
    assert recalled(cli, "ada", "heronlow") == {"heronlow"}  # still hers


def test_an_import_never_undoes_an_operator_and_the_copies_follow_it(cli, home, tmp_path):
    """An export taken before a hide, a forget and a purge, imported again, leaves all three as the
    operator left them, in the agent's store and in the global tier; what the file does change
    (a re-wording, a lowered importance) reaches the copies. The control memory stays recalled."""
    ids = {}
    for word in ("heronhid", "heronforgot", "heronpurged", "heronworded", "heronlowered"):
        ids[word] = ok(cli("remember", f"fact {word}", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    dump = tmp_path / "ada.jsonl"
    assert cli("export", "--agent", "ada", "--output", str(dump)).exit_code == 0
    ok(cli("memory", "set", ids["heronhid"], "--agent", "ada", "--visibility", "hidden", "--json"))
    ok(cli("memory", "forget", ids["heronforgot"], "--agent", "ada", "--json"))
    ok(cli("memory", "purge", ids["heronpurged"], "--agent", "ada", "--yes", "--json"))
    lines = []
    for line in dump.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        memory = record.get("memory", {})
        if memory.get("id") == ids["heronworded"]:
            memory["content"] = "fact heronreworded"
        if memory.get("id") == ids["heronlowered"]:
            memory["importance"] = 0.5
        lines.append(json.dumps(record))
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")

    report = ok(cli("import", str(dump), "--agent", "ada", "--json"))
    assert report["kept_removed"] == 1 and report["copies_changed"] == 2, report
    words = ("heronhid", "heronforgot", "heronpurged", "heronreworded", "heronworded", "heronlowered")
    assert recalled(cli, "ada", *words) == {"heronreworded", "heronlowered"}
    assert recalled(cli, "bob", *words) == {"heronreworded"}  # the lowered one's copy was withdrawn
    listing = {m["id"]: m for m in ok(cli("memory", "list", "--agent", "ada", "--all", "--archived", "--json"))}
    assert listing[ids["heronhid"]]["visibility"] == "hidden" and listing[ids["heronforgot"]]["archived"]
    assert ids["heronpurged"] not in listing
    assert ok(cli("import", str(dump), "--agent", "ada", "--json"))["ops"] == {"noop": 5}  # with the control


def test_a_hidden_copy_never_reaches_the_model(cli, home, model_server):
    assert cli("agent", "create", "cleo").exit_code == 0
    added = cli("model", "add", "loop", "--provider", "ollama", "--base-url", model_server.url, "--model", "tiny", "--default")
    assert added.exit_code == 0, added.output
    memory_id = ok(cli("remember", "fact heronrun", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    # promoted: it reaches another agent's model (cleo, so that bob's and ada's own
    # records of this exchange cannot carry it into the runs below)
    ok(cli("run", "cleo", "what about heronrun and kingfisher", "--json"))
    assert "fact heronrun" in model_server.requests[-1]["raw"]
    ok(cli("memory", "set", memory_id, "--agent", "ada", "--visibility", "hidden", "--json"))
    for agent in ("bob", "ada"):
        before = len(model_server.requests)
        ok(cli("run", agent, "what about heronrun and kingfisher", "--json"))
        bodies = [r["raw"] for r in model_server.requests[before:]]
        assert bodies and all("fact heronrun" not in raw for raw in bodies), agent
        assert CONTROL in bodies[0], agent  # control: the unrelated global memory still reaches the model


def test_deleting_an_agent_withdraws_its_promoted_copies(cli, home):
    """Issue 10: an agent that goes takes its global copies with it; another agent's copy stays."""
    for agent, word in (("ada", "heronleaves"), ("bob", "heronstays")):
        written = ok(cli("remember", f"fact {word}", "--agent", agent, "--importance", "0.95", "--json"))
        assert written["accepted"] == ["private", "global"]
    hidden = ok(cli("remember", "fact heronhidden", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    ok(cli("memory", "set", hidden, "--agent", "ada", "--visibility", "hidden", "--json"))  # hiding withdraws its copy
    ada = AgentRegistry(home).resolve("ada")
    assert cli("agent", "create", "carol").exit_code == 0
    assert recalled(cli, "carol", "heronleaves", "heronstays") == {"heronleaves", "heronstays"}
    removed = ok(cli("agent", "delete", "ada", "--yes", "--json"))
    assert removed["copies"] == {"tier": "global", "op": "withdraw", "changed": True, "count": 2}  # the hidden one went when hidden
    query = "heronleaves heronstays heronhidden"
    results = ok(cli("recall", query, "--agent", "carol", "--mode", "keyword", "--json"))["results"]
    assert [r["content"] for r in results] == ["fact heronstays"]  # bob's copy is the positive control

    async def left():
        shared = SQLiteAdapter(home.global_db)
        try:
            return await shared.search(
                MemoryQuery(agent_id=ada.id, limit=50), audience=Audience.OPERATOR, include_archived=True
            ), (await shared.history(hidden))[-1].op
        finally:
            await shared.aclose()

    assert asyncio.run(left()) == ([], "withdraw")


# page 1: the ledger read a row at a time, so a promotable version on a later page is still found
@pytest.mark.parametrize("page", [operator_edits.LEDGER_PAGE, 1])
def test_a_global_tier_out_of_reach_blocks_only_the_deletion_of_an_agent_that_promoted(cli, home, monkeypatch, page):
    """Unreadable global tier: an agent none of whose memories was ever promotable is deleted as usual;
    one whose ledger holds a promotable version (ada's control, eve's second memory) stays, and goes
    once the tier is back."""
    monkeypatch.setattr(operator_edits, "LEDGER_PAGE", page)
    for agent, importances in (("dan", ("0.5", "0.6")), ("eve", ("0.5", "0.95"))):
        assert cli("agent", "create", agent).exit_code == 0
        for i, importance in enumerate(importances):
            ok(cli("remember", f"note heron{agent}{i}", "--agent", agent, "--importance", importance, "--json"))
    assert not home.global_db.with_name("global.db-wal").exists()
    intact = home.global_db.read_bytes()
    corrupt_file(home.global_db)
    for agent in ("ada", "eve"):
        refused = cli("agent", "delete", agent, "--yes")
        assert refused.exit_code == exit_codes.STORAGE and "may still be live" in refused.stderr, agent
        assert AgentRegistry(home).resolve(agent).name == agent
    removed = ok(cli("agent", "delete", "dan", "--yes", "--json"))
    assert removed["name"] == "dan" and "copies" not in removed
    home.global_db.write_bytes(intact)
    assert recalled(cli, "bob") == set()  # ada's promoted control: honestly still live, as the error said
    assert ok(cli("agent", "delete", "ada", "--yes", "--json"))["copies"]["count"] == 1
    results = ok(cli("recall", CONTROL, "--agent", "bob", "--mode", "keyword", "--json"))["results"]
    assert [r["content"] for r in results] == []


def test_pruning_an_agent_from_the_cli_reaches_its_copies(cli, home):
    for word, importance in (("heronpruned", "0.91"), ("heronkept", "0.99")):
        ok(cli("remember", f"fact {word}", "--agent", "ada", "--importance", importance, "--json"))
    ok(cli("remember", "fact heronbobs", "--agent", "bob", "--importance", "0.91", "--json"))
    # ada holds the control (0.95), heronkept (0.99) and heronpruned (0.91): keep two
    report = ok(cli("prune", "--agent", "ada", "--max-entries", "2", "--json"))
    assert report["agents"][0]["copies"] == {"tier": "global", "op": "archive", "changed": True, "count": 1}
    assert recalled(cli, "bob", "heronpruned", "heronkept", "heronbobs") == {"heronkept", "heronbobs"}


@pytest.mark.parametrize("action", [["set", "--visibility", "hidden"], ["forget"]])
def test_hiding_or_forgetting_a_merged_memory_reaches_the_copy_of_the_restatement_it_absorbed(cli, home, action):
    """Consolidation merged ada's promoted restatement into the fuller memory and archived it, its
    global copy left live: hiding (or forgetting) the merged memory must withhold that copy too, or
    bob keeps recalling the very words ada hid. Beside an unrelated promoted fact (the control)."""
    keeper = ok(cli("remember", "heron passport X123", "--agent", "ada", "--no-reconcile", "--json"))
    absorbed = ok(cli("remember", "heron passport X123.", "--agent", "ada", "--importance", "0.95",
                      "--no-reconcile", "--json"))
    assert absorbed["accepted"] == ["private", "global"] and keeper["accepted"] == ["private"]
    merged = ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]
    assert merged["merged_sources"] == 1
    assert recalled(cli, "bob", "heron") == {"heron"}
    done = ok(cli("memory", *action[:1], keeper["id"], *action[1:], "--agent", "ada", "--json"))
    assert done is not None
    assert recalled(cli, "bob", "heron") == set()  # the control still answers (checked in recalled)
    assert recalled(cli, "ada", "heron") == set()


def _two_merges(cli) -> tuple[dict, dict, dict, dict]:
    """ada's two merges, each of a fuller memory and a promoted restatement: (the visa one, its
    restatement, the passport one, its restatement), consolidated."""
    other = ok(cli("remember", "heron visa Y456", "--agent", "ada", "--no-reconcile", "--json"))
    alone = ok(cli("remember", "heron visa Y456.", "--agent", "ada", "--importance", "0.95",
                   "--no-reconcile", "--json"))
    keeper = ok(cli("remember", "heron passport X123", "--agent", "ada", "--no-reconcile", "--json"))
    absorbed = ok(cli("remember", "heron passport X123.", "--agent", "ada", "--importance", "0.95",
                      "--no-reconcile", "--json"))
    assert absorbed["accepted"] == alone["accepted"] == ["private", "global"] and keeper["accepted"] == ["private"]
    assert ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]["merged_sources"] == 2
    return other, alone, keeper, absorbed


def test_restoring_a_forgotten_merged_memory_brings_back_the_copy_of_the_restatement_it_absorbed(cli, home):
    """Forgetting the merged memory archived the restatement it absorbed and that one's global copy;
    restoring it left them so: bob, who read 'heron passport X123' before, never read it again. A
    restore undoes what the forget reached: the restatement is archived into the merge again (it
    does not answer beside it) and its copy is live. Control: a restatement ada forgot itself (the
    forget reached its merge) stays forgotten, copy and all, when that merge is restored."""
    other, alone, keeper, absorbed = _two_merges(cli)
    ok(cli("memory", "forget", alone["id"], "--agent", "ada", "--json"))
    ok(cli("memory", "restore", other["id"], "--agent", "ada", "--json"))
    assert recalled(cli, "bob", "X123", "Y456") == {"X123"}
    ok(cli("memory", "forget", keeper["id"], "--agent", "ada", "--json"))
    assert recalled(cli, "bob", "X123", "Y456") == set()
    ok(cli("memory", "restore", keeper["id"], "--agent", "ada", "--json"))
    assert recalled(cli, "bob", "X123", "Y456") == {"X123"}
    results = ok(cli("recall", "X123 Y456", "--agent", "ada", "--mode", "keyword", "--json"))["results"]
    assert sorted(r["id"] for r in results) == sorted([keeper["id"], other["id"]])
    assert ok(cli("memory", "show", absorbed["id"], "--agent", "ada", "--json"))["archived"] is True


def test_a_merged_restatement_promoted_by_an_edit_answers_other_agents(cli, home):
    """Consolidation archived ada's restatement into her fuller memory before it was promotable; raising
    its importance promoted it, but its copy was written archived, as the restatement is in ada's store:
    no merge carries it in the global tier, so it answered nobody. It is written live, as consolidation
    leaves the copy of a restatement promoted before the merge. Control: the fuller one stays unpromoted."""
    keeper = ok(cli("remember", "heron passport X123", "--agent", "ada", "--no-reconcile", "--importance", "0.5",
                    "--json"))
    absorbed = ok(cli("remember", "heron passport X123.", "--agent", "ada", "--importance", "0.5",
                      "--no-reconcile", "--json"))
    assert ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]["merged_sources"] == 1
    assert answers(cli, "bob", "X123") == []
    ok(cli("memory", "set", absorbed["id"], "--agent", "ada", "--importance", "0.95", "--json"))
    assert answers(cli, "bob", "X123") == [absorbed["id"]]
    assert answers(cli, "ada", "X123") == [keeper["id"]]  # still archived into the merge in ada's store
    assert recalled(cli, "bob") == set()  # the control still answers (checked in recalled)


def test_showing_a_hidden_merged_memory_shows_the_restatement_its_hide_reached(cli, home):
    """Hiding the merged memory hid the restatement it absorbed and that one's global copy; showing
    it again left them hidden: bob, who read 'heron passport X123' before, never read it again, and
    ada's restatement answered no `--as-of` again. Showing undoes what the hide reached, as a restore
    undoes a forget: the restatement is visible, archived into the merge, its copy live. Control: a
    restatement ada hid herself (the hide reached its merge) stays hidden, copy and all, when that
    merge is shown again."""
    other, alone, keeper, absorbed = _two_merges(cli)
    ok(cli("memory", "set", alone["id"], "--agent", "ada", "--visibility", "hidden", "--json"))
    assert answers(cli, "bob", "X123 Y456") == [absorbed["id"]]
    ok(cli("memory", "set", keeper["id"], "--agent", "ada", "--visibility", "hidden", "--json"))
    assert answers(cli, "bob", "X123 Y456") == []
    for shown in (keeper, other):  # the merge lifted both to 0.95: shown, each is promoted
        ok(cli("memory", "set", shown["id"], "--agent", "ada", "--visibility", "visible", "--json"))
    assert sorted(answers(cli, "bob", "X123 Y456")) == sorted([keeper["id"], absorbed["id"], other["id"]])
    assert recalled(cli, "bob") == set()  # the control still answers (checked in recalled)
    results = ok(cli("recall", "X123 Y456", "--agent", "ada", "--mode", "keyword", "--json"))["results"]
    assert sorted(r["id"] for r in results) == sorted([keeper["id"], other["id"]])
    shown = ok(cli("memory", "show", absorbed["id"], "--agent", "ada", "--json"))
    assert shown["visibility"] == "visible" and shown["archived"] is True
    assert ok(cli("memory", "show", alone["id"], "--agent", "ada", "--json"))["visibility"] == "hidden"


def merged_globally(cli, keeper_importance: str = "0.95", said: str = "heron passport X123") -> tuple[str, str]:
    """ada's memory ``said`` and its restatement, both promoted; `consolidate --global` merged the
    restatement's copy into the first one's (ada's own store keeps both apart): bob reads the keeper."""
    keeper = ok(cli("remember", said, "--agent", "ada", "--no-reconcile", "--importance", keeper_importance,
                    "--json"))
    absorbed = ok(cli("remember", f"{said}.", "--agent", "ada", "--importance", "0.95", "--no-reconcile", "--json"))
    assert absorbed["accepted"] == keeper["accepted"] == ["private", "global"]
    assert ok(cli("consolidate", "--global", "--json"))["tiers"][0]["merged_sources"] == 1
    assert answers(cli, "bob", said.split()[-1]) == [keeper["id"]]
    return keeper["id"], absorbed["id"]


def answers(cli, agent: str, query: str) -> list[str]:
    found = ok(cli("recall", query, "--agent", agent, "--mode", "keyword", "--json"))["results"]
    return [r["id"] for r in found]


@pytest.mark.parametrize("action", [["set", "--visibility", "hidden"], ["forget"]])
def test_withholding_a_memory_whose_copy_a_global_merge_kept_leaves_the_copy_it_absorbed_answering(cli, home, action):
    """`consolidate --global` merged the copy of ada's restatement into the copy of her fuller memory;
    ada's own store was not consolidated, so both memories answer her. Withholding the fuller one
    withheld its copy, and the restatement's copy, archived into it, answered nobody, while ada still
    recalled the restatement: bob lost 'X123'. It answers as itself again; the withheld one does not."""
    keeper, absorbed = merged_globally(cli)
    ok(cli("memory", *action[:1], keeper, *action[1:], "--agent", "ada", "--json"))
    assert answers(cli, "ada", "X123") == [absorbed]
    assert answers(cli, "bob", "X123") == [absorbed]
    assert recalled(cli, "bob") == set()  # the control still answers (checked in recalled)


@pytest.mark.parametrize("bulk", ["archive", "purge", "import"])
def test_a_bulk_change_withholding_a_copy_a_global_merge_kept_leaves_the_copy_it_absorbed_answering(
        cli, home, tmp_path, bulk):
    """As a single edit does: a prune taking the fuller memory (archived or purged, its copy with it),
    or an import lowering it below promotion (its copy withdrawn), left the restatement's copy archived
    into a copy that answers nobody, while ada still recalled the restatement: bob lost 'X123'."""
    keeper, absorbed = merged_globally(cli, keeper_importance="0.91")
    if bulk == "import":
        dump = tmp_path / "ada.jsonl"
        assert cli("export", "--agent", "ada", "--output", str(dump)).exit_code == 0
        records = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
        for record in records:
            if record.get("memory", {}).get("id") == keeper:
                record["memory"]["importance"] = 0.5
        dump.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        assert ok(cli("import", str(dump), "--agent", "ada", "--json"))["copies_changed"] == 1
    else:
        report = ok(cli("prune", "--agent", "ada", "--min-importance", "0.93", "--mode", bulk, "--yes", "--json"))
        assert report["agents"][0]["copies"]["count"] == 1  # the keeper's copy only
    # ada's lowered memory is still hers: it answers her, not bob
    assert set(answers(cli, "ada", "X123")) == ({keeper, absorbed} if bulk == "import" else {absorbed})
    assert answers(cli, "bob", "X123") == [absorbed]
    assert recalled(cli, "bob") == set()  # control: ada's unrelated promoted memory still answers bob


def test_new_text_for_a_memory_whose_copy_a_global_merge_kept_leaves_the_copy_it_absorbed_answering(cli, home):
    """`memory set --content` of ada's fuller memory re-worded its copy, into which `consolidate --global`
    had archived her restatement's copy: that copy stayed archived under words that no longer say
    'X123', while ada still recalled the restatement, so bob lost it. It answers as itself again.
    Control: a restatement whose words the new text still says stays archived into it."""
    keeper, absorbed = merged_globally(cli)
    ok(cli("memory", "set", keeper, "--agent", "ada", "--content", "heron passport Z999", "--json"))
    assert answers(cli, "bob", "X123") == [absorbed]
    assert answers(cli, "bob", "Z999") == [keeper]
    assert recalled(cli, "bob") == set()  # the control still answers (checked in recalled)

    kept, carried = merged_globally(cli, said="heron visa Y456")
    ok(cli("memory", "set", kept, "--agent", "ada", "--content", "heron visa Y456 renewed", "--json"))
    assert answers(cli, "bob", "Y456") == [kept]
    assert sorted(answers(cli, "ada", "Y456")) == sorted([kept, carried])


def test_new_text_for_a_merged_memory_withdraws_the_restatement_it_absorbed_and_its_copy(cli, home):
    """`memory set --content` of the merged memory replaced its words, but the promoted restatement
    consolidation archived into it kept the old ones, its global copy live: bob still recalled
    'X123' after ada's operator wrote it out. The new text withdraws what said the old words (the
    restatement, copy and all), as a hide or forget does. The control fact still answers."""
    keeper = ok(cli("remember", "heron passport X123", "--agent", "ada", "--no-reconcile", "--json"))
    absorbed = ok(cli("remember", "heron passport X123.", "--agent", "ada", "--importance", "0.95",
                      "--no-reconcile", "--json"))
    assert absorbed["accepted"] == ["private", "global"]
    assert ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]["merged_sources"] == 1
    assert recalled(cli, "bob", "X123") == {"X123"}
    ok(cli("memory", "set", keeper["id"], "--content", "heron passport withheld", "--agent", "ada", "--json"))
    assert recalled(cli, "bob", "X123", "heron") == set()
    assert recalled(cli, "ada", "X123", "withheld") == {"withheld"}
    assert recalled(cli, "ada", "X123") == set()


def test_new_text_for_a_digested_turn_withdraws_the_digest_that_carries_its_old_words(cli, home):
    """A digest carries its turns' words: after `memory set --content` of a digested turn, recall
    still answered the old words from the digest. The digest holding them is archived (restorable),
    as a forget of the turn archives it; a digest of another session (the control) stays."""
    lines = home.root / "turns.jsonl"
    lines.write_text(
        json.dumps({"content": "Caroline: the harbour door code is zebracode.", "type": "episodic",
                    "session": "s1", "created_at": "2024-01-01T10:00:00Z"}) + "\n"
        + json.dumps({"content": "Caroline: the harbour stall code is tangerinecode.", "type": "episodic",
                      "session": "s2", "created_at": "2024-01-02T10:00:00Z"}) + "\n"
    )
    ok(cli("remember", "--agent", "ada", "--from", str(lines), "--json"))
    assert ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]["digests"] == 2
    assert recalled(cli, "ada", "zebracode", "tangerinecode") == {"zebracode", "tangerinecode"}
    rows = ok(cli("memory", "list", "--agent", "ada", "--archived", "--all", "--json"))
    (turn,) = [m for m in rows if m["content"] == "Caroline: the harbour door code is zebracode."]
    ok(cli("memory", "set", turn["id"], "--content", turn["content"], "--agent", "ada", "--json"))
    assert recalled(cli, "ada", "zebracode") == {"zebracode"}  # the same text withdraws nothing
    ok(cli("memory", "set", turn["id"], "--content", "Caroline: the harbour door code is withheld.",
           "--agent", "ada", "--json"))
    assert recalled(cli, "ada", "zebracode", "tangerinecode") == {"tangerinecode"}


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_an_unchanged_import_line_leaves_the_words_an_operator_gave_a_global_copy(cli, no_embedder, tmp_path, engine,
                                                                                   request, monkeypatch):
    """An operator who re-words a copy in the global tier itself (`memory set --global --content`)
    takes the old words out of every agent's recall. Importing the agent's own export again, which
    changes nothing in its store, rewrote the copy whole from the original and gave them back to
    every agent. A line that does change something still reaches the copy (the control)."""
    if engine == "postgres":
        monkeypatch.setenv("GLOBAL_PG", request.getfixturevalue("pg_url"))
        config = json.loads(no_embedder.config_path.read_text())
        no_embedder.config_path.write_text(json.dumps({**config, "memory": {"global_url_env": "GLOBAL_PG"}}))
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    secret = ok(cli("remember", "heron zebracode", "--agent", "ada", "--importance", "0.95", "--json"))
    control = ok(cli("remember", CONTROL, "--agent", "ada", "--importance", "0.95", "--json"))
    assert secret["accepted"] == control["accepted"] == ["private", "global"]
    ok(cli("memory", "set", secret["id"], "--global", "--content", "heron redacted", "--json"))
    assert recalled(cli, "bob", "zebracode", "redacted") == {"redacted"}
    dump = tmp_path / "ada.jsonl"
    lines = []
    for line in cli("export", "--agent", "ada").stdout.splitlines():
        record = json.loads(line)
        if record.get("memory", {}).get("id") == control["id"]:
            record["memory"]["importance"] = 0.97
        lines.append(json.dumps(record))
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")

    report = ok(cli("import", str(dump), "--agent", "ada", "--json"))
    assert report["ops"] == {"noop": 1, "update": 1} and report["copies_changed"] == 1, report
    assert recalled(cli, "bob", "zebracode", "redacted") == {"redacted"}
    copies = {m["id"]: m for m in ok(cli("memory", "list", "--global", "--all", "--json"))}
    assert copies[secret["id"]]["content"] == "heron redacted"
    assert copies[control["id"]]["importance"] == 0.97  # what the file changed reached the copy


@pytest.mark.parametrize("form", ["--global", "--all"])
def test_an_import_of_global_lines_reaches_the_copies_originals(cli, home, tmp_path, form):
    """A line of `import --global` (or of a whole-home `--all` file's global tier) that hides a copy is
    an operator's action on it, as `memory set --global` is: the copy was hidden from bob, but ada went
    on recalling the original. Now it follows, and so does a re-worded line (bob's too, between ada's
    lines: the originals are edited one agent at a time); the file's agent lines are unchanged, and the
    control fact's unchanged lines leave both as they were."""
    secret = ok(cli("remember", "heron zebracode", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    bobs = ok(cli("remember", "heron bobword", "--agent", "bob", "--importance", "0.95", "--json"))["id"]
    worded = ok(cli("remember", "heron oldword", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    lines = []
    for line in cli("export", form).stdout.splitlines():
        record = json.loads(line)
        memory = record.get("memory", {}) if form == "--global" or record.get("store") == "global" else {}
        if memory.get("id") == secret:
            memory["visibility"] = "hidden"
        if memory.get("id") == worded:
            memory["content"] = "heron newword"
        if memory.get("id") == bobs:
            memory["content"] = "heron bobnew"
        lines.append(json.dumps(record))
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ok(cli("import", str(dump), *([form] if form == "--global" else []), "--json"))
    for agent in ("bob", "ada"):
        assert recalled(cli, agent, "zebracode", "oldword", "newword", "bobword", "bobnew") == {"newword", "bobnew"}, agent
    assert ok(cli("memory", "show", bobs, "--agent", "bob", "--json"))["content"] == "heron bobnew"
    assert ok(cli("memory", "show", secret, "--agent", "ada", "--json"))["visibility"] == "hidden"


@pytest.mark.parametrize("via", [("--global",), ("--agent", "ada")])
def test_a_purge_whose_original_is_locked_changes_nothing(cli, home, via):
    """`memory purge` purged the copy first, then the original: with the agent's store held by another
    writer the copy was gone for good and the original went on answering ada (after `--global`, with
    nothing a re-run could find). The agent's store is checked first: locked, nothing changes and the
    error says so; unlocked (the control), both go."""
    memory_id = ok(cli("remember", "fact heronpurge", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    ada = AgentRegistry(home).resolve("ada")
    with locked_by_another_process(home.agent_db(ada.id)):
        started = time.monotonic()
        refused = cli("--lock-wait", "1", "memory", "purge", memory_id, *via, "--yes")
        assert time.monotonic() - started < 10  # the wait it was given, not SQLite's default 30 s
        assert refused.exit_code == exit_codes.STORAGE, refused.output
        assert "locked by another writer" in refused.stderr and refused.stdout == ""
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert recalled(cli, "bob", "heronpurge") == {"heronpurge"}  # nothing changed: the copy still answers
    assert recalled(cli, "ada", "heronpurge") == {"heronpurge"}
    assert ok(cli("memory", "show", memory_id, "--global", "--json"))["id"] == memory_id
    done = ok(cli("memory", "purge", memory_id, *via, "--yes", "--json"))
    assert done["changed"] is True
    for agent in ("bob", "ada"):
        assert recalled(cli, agent, "heronpurge") == set(), agent


@pytest.mark.parametrize("action", [("forget",), ("set", "--visibility", "hidden")])
def test_an_edit_of_a_copy_whose_original_is_locked_changes_neither(cli, home, action):
    """`memory forget/set --global` changed the copy, then failed on the agent's locked store: bob no
    longer recalled it while ada did, and the error read as if nothing had happened. The original's
    store is checked first now: locked, neither changes; unlocked (the control), both do."""
    memory_id = ok(cli("remember", "fact heronedit", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    with locked_by_another_process(home.agent_db(AgentRegistry(home).resolve("ada").id)):
        started = time.monotonic()
        refused = cli("--lock-wait", "1", "memory", action[0], memory_id, "--global", *action[1:])
        assert time.monotonic() - started < 10
        assert refused.exit_code == exit_codes.STORAGE, refused.output
        assert "locked by another writer" in refused.stderr and refused.stderr.count("\n") == 1
    for agent in ("bob", "ada"):
        assert recalled(cli, agent, "heronedit") == {"heronedit"}, agent
    ok(cli("memory", action[0], memory_id, "--global", *action[1:], "--json"))
    for agent in ("bob", "ada"):
        assert recalled(cli, agent, "heronedit") == set(), agent


CHANGED = {  # per edit through --global: the SQL that counts the memory as changed, in either store
    "forget": "SELECT count(*) FROM memories WHERE id = ? AND archived = 1",
    "hide": "SELECT count(*) FROM memories WHERE id = ? AND visibility = 'hidden'",
    "pin": "SELECT count(*) FROM memories WHERE id = ? AND pinned = 1",
    "purge": "SELECT count(*) = 0 FROM memories WHERE id = ?",
}
ACTIONS = {"forget": ["forget", "--global"], "hide": ["set", "--global", "--visibility", "hidden"],
           "pin": ["set", "--global", "--pin"], "purge": ["purge", "--global", "--yes"]}


def changed_in(path, action: str, memory_id: str) -> bool:
    """Whether ``path`` holds the memory as ``action`` leaves it (a hidden copy is withdrawn: gone)."""
    conn = connect_readonly(path)
    try:
        if conn.execute(CHANGED[action], (memory_id,)).fetchone()[0]:
            return True
        return action == "hide" and path.name == "global.db" and not conn.execute(
            "SELECT count(*) FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("action", list(ACTIONS))
def test_a_writer_between_the_copy_and_its_original_waits_for_both(cli, home, action):
    """`memory forget --global` checked that ada's store took a write, changed the copy, then opened her
    store again to change the original: a writer that took her store in between (here another process
    that takes it the moment the copy changes, and holds it 3 s) failed the second change after the
    first, so bob no longer recalled the memory while ada did. The edit holds her store's lock across
    both now: that writer gets in only once the original has changed too, and the command succeeds."""
    memory_id = ok(cli("remember", "fact heronrace", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    ada = home.agent_db(AgentRegistry(home).resolve("ada").id)
    with locked_once(ada, home.global_db, CHANGED[action], memory_id) as writer_saw:
        done = cli("--lock-wait", "1", "memory", ACTIONS[action][0], memory_id, *ACTIONS[action][1:])
        assert writer_saw() == 1  # when the other writer got ada's store, her original had changed already
    assert done.exit_code == 0, done.output
    assert changed_in(home.global_db, action, memory_id) and changed_in(ada, action, memory_id)
    gone = set() if action != "pin" else {"heronrace"}
    for agent in ("bob", "ada"):  # the control memory is recalled throughout
        assert recalled(cli, agent, "heronrace") == gone, agent


def global_dump_hiding(cli, tmp_path, secret: str):
    """`export --global` with the copy ``secret`` made hidden: an import that hides it."""
    lines = []
    for line in cli("export", "--global").stdout.splitlines():
        record = json.loads(line)
        if record.get("memory", {}).get("id") == secret:
            record["memory"]["visibility"] = "hidden"
        lines.append(json.dumps(record))
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dump


def test_an_import_of_global_lines_whose_original_is_locked_changes_nothing(cli, home, tmp_path):
    """`import --global` hiding a copy wrote the copy, then failed on the agent's locked store: bob no
    longer recalled it, ada did, and running the import again changed nothing (the copy already said
    hidden), so ada recalled it for good. Locked, the import now changes nothing; run again unlocked, both go."""
    secret = ok(cli("remember", "heron zebracode", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    dump = global_dump_hiding(cli, tmp_path, secret)
    with locked_by_another_process(home.agent_db(AgentRegistry(home).resolve("ada").id)):
        started = time.monotonic()
        refused = cli("--lock-wait", "1", "import", str(dump), "--global", "--json")
        assert time.monotonic() - started < 10
        assert refused.exit_code == exit_codes.STORAGE, refused.output
        assert "locked by another writer" in refused.stderr
    for agent in ("bob", "ada"):
        assert recalled(cli, agent, "zebracode") == {"zebracode"}, agent
    ok(cli("import", str(dump), "--global", "--json"))
    for agent in ("bob", "ada"):
        assert recalled(cli, agent, "zebracode") == set(), agent


def test_a_writer_between_an_imported_copy_and_its_original_waits_for_both(cli, home, tmp_path):
    """`import --global` checked the agents' stores took a write, wrote the copies, then opened each
    store again to change the originals: a writer in between (another process that takes ada's store
    the moment the copy turns hidden) left the copy hidden and the original not. The import holds the
    stores' locks across both now: that writer gets in once the original is hidden too."""
    secret = ok(cli("remember", "heron zebrarace", "--agent", "ada", "--importance", "0.95", "--json"))["id"]
    dump = global_dump_hiding(cli, tmp_path, secret)
    ada = home.agent_db(AgentRegistry(home).resolve("ada").id)
    with locked_once(ada, home.global_db, CHANGED["hide"], secret) as writer_saw:
        done = cli("--lock-wait", "1", "import", str(dump), "--global", "--json")
        assert writer_saw() == 1
    assert done.exit_code == 0, done.output
    assert changed_in(home.global_db, "hide", secret) and changed_in(ada, "hide", secret)
    for agent in ("bob", "ada"):
        assert recalled(cli, agent, "zebrarace") == set(), agent
