"""`arcana run --session S` replays only what admission allows (issue 9, item 3): a turn
whose recorded memory was hidden, made private, archived or purged after it was
said never reaches the model again, and `session show` says so without its text."""

from __future__ import annotations

import json

import pytest
from model_server import LoopbackModelServer

SECRET = "My locker code is zebrasecret."
CONTROL = "The weather today is mild and dry."


def ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _ada_with_a_model(cli, server) -> None:
    assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
               "--default").exit_code == 0
    assert cli("agent", "create", "ada").exit_code == 0


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (["set", "--visibility", "hidden"], "hidden"),
        (["set", "--visibility", "private"], "private"),
        (["forget"], "archived"),
        (["purge", "--yes"], "purged"),
    ],
)
def test_a_withdrawn_turn_is_left_out_of_the_replay(cli, no_embedder, action, reason):
    with LoopbackModelServer(lambda body: "Noted.") as server:
        _ada_with_a_model(cli, server)
        first = ok(cli("run", "ada", SECRET, "--keep-open", "--json"))
        sid = first["session_id"]
        second = ok(cli("run", "ada", CONTROL, "--session", sid, "--json"))
        assert first["written_ids"] and second["written_ids"]
        ok(cli("memory", action[0], first["written_ids"][0], "--agent", "ada", *action[1:], "--json"))
        ok(cli("run", "ada", "What comes next?", "--session", sid, "--json"))
        sent = server.requests[-1]
    messages = sent["body"]["messages"]
    assert "zebrasecret" not in sent["raw"]
    assert [(m["role"], m["content"]) for m in messages[1:]] == [  # the control turn is replayed
        ("user", CONTROL), ("assistant", "Noted."), ("user", "What comes next?")
    ]

    shown = ok(cli("session", "show", sid, "--agent", "ada", "--json"))
    assert "zebrasecret" not in json.dumps(shown)
    left, kept, last = shown["turns"]
    assert left["left_out"] == {"memory_id": first["written_ids"][0], "reason": reason}
    assert left["prompt"] is None and left["response"] is None
    assert (kept["left_out"], kept["prompt"], last["left_out"]) == (None, CONTROL, None)
    text = cli("session", "show", sid, "--agent", "ada")
    assert text.exit_code == 0 and "zebrasecret" not in text.stdout
    assert f"[1] left out of replay: its memory {first['written_ids'][0]} is {reason}" in text.stdout
    assert f"[2] user: {CONTROL}" in text.stdout


def test_without_withdrawals_every_turn_is_replayed(cli, no_embedder):
    """The baseline the exclusions are measured against: the same session replays its first turn."""
    with LoopbackModelServer(lambda body: "Noted.") as server:
        _ada_with_a_model(cli, server)
        sid = ok(cli("run", "ada", SECRET, "--keep-open", "--json"))["session_id"]
        ok(cli("run", "ada", "What comes next?", "--session", sid, "--json"))
        assert [m["content"] for m in server.requests[-1]["body"]["messages"][1:]] == [SECRET, "Noted.", "What comes next?"]



def _asked_for_the_secret(cli) -> tuple[dict, str]:
    """The secret remembered, then asked for in a session left open: (the secret, the session id)."""
    secret = ok(cli("remember", SECRET, "--agent", "ada", "--json"))
    first = ok(cli("run", "ada", "What is my locker code?", "--keep-open", "--json"))
    assert secret["id"] in first["recalled_ids"]
    return secret, first["session_id"]


@pytest.mark.parametrize(("action", "reason"), [(["--visibility", "hidden"], "hidden"),
                                               (["--content", "My locker code is withheld."], "re-worded")])
