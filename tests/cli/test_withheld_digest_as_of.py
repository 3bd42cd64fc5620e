"""A digest an operator hid or forgot stays withheld at every time: `recall --as-of` a time before
it began to hold answers with the turns it archived, and those must not bring back what was hidden.
Real homes (keyword only), the real Typer app."""

from __future__ import annotations

import json

import pytest

DAY1, DAY2, DAY3 = "2024-01-01T10:00:00Z", "2024-01-02T10:00:00Z", "2024-01-03T10:00:00Z"


def ok(result) -> dict | list:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def recalled_as_of(cli, *words: str) -> set[str]:
    query = " ".join([*words, "harbour"])
    results = ok(cli("recall", query, "--agent", "ada", "--mode", "keyword", "--as-of", DAY2, "--json"))["results"]
    return {word for word in words if any(word in r["content"] for r in results)}


# Two sessions over two days each: the first turn also asks a question.
TWO_DAYS = [("s1", DAY1, "Caroline: the harbour door code is zebracode. Have you been to the marina?"),
            ("s1", DAY3, "Caroline: I adopted a puppy called Oscar."),
            ("s2", DAY1, "Caroline: the harbour stall code is tangerinecode. Have you been to the fair?"),
            ("s2", DAY3, "Caroline: I adopted a kitten called Milo.")]


def digested(cli, home, turns) -> None:
    """``turns`` (session, time, text) remembered for ada and consolidated: one digest per session."""
    lines = home.root / "turns.jsonl"
    lines.write_text("".join(json.dumps({"content": text, "type": "episodic", "session": session,
                                         "created_at": at}) + "\n" for session, at, text in turns))
    ok(cli("remember", "--agent", "ada", "--from", str(lines), "--json"))
    assert ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]["digests"] == 2


@pytest.mark.parametrize("action", [["set", "--visibility", "hidden"], ["forget"]])
def test_a_turn_a_hidden_digest_archived_does_not_answer_as_of_a_time_before_it(cli, no_embedder, action):
    """Each session ran over two days; its digest holds from its last turn (day 3). The first turn
    also asks a question, which digests once left out, so it was no restatement of the digest and
    hiding (or forgetting) the digest did not reach it: `--as-of` day 2 still answered 'zebracode',
    the words the operator hid. The other session's digest, left alone, is the control."""
    digested(cli, no_embedder, TWO_DAYS)
    assert recalled_as_of(cli, "zebracode", "tangerinecode") == {"zebracode", "tangerinecode"}
    (digest,) = [m for m in ok(cli("memory", "list", "--agent", "ada", "--json")) if "zebracode" in m["content"]]
    ok(cli("memory", *action[:1], digest["id"], *action[1:], "--agent", "ada", "--json"))
    assert recalled_as_of(cli, "zebracode", "tangerinecode") == {"tangerinecode"}


def test_condensing_a_digest_never_brings_back_words_an_operator_took_out_of_it(cli, no_embedder):
    """prune --max-bytes rewrites a digest from its turns' words: after `memory set --content` wrote the
    code out of the digest, the condensed digest said 'zebracode' again (the turn keeps its words).
    A condensed digest holds only words the digest itself holds (its question, with words of its
    own, it keeps). The other digest, condensed as well, is the control."""
    digested(cli, no_embedder, TWO_DAYS)
    (digest,) = [m for m in ok(cli("memory", "list", "--agent", "ada", "--json")) if "zebracode" in m["content"]]
    written_out = digest["content"].replace("zebracode", "withheld")
    ok(cli("memory", "set", digest["id"], "--content", written_out, "--agent", "ada", "--json"))
    assert ok(cli("prune", "--agent", "ada", "--max-bytes", "200", "--json"))["condensed"] == 2
    contents = [m["content"] for m in ok(cli("memory", "list", "--agent", "ada", "--json"))]
    assert any("tangerinecode" in c and "Milo" in c for c in contents), contents  # the control, condensed
    assert not [c for c in contents if "zebracode" in c], contents


