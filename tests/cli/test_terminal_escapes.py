"""Someone else's text (a memory, a note, an import line) never drives the reader's terminal: human
output shows its control characters escaped; --json carries them exactly (as JSON escapes)."""

from __future__ import annotations

import json

import pytest

HOSTILE = "The boat key is under the \x1b[2J\x1b[31mred\x1b[0m mat\r\x9b."


@pytest.mark.usefixtures("no_embedder")
def test_a_memorys_escape_sequences_are_shown_not_obeyed(cli, make_vault):
    assert cli("remember", HOSTILE, "--agent", "ada").exit_code == 0
    assert cli("remember", "The spare key is with the neighbour.", "--agent", "ada").exit_code == 0  # control
    vault = make_vault({"keys.md": "# Keys\n\nThe shed key hangs by the \x1b]0;pwned\x07 door.\n"})
    assert cli("vault", "add", str(vault), "--name", "notes").exit_code == 0
    assert cli("vault", "index", "notes", "--keyword-only").exit_code == 0
    shown = [
        cli("recall", "key", "--agent", "ada", "--mode", "keyword").stdout,
        cli("memory", "list", "--agent", "ada").stdout,
        cli("vault", "search", "notes", "shed key").stdout,
    ]
    for text in shown:
        assert not any(c in text for c in "\x1b\r\x9b\x07"), repr(text)
    assert "\\x1b[31mred\\x1b[0m mat" in shown[0] and "\\x9b." in shown[0] and "The spare key is with the neighbour." in shown[0]
    assert "\\x1b]0;pwned\\x07" in shown[2]
    data = json.loads(cli("recall", "key", "--agent", "ada", "--mode", "keyword", "--json").stdout)
    assert HOSTILE in [r["content"] for r in data["results"]]  # the stored text itself is untouched


@pytest.mark.usefixtures("no_embedder")
def test_a_models_answer_and_the_context_shown_are_escaped_not_obeyed(cli):
    """`arcana run` streams a model's words (which may copy a memory's) straight to the terminal, and
    --show-context prints the recalled memories on stderr: both are someone else's text."""
    from model_server import LoopbackModelServer

    answer = "Clearing \x1b[2J\x1b]52;c;cHduZWQ=\x07 done.\nSecond line\tends."
    assert cli("remember", HOSTILE, "--agent", "ada").exit_code == 0
    with LoopbackModelServer(lambda body: answer) as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
                   "--default").exit_code == 0
        shown = cli("run", "ada", "Where is the boat key?", "--show-context", "--no-memory")
        assert shown.exit_code == 0, shown.output
        ran = cli("run", "ada", "Where is the boat key?", "--show-context")
        data = json.loads(cli("run", "ada", "Where is the boat key?", "--json").stdout)
    assert ran.exit_code == 0, ran.output
    for text in (shown.stdout, ran.stdout, ran.stderr):
        assert not any(c in text for c in "\x1b\r\x9b\x07"), repr(text)
    assert "Clearing \\x1b[2J\\x1b]52;c;cHduZWQ=\\x07 done.\nSecond line\tends.\n" in ran.stdout  # lines and tabs kept
    assert "\\x1b[31mred\\x1b[0m mat" in ran.stderr and "boat key" in ran.stderr
    assert data["answer"] == answer  # --json carries the answer exactly


SPOOF = "The invoice \u202egnp.exe\u202c is ad\u200bmin's, \u2066isolated\u2069 and \ufeffmarked"


@pytest.mark.usefixtures("no_embedder")
def test_direction_overrides_and_invisible_characters_are_shown_escaped_not_obeyed(cli):
    """A right-to-left override reached the terminal raw (bidi-aware terminals turn "\u202egnp.exe"
    into "exe.png", as the web view would have without its escaping), and a zero-width space made
    "ad\u200bmin" look like "admin"; --json keeps the text exact."""
    assert cli("remember", SPOOF, "--agent", "ada", "--tag", "a\u202eb").exit_code == 0
    assert cli("remember", "The invoice for the family 👨\u200d👩\u200d👧 is paid.", "--agent", "ada").exit_code == 0
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    assert SPOOF in [m["content"] for m in listed]  # exact under --json
    spoof_id = next(m["id"] for m in listed if m["content"] == SPOOF)
    shown = [
        cli("recall", "invoice", "--agent", "ada", "--mode", "keyword").stdout,
        cli("memory", "list", "--agent", "ada").stdout,
        cli("memory", "show", spoof_id, "--agent", "ada").stdout,
        cli("context", "invoice", "--agent", "ada").stdout,
    ]
    for text in shown:
        assert not any(c in text for c in "\u202e\u202c\u200b\u2066\u2069\ufeff"), repr(text)
        assert "\\u202egnp.exe\\u202c" in text and "ad\\u200bmin" in text, repr(text)
    for text in (shown[0], shown[1], shown[3]):  # the control: joiners an emoji sequence needs are kept
        assert "👨\u200d👩\u200d👧" in text, repr(text)
    assert "a\\u202eb" in shown[2]
