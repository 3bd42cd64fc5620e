"""`arcana import` of a file whose header model or vectors are hostile: refused or re-embedded, never a traceback.

A file carries its embedding model in the header and one vector per line.
Both are read from a file someone handed the user, so a header ``model``
that is not a model (a string, a list, no dimension, a dimension sqlite-vec
cannot hold) is refused with exit 2 before any store is touched, and a vector
that cannot be one (NaN, an overflowing number, all zeros) is dropped and
left to the embedder, as a vector of the wrong width is.
"""

from __future__ import annotations

import json

import pytest

from arcana_cli import exit_codes

MODEL = {"model": "test/tiny", "family": "tiny", "dimension": 4}


def _file(tmp_path, name: str, model, vectors: list) -> str:
    head = {"format": "arcana-export", "version": 1, "arcana_version": "0", "exported": {"agent": "ada"},
            "created_at": "2024-05-01T12:00:00Z", "with_history": False, "with_vectors": True, "model": model}
    lines = [json.dumps(head)]
    for number, vector in enumerate(vectors):
        memory = {"id": f"{name}-{number}", "agent_id": "x", "content": f"fact number {number} of {name}"}
        lines.append(json.dumps({"memory": memory, "vector": vector}) if vector is not None else json.dumps({"memory": memory}))
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n")  # json.dumps writes NaN and Infinity, as Python's reader takes them
    return str(path)


@pytest.mark.parametrize(
    "model",
    ["tiny", [1, 2], {"model": "test/tiny", "family": "tiny"}, {"model": "test/tiny", "family": "tiny", "dimension": "4"},
     {"model": "test/tiny", "family": "tiny", "dimension": 0}, {"model": "test/tiny", "family": "tiny", "dimension": 10**30},
     {"model": 7, "family": "tiny", "dimension": 4}],
    ids=["string", "list", "no-dimension", "dimension-text", "dimension-zero", "dimension-huge", "model-not-text"],
)
def test_a_header_model_that_is_not_one_is_refused_before_any_store_is_touched(cli, no_embedder, tmp_path, model):
    """A header ``model`` of the wrong shape ended the import in a TypeError/KeyError traceback (exit 1),
    after the target agent had already been created."""
    hostile = _file(tmp_path, "hostile", model, [[0.1, 0.2, 0.3, 0.4]])
    result = cli("import", hostile, "--agent", "mallory")
    assert result.exit_code == exit_codes.USAGE, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "model" in result.stderr and "Traceback" not in result.stderr
    assert "mallory" not in cli("agent", "list").stdout  # nothing was touched

    good = _file(tmp_path, "good", MODEL, [[0.1, 0.2, 0.3, 0.4]])  # positive control: a model that is one
    done = cli("import", good, "--agent", "ada", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["vectors_kept"] == 1


def test_a_vector_that_is_not_a_direction_is_dropped_not_a_traceback(cli, no_embedder, tmp_path):
    """A NaN, an infinity, a number past float range or an all-zero vector made l2_normalize raise
    ValueError (or OverflowError) out of the import: a traceback, exit 1, the rows in and no vector
    kept even for the good lines of the file. NaN and Infinity are no JSON (Python's writer puts
    them in, its reader took them): those lines are named and refused, the rest imported."""
    hostile = [
        [float("nan"), 0.2, 0.3, 0.4],
        [float("inf"), 0.2, 0.3, 0.4],
        [1e200, 0.2, 0.3, 0.4],  # finite, but its square is not
        [10**400, 0, 0, 0],  # a JSON integer no float can hold
        [0.0, 0.0, 0.0, 0.0],
    ]
    good = [[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]]
    path = _file(tmp_path, "mixed", MODEL, [hostile[0], good[0], *hostile[1:], good[1]])
    result = cli("import", path, "--agent", "ada", "--json")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert "line 2: not JSON (NaN is not a JSON value)" in result.stderr
    assert "line 4: not JSON (Infinity is not a JSON value)" in result.stderr
    report = json.loads(result.stdout)
    assert report["read"] == 5 and report["ops"] == {"insert": 5}
    assert report["vectors_kept"] == 2  # the good ones; the rest are left to the embedder (`arcana reindex`)
    listed = json.loads(cli("memory", "list", "--agent", "ada", "--json", "--limit", "100").stdout)
    assert len(listed) == 5


def test_vectors_of_a_model_this_home_cannot_query_do_not_pin_a_new_store(arcana_home, cli, tmp_path, offline_embedder):
    """Into an agent with no vectors yet, a file's vectors were kept whatever model they claimed, pinning
    the store to it: a file from a home with another model, or one naming this home's model at a width
    it does not have, left every later recall and remember saying 'no healthy embedder compatible with
    the pinned model' and semantic search falling back to keyword, with `reindex` unable to help."""
    arcana_home.root.mkdir(parents=True, exist_ok=True)
    for text in ("the user is allergic to peanuts", "the build uses make"):
        assert cli("remember", text, "--agent", "ada").exit_code == 0
    real = tmp_path / "real.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(real), "--with-vectors").exit_code == 0
    head, *rows = real.read_text().splitlines()
    model = json.loads(head)["model"]
    foreign = {"model": "BAAI/bge-small-en-v1.5", "family": "bge-small-en-v1.5", "dimension": 384}
    narrow = {**model, "dimension": 3}
    for name, claimed, width in (("foreign", foreign, 384), ("narrow", narrow, 3)):
        lines = [json.dumps({**json.loads(head), "model": claimed})]
        for row in rows:
            record = json.loads(row)
            lines.append(json.dumps({**record, "vector": record["vector"][:width]}))
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        done = cli("import", str(path), "--agent", name, "--json")
        assert done.exit_code == 0, done.output
        assert (json.loads(done.stdout)["vectors_kept"], json.loads(done.stdout)["embedded"]) == (0, 2), name
        found = cli("recall", "food intolerance", "--agent", name, "--mode", "semantic", "--json")
        assert "no healthy embedder" not in found.stderr, found.stderr
        assert json.loads(found.stdout)["results"][0]["content"] == "the user is allergic to peanuts", name

    kept = cli("import", str(real), "--agent", "copy", "--json")  # positive control: this home's own model
    assert (json.loads(kept.stdout)["vectors_kept"], json.loads(kept.stdout)["embedded"]) == (2, 0)
