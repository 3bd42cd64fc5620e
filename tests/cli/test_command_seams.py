"""Seams between commands: one concept, one behaviour and one message in every command that has it.

Each test failed before its fix; each refusal sits beside a positive control.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("no_embedder")


def one_line_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arcana: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# -- a maintenance run's selection ----------------------------------------------


@pytest.mark.parametrize("verb", ["prune", "reindex", "consolidate"])
def test_a_selection_error_names_the_command_it_came_from(cli, verb):
    assert cli("remember", "Deploys happen on Tuesdays", "--agent", "ada").exit_code == 0

    nothing = cli(verb)
    assert nothing.exit_code == 2
    assert f"nothing to {verb}; name a store" in one_line_error(nothing)

    both = cli(verb, "--agent", "ada", "--all")
    assert both.exit_code == 2
    assert f"--all already {verb}s every agent" in one_line_error(both)

    named = cli(verb, "--agent", "ada", *(["--min-importance", "0.01"] if verb == "prune" else []))
    assert named.exit_code == 0, named.stderr  # positive control: a named store runs
