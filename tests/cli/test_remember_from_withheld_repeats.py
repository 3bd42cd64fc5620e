"""A `remember --from` line an agent said, repeating a memory an operator withheld, is stored withheld.

After `memory forget` (or a hide) of "My locker code is 4471", a chat export's assistant line "The
user's locker code is 4471 at the gym" was stored visible and the code answered recall again: the
batch path never ran the check a single agent write runs (man/memory.md, derived memories). The
controls in the same store and the same file: the user's own line with the same words, and an
assistant line repeating nothing withheld, both answer recall. Real SQLite, sqlite-vec and the
offline model (the batch's texts are primed for its candidate search).
"""

from __future__ import annotations

import json

import pytest
from runner import cli_data

LOCKER = "My locker code is 4471"
CLAIM = "The user's locker code is 4471 at the gym"
USERS = "My locker code is 4471 at the pool"
BIKE = "The bike painted teal is kept in the shed"


def _recalled(cli, query: str) -> list[str]:
    return [r["content"] for r in cli_data(cli, "recall", query, "--agent", "ada", "--mode", "keyword")["results"]]


# A window saying more words than the keyword index is asked about is checked against every withheld row.
FILLER = [{"role": "assistant", "content": f"Step {n} sorts parcel{n} crate{n} shelf{n} ladder{n} bucket{n} lantern{n}"}
          for n in range(12)]


@pytest.mark.parametrize("filler", [[], FILLER], ids=["few-words", "many-words"])
@pytest.mark.parametrize("strategy", ["heuristic", "off"])
@pytest.mark.parametrize("edit", [("set", "--visibility", "hidden"), ("forget",)])
def test_an_assistant_line_repeating_a_withheld_memory_is_stored_withheld(cli, edit, strategy, filler):
    assert cli("config", "set", "memory.reconcile.strategy", strategy).exit_code == 0
    locker = cli_data(cli, "remember", LOCKER, "--agent", "ada")["id"]
    assert cli("memory", edit[0], locker, *edit[1:], "--agent", "ada").exit_code == 0
    lines = [{"role": "assistant", "content": CLAIM, "session": "chat"},
             {"role": "user", "content": USERS, "session": "chat"},  # control: the user's own words
             {"role": "assistant", "content": BIKE, "session": "chat"}, *filler]  # control: repeats nothing withheld
    body = "".join(json.dumps(x) + "\n" for x in lines)
    done = cli("remember", "--from", "-", "--agent", "ada", "--json", input=body)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["written"] == 3 + len(filler)
    again = cli("remember", "--from", "-", "--agent", "ada", "--json", input=body)  # a re-run stores nothing anew
    assert again.exit_code == 0 and json.loads(again.stdout)["unchanged"] == 3 + len(filler), again.output

    recalled = _recalled(cli, "locker code 4471")
    assert CLAIM not in recalled and USERS in recalled, recalled
    assert BIKE in _recalled(cli, "bike teal shed")

    # Kept, withheld as the memory is, and linked to it for the operator who shows that memory again.
    everything = cli_data(cli, "memory", "list", "--agent", "ada", "--all", "--archived")
    claim = next(m["id"] for m in everything if m["content"] == CLAIM)
    stored = cli_data(cli, "memory", "show", claim, "--agent", "ada")
    assert (stored["visibility"], stored["archived"]) == (("hidden", False) if edit[0] == "set" else ("visible", True))
    assert stored["sources"] == [locker], stored