def test_a_turn_that_recalled_a_withdrawn_memory_is_left_out(cli, no_embedder, action, reason):
    """Its answer may quote what it recalled: hiding the recalled memory withdraws the turn; the control
    stays. So does new text for it (an operator writing the code out): the turn's answer still quoted
    the old words, and the next prompt gave them back to the model."""

    def answer(body) -> str:
        return "It is zebrasecret." if "locker" in body["messages"][-1]["content"] else "Noted."

    with LoopbackModelServer(answer) as server:
        _ada_with_a_model(cli, server)
        secret = ok(cli("remember", SECRET, "--agent", "ada", "--json"))
        sid = ok(cli("run", "ada", CONTROL, "--keep-open", "--json"))["session_id"]  # said before the secret came up
        asked = ok(cli("run", "ada", "What is my locker code?", "--session", sid, "--json"))
        assert secret["id"] in asked["recalled_ids"]
        ok(cli("run", "ada", "And the weather?", "--session", sid, "--json"))  # answered beside that turn
        ok(cli("memory", "set", secret["id"], "--agent", "ada", *action, "--json"))
        ok(cli("run", "ada", "What comes next?", "--session", sid, "--json"))
        sent = server.requests[-1]
    assert "zebrasecret" not in sent["raw"]
    assert [(m["role"], m["content"]) for m in sent["body"]["messages"][1:]] == [  # the control turn is replayed
        ("user", CONTROL), ("assistant", "Noted."), ("user", "What comes next?")
    ]
    turns = ok(cli("session", "show", sid, "--agent", "ada", "--json"))["turns"]
    assert turns[1]["left_out"] == {"memory_id": secret["id"], "reason": reason}
    assert turns[0]["left_out"] is None  # the control


def test_show_and_replay_agree_on_a_turn_that_recalled_another_agents_promoted_memory(cli, no_embedder):
    """A recalled global copy is admitted where it lives: replayed and shown alike; once its owner hides
    it, left out of both. (show used to read only the agent's own store and call it purged.)"""

    def answer(body) -> str:
        return "It is 4711." if "gate" in body["messages"][-1]["content"] else "Noted."

    with LoopbackModelServer(answer) as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
                   "--default").exit_code == 0
        for name in ("ada", "bob"):
            assert cli("agent", "create", name).exit_code == 0
        shared = ok(cli("remember", "The gate code is 4711.", "--agent", "bob", "--importance", "0.95", "--json"))
        assert shared["accepted"] == ["private", "global"]
        first = ok(cli("run", "ada", "What is the gate code?", "--keep-open", "--json"))
        sid = first["session_id"]
        assert shared["id"] in first["recalled_ids"]
        ok(cli("run", "ada", CONTROL, "--session", sid, "--json"))
        shown = ok(cli("session", "show", sid, "--agent", "ada", "--json"))
        assert [t["left_out"] for t in shown["turns"]] == [None, None]
        ok(cli("run", "ada", "What comes next?", "--session", sid, "--json"))
        assert "4711" in server.requests[-1]["raw"]  # replayed, as shown
        ok(cli("memory", "set", shared["id"], "--agent", "bob", "--visibility", "hidden", "--json"))
        ok(cli("run", "ada", "And now?", "--session", sid, "--json"))
        sent = server.requests[-1]
    assert "4711" not in sent["raw"] and CONTROL in sent["raw"]
    left = ok(cli("session", "show", sid, "--agent", "ada", "--json"))["turns"][0]["left_out"]
    assert left == {"memory_id": shared["id"], "reason": "not admitted by the shared tier holding it"}


@pytest.mark.parametrize("action", [["set", "--visibility", "hidden"], ["forget"],
                                    ["set", "--content", "I prefer the locker by the door."]])
def test_a_session_summary_written_after_a_withdrawal_leaves_the_withdrawn_turn_out(cli, no_embedder, action):
    """The summary `session close` writes is one more way a turn leaves: a turn whose memory the
    operator withdrew is summarised no more than it is replayed; the control turn still is."""
    stated = "I prefer the zebrasecret locker by the door."  # a stated preference: the summary quotes it
    control = "What is the weather like in Lima today?"
    with LoopbackModelServer(lambda body: "Noted.") as server:
        _ada_with_a_model(cli, server)
        first = ok(cli("run", "ada", stated, "--keep-open", "--json"))
        sid = first["session_id"]
        assert ok(cli("run", "ada", control, "--session", sid, "--json"))["written_ids"]
    for memory_id in first["written_ids"]:  # the turn's echo and its stated preference
        ok(cli("memory", action[0], memory_id, "--agent", "ada", *action[1:], "--json"))
    closed = ok(cli("session", "close", sid, "--agent", "ada", "--json"))
    assert "zebrasecret" not in json.dumps(closed)
    found = ok(cli("recall", "zebrasecret locker door", "--agent", "ada", "--mode", "keyword", "--json"))["results"]
    assert not [r["content"] for r in found if "zebrasecret" in r["content"]]
    summary = ok(cli("memory", "show", closed["summary_memory_id"], "--agent", "ada", "--json"))
    assert "Lima" in summary["content"]  # control: the kept turn is summarised


