"""JSON another program writes (a model's reply, a host hook's input, an Obsidian vault's settings)
is read strictly: a key given twice would let a second value slip past a check made on the first
reader's choice, and one nested past the parser's depth was a RecursionError, so each is refused
with the caller's own error."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memory.audit import AuditLog
from memory.errors import InvalidRequestError
from memory.hosts.claude_code import read_transcript
from memory.markdown.obsidian import excluded_files
from memory.reconcile.llm import DecisionKind, LLMDecisionError, parse_decision
from memory.runtime.host_save import parse_hook_input

NESTED = "[" * 100_000 + "]" * 100_000


def test_a_model_decision_is_read_and_one_with_a_key_twice_or_nested_is_refused():
    assert parse_decision('{"decision": "add"}', []).kind is DecisionKind.ADD  # the positive control
    with pytest.raises(LLMDecisionError, match="twice"):
        parse_decision('{"decision": "noop", "decision": "add"}', [])
    with pytest.raises(LLMDecisionError):
        parse_decision('{"decision": ' + NESTED + "}", [])


def test_hook_input_is_read_and_one_with_a_key_twice_is_refused(tmp_path):
    good = {"session_id": "abc", "transcript_path": str(tmp_path / "t.jsonl")}
    assert parse_hook_input(json.dumps(good).encode()).session_id == "abc"  # the positive control
    twice = b'{"session_id": "abc", "transcript_path": "/a/t.jsonl", "transcript_path": "/b/t.jsonl"}'
    with pytest.raises(InvalidRequestError, match="twice"):
        parse_hook_input(twice)


def test_obsidian_settings_with_a_key_twice_are_reported_not_half_applied(tmp_path: Path):
    (tmp_path / ".obsidian").mkdir()
    app = tmp_path / ".obsidian" / "app.json"
    app.write_text('{"userIgnoreFilters": ["private/"]}', encoding="utf-8")
    assert excluded_files(tmp_path).problems == ()  # the positive control
    app.write_text('{"userIgnoreFilters": ["private/"], "userIgnoreFilters": []}', encoding="utf-8")
    (problem,) = excluded_files(tmp_path).problems
    assert "twice" in problem


def test_a_transcript_line_with_a_key_given_twice_is_malformed_not_said():
    """Claude Code writes each line once; a line giving "isSidechain" twice passed the sidechain check
    on its last value and was stored as the person's words."""
    said = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "the real question"}}
    reply = {"type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": [{"type": "text", "text": "an answer"}]}}
    twice = b'{"type": "user", "uuid": "u2", "isSidechain": true, "message": {"content": "a subagent\'s words"}, "isSidechain": false}'
    lines = [json.dumps(said).encode(), json.dumps(reply).encode(), twice]
    read = read_transcript(io.BytesIO(b"\n".join(lines) + b"\n"), 0, max_bytes=1 << 20)
    assert [(e.prompt, e.response) for e in read.exchanges] == [("the real question", "an answer")]  # the control
    assert read.malformed == 1


def test_an_audit_line_with_a_key_given_twice_is_shown_as_unreadable(tmp_path: Path):
    log = AuditLog(tmp_path / "audit.log")
    log.append("remember", agent="ada")
    with (tmp_path / "audit.log").open("a", encoding="utf-8") as handle:
        handle.write('{"event": "forget", "event": "remember", "agent": "ada"}\n')
    newest, control = log.newest()
    assert control["event"] == "remember" and control["agent"] == "ada"
    assert newest["event"] == "unreadable line" and '"event": "forget"' in newest["line"]
