"""Secrets in what is captured without the user typing it as a memory are never stored.

`arcana run` records each turn (prompt and answer) in its session, extracts
memories from it and summarises the session; the MCP `remember` and `update`
tools store what an agent sends. A key pasted into a prompt, or repeated by a
model, went into the session file, the turn's echo, the distilled fact and
the summary in plain text. Each test pairs the secrets with words that only
look like them, which must be stored as said (a filter that removed
everything would fail), and `arcana remember TEXT` stays the user's choice.
"""

from __future__ import annotations

import json

import pytest
from model_server import LoopbackModelServer

from memory.agents import AgentRegistry
from memory.extraction.extractors import EXTRACTION_INSTRUCTIONS, SUMMARY_INSTRUCTIONS
from runner import cli_data

OPENAI = "sk-proj-Q3vT9xL2mN8pR4sW7yZ1aB5cD6eF0gH2jK4lM"
GITHUB = "ghp_R2d2C3po4Bb8Ee1Yy7Kk5Ll0Mm9Nn3Oo6Pp2Qq"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
SECRETS = (OPENAI, GITHUB, AWS_ID)
LOOKALIKES = ("sk-learn-compatible-pipelines", "AKIA is the prefix", "ghp_ starts a GitHub token")
PROMPT = f"Remember that the deploy key for plover is {OPENAI}, CI reads {AWS_ID}, and {', '.join(LOOKALIKES)}."


def stored_bytes(home) -> bytes:
    """Everything under the home: session files, stores, audit log."""
    return b"".join(path.read_bytes() for path in home.root.rglob("*") if path.is_file())


def contents(cli) -> str:
    return " ".join(m["content"] for m in cli_data(cli, "memory", "list", "--agent", "ada", "--all"))


def answer_repeating_a_token(body: dict) -> str:
    """A model that repeats a secret it was given, or one of its own, in its answer and its extraction."""
    system = body["messages"][0]["content"]
    if system == EXTRACTION_INSTRUCTIONS:
        return json.dumps([{"type": "semantic", "content": f"The plover token is {GITHUB}; ghp_ starts a GitHub token."}])
    if system == SUMMARY_INSTRUCTIONS:
        return f"The user shared the plover token {GITHUB}; ghp_ starts a GitHub token."
    return f"Noted, I will use {GITHUB} for plover (ghp_ starts a GitHub token)."


@pytest.mark.parametrize("strategy", ["heuristic", "llm"])
def test_a_run_turn_stores_no_secret_it_was_given_or_answered(cli, no_embedder, strategy):
    with LoopbackModelServer(answer_repeating_a_token) as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "t", "--default").exit_code == 0
        assert cli("agent", "create", "ada").exit_code == 0
        assert cli("agent", "set", "ada", "--extraction", f"strategy={strategy}").exit_code == 0
        told = cli_data(cli, "run", "ada", PROMPT)
        answered = cli_data(cli, "run", "ada", "What is the plover deploy key?", "--keep-open")
        cli_data(cli, "run", "ada", "And which key does CI read?", "--session", answered["session_id"])
        assert cli("session", "close", answered["session_id"], "--agent", "ada").exit_code == 0
        sent = server.requests
    assert GITHUB in told["answer"]  # the person sees what the model said; only what is stored is redacted
    assert OPENAI in sent[0]["raw"]  # the model is given the prompt as typed
    assert told["written_ids"] and told["summary_memory_id"]
    stored = stored_bytes(no_embedder)
    for secret in SECRETS:
        assert secret.encode() not in stored, secret
    if strategy == "llm":  # the extraction and summary requests are given the turns as stored
        asked = [r["raw"] for r in sent if r["body"]["messages"][0]["content"] in (EXTRACTION_INSTRUCTIONS, SUMMARY_INSTRUCTIONS)]
        assert len(asked) >= 4 and all(OPENAI not in raw for raw in asked)
    kept = contents(cli)
    assert "[secret removed]" in kept
    assert all(phrase in kept for phrase in ("ghp_ starts a GitHub token",)), kept
    if strategy == "heuristic":
        assert all(phrase in kept for phrase in LOOKALIKES), kept
        assert "deploy key for plover is [secret removed]" in kept


