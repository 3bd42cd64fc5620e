"""Property-based hostile input through the in-process CLI: every outcome a documented exit code, never a traceback.

Queries (any code point, lone surrogates included), config.json and agent-card
JSON (any shape, or bytes that are not JSON), note frontmatter, and vault file
names (any bytes). Example counts are small so the suite stays fast; each
property runs against a home with real memories in it, so "nothing matched"
is not mistaken for "handled".
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arcana_cli import exit_codes

DOCUMENTED = {code for code, _ in exit_codes.TABLE}
def fuzz(examples: int):
    return settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Any code point, including lone surrogates (how Python hands over argv bytes that are not UTF-8).
any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)
config_keys = st.sampled_from(["memory", "recall", "embedding", "prune", "vaults", "pools", "models", "default_model"])
config_like = st.dictionaries(config_keys, json_values, max_size=3) | json_values


def clean(result) -> None:
    """A documented code, and no traceback: an exception a command let escape shows as result.exception."""
    assert result.exit_code in DOCUMENTED, (result.exit_code, result.stderr)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stderr


@pytest.fixture
def home_with_memories(cli, no_embedder):
    for text in ("The deploy runs on Tuesdays.", "The staging DB is pg-stage-2.", "Ada prefers metric units."):
        assert cli("remember", text, "--agent", "ada").exit_code == 0
    return no_embedder


@fuzz(10)
@given(query=any_text)
def test_any_query_gets_results_or_a_usage_error(cli, home_with_memories, query):
    result = cli("recall", query, "--agent", "ada", "--json")
    clean(result)
    if result.exit_code == 0:
        assert query.strip() and isinstance(json.loads(result.stdout)["results"], list)
    else:
        assert result.exit_code == exit_codes.USAGE and result.stderr.strip()


def test_the_query_property_has_a_positive_control(cli, home_with_memories):
    found = json.loads(cli("recall", "deploy Tuesdays", "--agent", "ada", "--json").stdout)["results"]
    assert [r["content"] for r in found] == ["The deploy runs on Tuesdays."]


@pytest.mark.parametrize(
    "when", ["31 February 2024", "February 30, 2024", "0 jan 2024", "1 jan 0000", "dec 9999", "99999999 years ago"]
)
def test_a_query_naming_a_date_that_does_not_exist_still_recalls(cli, home_with_memories, when):
    """A time expression that names no real time (the ranking's time boost) ended recall in a traceback."""
    result = cli("recall", f"deploy Tuesdays {when}", "--agent", "ada", "--json")
    clean(result)
    assert result.exit_code == 0, result.stderr
    assert [r["content"] for r in json.loads(result.stdout)["results"]] == ["The deploy runs on Tuesdays."]
    control = cli("recall", "deploy Tuesdays 2 jan 2024", "--agent", "ada", "--json")  # a real date still boosts
    assert control.exit_code == 0 and json.loads(control.stdout)["results"]


@fuzz(5)
@given(body=config_like.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass"))
       | st.binary(max_size=64))
def test_any_config_json_is_accepted_or_refused_with_exit_4_and_never_rewritten(cli, home_with_memories, body):
    path = home_with_memories.config_path
    original = path.read_bytes()
    try:
        path.write_bytes(body)
        for args in (("config", "validate"), ("recall", "deploy", "--agent", "ada", "--json")):
            result = cli(*args)
            clean(result)
            assert result.exit_code in (0, exit_codes.CONFIG), (args, result.exit_code, result.stderr)
            if result.exit_code == exit_codes.CONFIG:
                assert result.stderr.startswith("arcana: error: ") and str(path) in result.stderr
            assert path.read_bytes() == body
    finally:
        path.write_bytes(original)
    assert cli("recall", "deploy", "--agent", "ada").exit_code == 0  # control: the home still works


@fuzz(4)
@given(body=json_values.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass"))
       | st.fixed_dictionaries({"name": any_text, "id": any_text}, optional={"model": json_values}).map(
           lambda v: json.dumps(v).encode())
       | st.binary(max_size=64))
def test_any_agent_card_is_read_or_refused_with_exit_4_and_never_rewritten(cli, home_with_memories, body):
    card_path = home_with_memories.agents_dir / "fuzzed" / "agent.json"
    card_path.parent.mkdir(mode=0o700, exist_ok=True)
    try:
        card_path.write_bytes(body)
        for args in (("agent", "list", "--json"), ("recall", "deploy", "--agent", "ada", "--json")):
            result = cli(*args)
            clean(result)
            assert result.exit_code in (0, exit_codes.CONFIG), (args, result.exit_code, result.stderr)
        assert card_path.read_bytes() == body
    finally:
        shutil.rmtree(card_path.parent)
    assert [a["name"] for a in json.loads(cli("agent", "list", "--json").stdout)] == ["ada"]  # control


@pytest.fixture
def fuzz_vault(cli, no_embedder):
    root = Path(tempfile.mkdtemp(prefix="fuzz-vault-"))
    (root / "anchor.md").write_text("# Anchor\n\nAlways indexed: the positive control.\n")
    assert cli("vault", "add", str(root), "--name", "fz").exit_code == 0
    yield root
    shutil.rmtree(root, ignore_errors=True)


@fuzz(4)
@given(front=any_text | json_values.map(lambda v: json.dumps(v, ensure_ascii=False)), body=any_text)
def test_any_frontmatter_indexes_the_note_or_reports_it(cli, fuzz_vault, front, body):
    note = fuzz_vault / "fuzzed.md"
    note.write_bytes(f"---\n{front}\n---\n{body}\n".encode("utf-8", "surrogatepass"))
    result = cli("vault", "index", "fz", "--json")
    clean(result)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    indexed = json.loads(cli("vault", "status", "fz", "--json").stdout)["notes_indexed"]
    assert indexed == 2 or "fuzzed.md" in {f["path"] for f in report["skipped_files"]}


name_bytes = st.binary(min_size=1, max_size=60).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b".."))


@fuzz(4)
@given(names=st.lists(name_bytes.map(lambda b: b + b".md") | name_bytes, min_size=1, max_size=4, unique=True))
def test_any_file_names_index_the_rest_of_the_vault(cli, fuzz_vault, names):
    made = []
    try:
        for name in names:
            path = os.fsencode(fuzz_vault) + b"/" + name
            if len(name) > 250:
                continue
            with open(path, "wb") as handle:
                handle.write(b"# fuzzed\n")
            made.append(path)
        for args in (("vault", "index", "fz", "--json"), ("vault", "check", "fz", "--json")):
            result = cli(*args)
            clean(result)
            assert result.exit_code == 0, (args, result.stderr)
        status = json.loads(cli("vault", "status", "fz", "--json").stdout)
        assert status["notes_indexed"] >= 1  # the anchor, whatever else the folder holds
        search = cli("vault", "search", "fz", "positive control", "--mode", "keyword", "--json")
        clean(search)
        assert search.exit_code == 0 and "anchor.md" in search.stdout, search.stderr
    finally:
        for path in made:
            os.unlink(path)


def test_the_vault_properties_have_a_positive_control(cli, fuzz_vault):
    (fuzz_vault / "plain.md").write_text("---\ntags: [a]\n---\nplain\n")
    report = json.loads(cli("vault", "index", "fz", "--json").stdout)
    assert report["added"] == 2 and report["skipped_files"] == []