def _repeat_the_last_answer(body) -> str:
    """A model that answers the locker question from memory and otherwise repeats what it said last."""
    messages = body["messages"]
    if "locker" in messages[-1]["content"]:
        return "It is zebrasecret."
    said = [m["content"] for m in messages if m["role"] == "assistant"]
    return f"As I said: {said[-1]}" if said else "Noted."


def _written_texts(cli, ids) -> list[str]:
    return [ok(cli("memory", "show", i, "--agent", "ada", "--json"))["content"] for i in ids]


def test_an_answer_that_repeats_a_replayed_answer_from_memory_is_not_new_evidence(cli, no_embedder):
    """Turn 2 recalls nothing, but the model is given turn 1, whose answer quoted a recalled memory:
    its answer used to be stored as new evidence ("Assistant answered: ... zebrasecret"), a visible
    copy that outlived hiding the memory it came from."""
    with LoopbackModelServer(_repeat_the_last_answer) as server:
        _ada_with_a_model(cli, server)
        secret, sid = _asked_for_the_secret(cli)
        second = ok(cli("run", "ada", "Say that again please", "--session", sid, "--json"))
        assert second["recalled_ids"] == [] and "zebrasecret" in second["answer"]
        third = ok(cli("run", "ada", "Once more please", "--session", sid, "--json"))  # carried on
        assert "zebrasecret" in third["answer"]
        ok(cli("memory", "set", secret["id"], "--agent", "ada", "--visibility", "hidden", "--json"))
        found = ok(cli("recall", "zebrasecret", "--agent", "ada", "--json"))
        ok(cli("run", "ada", "Anything else?", "--session", sid, "--json"))
        assert "zebrasecret" not in server.requests[-1]["raw"]  # nor replayed: every answer that repeated it is left out
    assert _written_texts(cli, second["written_ids"]) == ["User asked: Say that again please"]
    assert _written_texts(cli, third["written_ids"]) == ["User asked: Once more please"]
    assert found["results"] == []
    shown = ok(cli("session", "show", sid, "--agent", "ada", "--json"))
    assert [t["replayed_ids"] for t in shown["turns"]] == [[], [secret["id"]], [secret["id"]], []]  # the last, without them


def test_an_answer_after_replayed_turns_that_recalled_nothing_is_remembered(cli, no_embedder):
    """The control: a continued session whose earlier turns recalled nothing keeps the answer as evidence."""
    with LoopbackModelServer(_repeat_the_last_answer) as server:
        _ada_with_a_model(cli, server)
        sid = ok(cli("run", "ada", CONTROL, "--keep-open", "--json"))["session_id"]
        second = ok(cli("run", "ada", "Say that again please", "--session", sid, "--json"))
    assert _written_texts(cli, second["written_ids"]) == [
        "User asked: Say that again please — Assistant answered: As I said: Noted."
    ]


