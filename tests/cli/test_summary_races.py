"""A session summary is asked of a model, which takes a while: an operator who hides (or forgets)
one of the session's memories meanwhile must not see it come back as the summary's text."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from model_server import LoopbackModelServer

from memory.extraction.extractors import SUMMARY_INSTRUCTIONS

STATED = "I prefer the zebrasecret locker by the door."


def ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _operator(*args: str) -> None:
    """The operator, in another process, while the model is still writing the summary."""
    done = subprocess.run([sys.executable, "-m", "arcana_cli.main", *args], env=dict(os.environ),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("action", [["set", "--visibility", "hidden"], ["forget"], None])
def test_a_memory_withdrawn_while_the_summary_is_written_is_not_summarised(cli, no_embedder, action):
    withdraw: list[str] = []

    def reply(body) -> str:
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        if system == SUMMARY_INSTRUCTIONS:
            while withdraw:
                _operator("memory", action[0], withdraw.pop(), "--agent", "ada", *action[1:])
            return "Summary: " + " ".join(body["messages"][-1]["content"].split())  # what it was shown
        return "Noted."

    with LoopbackModelServer(reply) as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
                   "--default").exit_code == 0
        assert cli("agent", "create", "ada").exit_code == 0
        assert cli("agent", "set", "ada", "--extraction", "strategy=llm").exit_code == 0
        first = ok(cli("run", "ada", STATED, "--keep-open", "--json"))
        assert first["written_ids"]
        ok(cli("run", "ada", "What is the weather like in Lima today?", "--session", first["session_id"], "--json"))
        if action:
            withdraw.extend(first["written_ids"])
        closed = ok(cli("session", "close", first["session_id"], "--agent", "ada", "--json"))
    found = ok(cli("recall", "zebrasecret locker door", "--agent", "ada", "--mode", "keyword", "--json"))["results"]
    if action is None:  # the control: nothing withdrawn, the summary is written and recalled
        assert closed["summary_memory_id"] and any("zebrasecret" in r["content"] for r in found)
        return
    assert not [r["content"] for r in found if "zebrasecret" in r["content"]]
    shown = ok(cli("session", "show", first["session_id"], "--agent", "ada", "--json"))
    assert "zebrasecret" not in json.dumps(shown)
    # The kept turn is summarised again without the withdrawn one.
    summary = ok(cli("memory", "show", closed["summary_memory_id"], "--agent", "ada", "--json"))
    assert "Lima" in summary["content"] and "zebrasecret" not in summary["content"]