@pytest.mark.parametrize("change", [{"visibility": "hidden"}, {"content": "Caroline: the harbour door code is withheld."}])
def test_an_import_that_withholds_a_digested_turn_reaches_the_digest_carrying_it(cli, no_embedder, change):
    """`arcana import` of an edited export line (the turn hidden or re-worded) changed the
    turn but left its digest live, still answering 'zebracode'; `memory set` of the same turn reaches
    it. The import now withholds the digests carrying what it withheld; the other session's digest,
    in the same file unchanged, is the control."""
    turns = [("s1", DAY1, "Caroline: the harbour door code is zebracode."),
             ("s2", DAY1, "Caroline: the harbour stall code is tangerinecode.")]
    digested(cli, no_embedder, turns)
    exported = no_embedder.root / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(exported)).exit_code == 0
    header, *records = exported.read_text().splitlines()
    edited = []
    for line in records:
        record = json.loads(line)
        if record["memory"]["content"] == turns[0][2]:
            record["memory"].update(change)
        edited.append(json.dumps(record))
    exported.write_text("\n".join([header, *edited]) + "\n")
    assert cli("import", str(exported), "--agent", "ada").exit_code == 0
    results = ok(cli("recall", "harbour code zebracode tangerinecode", "--agent", "ada", "--mode", "keyword",
                     "--json"))["results"]
    contents = [r["content"] for r in results]
    assert any("tangerinecode" in c for c in contents), contents  # the control
    assert not [c for c in contents if "zebracode" in c], contents


@pytest.mark.parametrize("reconcile", [[], ["--no-reconcile"]], ids=["reconcile", "no-reconcile"])
def test_remember_from_a_line_that_rewords_a_digested_turn_reaches_the_digest_carrying_it(cli, no_embedder, reconcile):
    """`remember --from` with a line naming a stored turn by id and re-wording it changed the turn but left
    its digest live, still answering 'zebracode', where `import` and `memory set` of the same change reach
    it. It now withholds the digests carrying the old words, as they do; the other session's digest is
    the control, and so is a line that restates its turn word for word."""
    turns = [("s1", DAY1, "Caroline: the harbour door code is zebracode."),
             ("s2", DAY1, "Caroline: the harbour stall code is tangerinecode.")]
    digested(cli, no_embedder, turns)
    listed = ok(cli("memory", "list", "--agent", "ada", "--archived", "--json"))  # the digested turns are archived
    ids = {m["content"]: m["id"] for m in listed}
    lines = no_embedder.root / "rewords.jsonl"
    lines.write_text("".join(json.dumps({"id": ids[text], "content": new, "type": "episodic", "session": session,
                                         "created_at": at}) + "\n"
                             for (session, at, text), new in zip(turns, ["Caroline: the harbour door code is withheld.",
                                                                         turns[1][2]], strict=True)))
    done = ok(cli("remember", "--agent", "ada", "--from", str(lines), *reconcile, "--json"))
    results = ok(cli("recall", "harbour code zebracode tangerinecode", "--agent", "ada", "--mode", "keyword",
                     "--json"))["results"]
    contents = [r["content"] for r in results]
    assert any("tangerinecode" in c for c in contents), contents  # the control
    assert not [c for c in contents if "zebracode" in c], contents
    assert done["carriers_withheld"] == 1, done  # the re-worded line's digest; the restated one reached none


@pytest.mark.parametrize("action", [["set", "--visibility", "hidden"], ["forget"]])
def test_a_hidden_digest_withholds_the_global_copies_of_the_turns_it_archived(cli, no_embedder, action):
    """The turns are important enough to be promoted, and consolidation leaves their global copies
    live. The first turn asks a question digests once left out, so hiding (or forgetting) the digest
    did not reach it, and its copy kept answering 'zebracode' to every agent, ada included, though
    ada's own store withholds it. The other session's digest, left alone, is the control."""
    lines = no_embedder.root / "turns.jsonl"
    lines.write_text("".join(json.dumps({"content": text, "type": "episodic", "session": session, "created_at": at,
                                         "importance": 0.95}) + "\n" for session, at, text in TWO_DAYS))
    ok(cli("remember", "--agent", "ada", "--from", str(lines), "--json"))
    ok(cli("remember", "--agent", "bob", "I keep a diary.", "--json"))
    assert ok(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]["digests"] == 2

    def recalled(agent: str) -> set[str]:
        results = ok(cli("recall", "harbour code zebracode tangerinecode", "--agent", agent, "--mode", "keyword",
                         "--json"))["results"]
        return {word for word in ("zebracode", "tangerinecode") if any(word in r["content"] for r in results)}

    assert recalled("bob") == recalled("ada") == {"zebracode", "tangerinecode"}
    (digest,) = [m for m in ok(cli("memory", "list", "--agent", "ada", "--json")) if "zebracode" in m["content"]]
    ok(cli("memory", *action[:1], digest["id"], *action[1:], "--agent", "ada", "--json"))
    assert recalled("bob") == recalled("ada") == {"tangerinecode"}