def test_a_summary_of_a_session_recorded_with_a_secret_stores_none(cli, no_embedder):
    """A session file written before turns were redacted, still open: `session close` summarises it."""
    with LoopbackModelServer(answer_repeating_a_token) as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "t", "--default").exit_code == 0
        assert cli("agent", "create", "ada").exit_code == 0
        card = AgentRegistry(no_embedder).resolve("ada")
        sessions = no_embedder.agent_dir(card.id) / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        lines = [{"at": "2026-01-02T10:00:00+00:00", "kind": "opened", "agent_id": card.id},
                 {"at": "2026-01-02T10:00:01+00:00", "kind": "turn", "prompt": PROMPT, "response": "Noted.",
                  "model": "loop", "recalled_ids": [], "replayed_ids": []}]
        (sessions / "20260102-100000-abcdef.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        closed = cli_data(cli, "session", "close", "20260102-100000-abcdef", "--agent", "ada")
    assert closed
    summaries = [m["content"] for m in cli_data(cli, "memory", "list", "--agent", "ada", "--all")]
    assert len(summaries) == 1 and "[secret removed]" in summaries[0], summaries
    assert all(secret not in summaries[0] for secret in SECRETS)
    assert all(phrase in summaries[0] for phrase in LOOKALIKES)  # the heuristic summary keeps the words around them


def test_remember_keeps_what_the_user_typed(cli, no_embedder):
    """The user's explicit memory is theirs to keep (man/memory.md): nothing in it is changed."""
    assert cli("agent", "create", "ada").exit_code == 0
    assert cli("remember", f"The plover deploy key is {OPENAI}", "--agent", "ada").exit_code == 0
    assert OPENAI in contents(cli)


def test_a_model_item_refused_with_a_secret_in_it_is_audited_without_it(cli, no_embedder):
    """Why a model's extraction was not used is an audit line quoting the refused item: the key in it
    went into logs/audit.jsonl in plain text (cut at 80 characters, past where a shape is known)."""

    def reply(body):
        if body["messages"][0]["content"] == EXTRACTION_INSTRUCTIONS:
            return json.dumps([{"content": f"{GITHUB} is the plover token", "type": "nonsense-kind"}])
        return "Noted."

    with LoopbackModelServer(reply) as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "t", "--default").exit_code == 0
        assert cli("agent", "create", "ada").exit_code == 0
        assert cli("agent", "set", "ada", "--extraction", "strategy=llm").exit_code == 0
        cli_data(cli, "run", "ada", "Which token does plover use?")
    audit = no_embedder.audit_log.read_text()
    fallbacks = [json.loads(line) for line in audit.splitlines() if '"extraction_fallback"' in line]
    assert any("nonsense-kind" in line["reason"] for line in fallbacks), audit  # the reason is still told
    assert GITHUB[:20] not in audit and "[secret removed]" in audit


def test_remember_from_a_chat_export_redacts_what_the_assistant_said_and_keeps_what_the_user_typed(cli, no_embedder):
    """A chat export's assistant turns are text the user did not type: a key a model repeated or made
    up is taken out, as in a `run` turn. The user's own lines, and lines that name no role (a list of
    memories), are stored as typed, as `arcana remember TEXT` is."""
    lines = [
        {"role": "user", "content": f"My plover deploy key is {OPENAI}, keep it.", "session": "chat"},
        {"role": "assistant", "content": f"Noted: plover uses {GITHUB}; ghp_ starts a GitHub token.", "session": "chat"},
        {"role": "system", "content": f"CI reads {AWS_ID}.", "session": "chat"},
        {"content": f"The staging key is {AWS_ID}."},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    result = cli("remember", "--from", "-", "--agent", "ada", "--json", input=body)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["written"] == 4
    kept = {m["content"] for m in cli_data(cli, "memory", "list", "--agent", "ada", "--all")}
    assert kept == {
        f"My plover deploy key is {OPENAI}, keep it.",
        "Noted: plover uses [secret removed]; ghp_ starts a GitHub token.",
        "CI reads [secret removed].",
        f"The staging key is {AWS_ID}.",
    }
    assert GITHUB.encode() not in stored_bytes(no_embedder)
    bad = cli("remember", "--from", "-", "--agent", "ada", "--json", input=json.dumps({"role": 7, "content": "x"}) + "\n")
    assert bad.exit_code == 2 and "'role' must be a non-empty string" in bad.stdout
