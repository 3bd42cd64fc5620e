"""JSON another program writes (a model's reply, a host hook's input, an Obsidian vault's settings)
is read strictly: a key given twice would let a second value slip past a check made on the first
reader's choice, and one nested past the parser's depth was a RecursionError, so each is refused
with the caller's own error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.errors import InvalidRequestError
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
