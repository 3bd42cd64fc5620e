"""A session summary and a turn's echo repeat the facts the session stated (``consolidates``
edges): once a later fact supersedes one of them, they must stop answering with it too, as the
fact itself does; what they carry that still holds answers on through its own memory."""

from __future__ import annotations

import json

from model_server import LoopbackModelServer


def ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_summary_repeating_a_superseded_fact_stops_answering_with_it(cli, no_embedder):
    with LoopbackModelServer(lambda body: "Noted.") as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
                   "--default").exit_code == 0
        first = ok(cli("run", "ada", "I live in Berlin.", "--json"))
        control = ok(cli("run", "ada", "I prefer green tea.", "--json"))
        ok(cli("run", "ada", "I live in Lisbon now.", "--json"))

    berlin = ok(cli("recall", "Berlin", "--agent", "ada", "--json"))["results"]
    assert berlin == []  # neither the fact, nor its turn's echo, nor the session's summary
    ended = ok(cli("memory", "show", first["summary_memory_id"], "--agent", "ada", "--json"))
    assert ended["superseded_by"] is not None and ended["valid_to"] is not None  # kept, for --as-of and history
    lisbon = [e["content"] for e in ok(cli("recall", "Lisbon", "--agent", "ada", "--json"))["results"]]
    assert "I live in Lisbon now." in lisbon
    tea = {e["id"] for e in ok(cli("recall", "green tea", "--agent", "ada", "--json"))["results"]}
    assert control["summary_memory_id"] in tea and set(control["written_ids"]) <= tea  # the control answers on