def _edited_export(cli, target: list[str], memory_id: str, content: str, path) -> str:
    """``target``'s export with ``memory_id`` given ``content``: what an operator edits and imports back."""
    exported = cli("export", *target)
    assert exported.exit_code == 0, exported.output
    lines = []
    for line in exported.stdout.splitlines():
        record = json.loads(line)
        if record.get("memory", {}).get("id") == memory_id:
            record["memory"]["content"] = content
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("tier", ["private", "pool on PostgreSQL"])
def test_a_turn_that_recalled_a_memory_an_import_reworded_is_left_out(cli, no_embedder, tier, request, monkeypatch):
    """An import of an edited export line gives a memory new text as `memory set --content` does, but
    ledgers it as an ``import``: the turn that recalled the old words was replayed all the same. Here
    in the agent's own store, and in a pool on a PostgreSQL server the operator imports into."""

    def answer(body) -> str:
        return "It is zebrasecret." if "locker" in body["messages"][-1]["content"] else "Noted."

    with LoopbackModelServer(answer) as server:
        _ada_with_a_model(cli, server)
        target, where = ["--agent", "ada"], ["--agent", "ada"]
        if tier != "private":
            monkeypatch.setenv("TEAM_PG", request.getfixturevalue("pg_url"))
            assert cli("pool", "create", "team", "--url-env", "TEAM_PG").exit_code == 0
            assert cli("agent", "join", "ada", "team").exit_code == 0
            target, where = ["--pool", "team"], ["--agent", "ada", "--pool", "team"]
        secret = ok(cli("remember", SECRET, *where, "--json"))
        sid = ok(cli("run", "ada", CONTROL, "--keep-open", "--json"))["session_id"]  # said before the secret came up
        asked = ok(cli("run", "ada", "What is my locker code?", "--session", sid, "--json"))
        assert secret["id"] in asked["recalled_ids"]
        ok(cli("run", "ada", "What comes next?", "--session", sid, "--json"))
        assert "zebrasecret" in server.requests[-1]["raw"]  # replayed while the memory says it
        edited = _edited_export(cli, target, secret["id"], "My locker code is withheld.", no_embedder.root / "e.jsonl")
        ok(cli("import", edited, *target, "--json"))
        assert ok(cli("memory", "show", secret["id"], *target, "--json"))["content"] == "My locker code is withheld."
        ok(cli("run", "ada", "And now?", "--session", sid, "--json"))
        sent = server.requests[-1]
    assert "zebrasecret" not in sent["raw"]
    assert [(m["role"], m["content"]) for m in sent["body"]["messages"][1:3]] == [("user", CONTROL), ("assistant", "Noted.")]
    turns = ok(cli("session", "show", sid, "--agent", "ada", "--json"))["turns"]
    assert turns[1]["left_out"] == {"memory_id": secret["id"], "reason": "re-worded"}
    assert turns[0]["left_out"] is None  # the control


def test_a_runaway_answer_is_replayed_within_a_budget(cli, no_embedder):
    """A session's replay is bounded in characters, not only in turns: a 1 MB answer was resent whole
    with every later turn of its session. The latest turn over the budget alone is sent cut; once a
    later turn follows, the runaway one is dropped and that turn (the control) is sent whole."""
    from memory.runtime.agent import HISTORY_CHARS

    answers = iter(["Go on. " + "la " * 350_000, "Noted.", "Fine.", "Sure."])
    with LoopbackModelServer(lambda body: next(answers), chunk=65_536) as server:
        _ada_with_a_model(cli, server)
        sid = ok(cli("run", "ada", "Sing for me.", "--keep-open", "--json"))["session_id"]
        ok(cli("run", "ada", CONTROL, "--session", sid, "--json"))
        cut = server.requests[-1]["body"]["messages"][1:]
        ok(cli("run", "ada", "What comes next?", "--session", sid, "--json"))
        after = server.requests[-1]["body"]["messages"][1:]
    assert [m["content"][:13] for m in cut] == ["Sing for me.", "Go on. la la ", CONTROL[:13]]
    assert cut[1]["content"].endswith("[…]") and sum(len(m["content"]) for m in cut[:2]) <= HISTORY_CHARS
    assert [(m["role"], m["content"]) for m in after] == [  # the runaway turn dropped, the control whole
        ("user", CONTROL), ("assistant", "Noted."), ("user", "What comes next?")
    ]


