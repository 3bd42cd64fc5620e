"""`memory history --versions` marks each version as `memory list --all` and the web view do.

The chain is an operator read that shows hidden and forgotten versions too, "each marked"; its
state column said only superseded or current, so a version an operator forgot or hid read
"current" there while recall, `memory list` and the web view's chain left it out or marked it.
"""

from __future__ import annotations

from runner import cli_data


def states(cli, memory_id: str) -> dict[str, str]:
    """The state column of ``memory history ID --versions``, by the content of each row."""
    result = cli("memory", "history", memory_id, "--agent", "ada", "--versions")
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines()[1:] if line.strip()]
    return {" ".join(row[4:]): row[3] for row in rows}


def test_a_forgotten_or_hidden_version_is_marked_not_current(cli, no_embedder):
    def remember(text: str) -> dict:
        return cli_data(cli, "remember", text, "--agent", "ada")

    berlin = remember("I live in Berlin.")
    lisbon = remember("I moved to Lisbon last month.")
    acme = remember("I work at Acme.")
    globex = remember("I work at Globex now.")
    assert lisbon["supersedes"] == [berlin["id"]] and globex["supersedes"] == [acme["id"]], (lisbon, globex)
    # control: before any edit, the chain says what recall answers with
    assert states(cli, berlin["id"]) == {"I live in Berlin.": "superseded", "I moved to Lisbon last month.": "current"}
    assert cli("memory", "forget", lisbon["id"], "--agent", "ada").exit_code == 0
    assert cli("memory", "set", globex["id"], "--agent", "ada", "--visibility", "hidden").exit_code == 0
    assert states(cli, berlin["id"]) == {"I live in Berlin.": "superseded", "I moved to Lisbon last month.": "archived"}
    assert states(cli, acme["id"]) == {"I work at Acme.": "superseded", "I work at Globex now.": "hidden"}


def test_json_says_what_the_text_says(cli, no_embedder):
    """`--json` said ``"current": true`` for a forgotten or hidden version the text marks archived or hidden."""
    def remember(text: str) -> dict:
        return cli_data(cli, "remember", text, "--agent", "ada")

    berlin, lisbon = remember("I live in Berlin."), remember("I moved to Lisbon last month.")
    acme, globex = remember("I work at Acme."), remember("I work at Globex now.")

    def chain(memory_id: str) -> dict[str, tuple[str, bool]]:
        return {v["content"]: (v["state"], v["current"])
                for v in cli_data(cli, "memory", "history", memory_id, "--agent", "ada", "--versions")}

    # control: a version recall answers with is current
    assert chain(berlin["id"]) == {"I live in Berlin.": ("superseded", False), "I moved to Lisbon last month.": ("current", True)}
    assert cli("memory", "forget", lisbon["id"], "--agent", "ada").exit_code == 0
    assert cli("memory", "set", globex["id"], "--agent", "ada", "--visibility", "hidden").exit_code == 0
    assert chain(berlin["id"]) == {"I live in Berlin.": ("superseded", False), "I moved to Lisbon last month.": ("archived", False)}
    assert chain(acme["id"]) == {"I work at Acme.": ("superseded", False), "I work at Globex now.": ("hidden", False)}
    for memory_id in (berlin["id"], acme["id"]):  # the same words as the text's state column
        assert {c: s for c, (s, _) in chain(memory_id).items()} == states(cli, memory_id)