def test_a_turn_that_recalled_the_fact_it_replaced_is_replayed_and_summarised(cli, no_embedder):
    """A superseded fact is not withdrawn: the turn saying "I moved to Lisbon" recalled "I live in
    Berlin", its own write superseded it, and the turn was left out of its session's replay and
    summary ("not admitted"); once that fact is hidden, the turn is left out."""
    moved = "Remember that I moved to Lisbon, I no longer live in Berlin."
    with LoopbackModelServer(lambda body: "Noted.") as server:
        _ada_with_a_model(cli, server)
        ok(cli("run", "ada", "Remember that I live in Berlin.", "--json"))
        first = ok(cli("run", "ada", moved, "--keep-open", "--json"))
        sid = first["session_id"]
        berlin = [m for m in ok(cli("memory", "list", "--agent", "ada", "--all", "--json"))
                  if m["content"] == "I live in Berlin."]
        assert berlin[0]["superseded_by"] and berlin[0]["id"] in first["recalled_ids"]
        ok(cli("run", "ada", "Which neighbourhood?", "--session", sid, "--json"))
        replayed = [(m["role"], m["content"]) for m in server.requests[-1]["body"]["messages"][1:]]
        assert replayed == [("user", moved), ("assistant", "Noted."), ("user", "Which neighbourhood?")]
        shown = ok(cli("session", "show", sid, "--agent", "ada", "--json"))
        assert [t["left_out"] for t in shown["turns"]] == [None, None]
        # the exclusion: hidden, the replaced fact withdraws the turn that recalled it (and the one after)
        ok(cli("memory", "set", berlin[0]["id"], "--agent", "ada", "--visibility", "hidden", "--json"))
        ok(cli("run", "ada", "Any cafés?", "--session", sid, "--json"))
        assert moved not in server.requests[-1]["raw"]
        shown = ok(cli("session", "show", sid, "--agent", "ada", "--json"))
        assert shown["turns"][0]["left_out"] == {"memory_id": berlin[0]["id"], "reason": "hidden"}


def test_a_one_shot_turn_that_replaced_a_fact_gets_its_summary(cli, no_embedder):
    with LoopbackModelServer(lambda body: "Noted.") as server:
        _ada_with_a_model(cli, server)
        lived = ok(cli("run", "ada", "Remember that I live in Berlin.", "--json"))
        assert lived["recalled_ids"] == [] and lived["summary_memory_id"]  # the control: a summary
        moved = ok(cli("run", "ada", "Remember that I moved to Lisbon, I no longer live in Berlin.", "--json"))
    assert moved["recalled_ids"] and moved["summary_memory_id"]
    summaries = {s["id"]: s["summary"] for s in ok(cli("session", "list", "--agent", "ada", "--json"))}
    assert "I moved to Lisbon" in summaries[moved["session_id"]]


@pytest.mark.parametrize("reworded", [None, "The locker's code: zebrasecret"])
def test_a_purge_takes_the_text_out_of_the_session_file(cli, no_embedder, reworded):
    """The session file kept the turn's prompt after its memory was purged: `grep` of the agent's
    folder found the code. The turn's text saying it becomes "[purged]", also when the memory no
    longer says it word for word (re-worded, as a model's extraction may store it); the control turn,
    in the same file, is replayed and shown as it was, and the session goes on."""
    with LoopbackModelServer(lambda body: "Noted.") as server:
        _ada_with_a_model(cli, server)
        first = ok(cli("run", "ada", SECRET, "--keep-open", "--json"))
        sid = first["session_id"]
        ok(cli("run", "ada", CONTROL, "--session", sid, "--json"))
        (session_file,) = no_embedder.root.glob(f"agents/*/sessions/{sid}.jsonl")
        assert b"zebrasecret" in session_file.read_bytes()
        listed = ok(cli("memory", "list", "--agent", "ada", "--json"))
        (fact,) = [m["id"] for m in listed if m["content"] == SECRET and m["id"] in first["written_ids"]]
        if reworded:
            ok(cli("memory", "set", fact, "--agent", "ada", "--content", reworded, "--json"))
        ok(cli("memory", "purge", fact, "--agent", "ada", "--yes", "--json"))
        stored = b"".join(p.read_bytes() for p in no_embedder.root.rglob("*") if p.is_file())
        assert b"zebrasecret" not in stored
        assert CONTROL.encode() in session_file.read_bytes()
        ok(cli("run", "ada", "What comes next?", "--session", sid, "--json"))
        sent = server.requests[-1]
    assert "zebrasecret" not in sent["raw"]
    assert [(m["role"], m["content"]) for m in sent["body"]["messages"][1:]] == [
        ("user", CONTROL), ("assistant", "Noted."), ("user", "What comes next?")
    ]
    left, kept, last = ok(cli("session", "show", sid, "--agent", "ada", "--json"))["turns"]
    assert (left["left_out"]["reason"], kept["prompt"], last["prompt"]) == ("purged", CONTROL, "What comes next?")
