"""The CLI over semantic recall: modes and legs, status, reindex, doctor, and lazy model imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
from arcana_cli.app import run
try:
    run(sys.argv[1:])
    code = 0
except SystemExit as exc:
    code = exc.code or 0
sys.stdout.flush()
heavy = sorted(m for m in ("fastembed", "onnxruntime", "memory.reconcile.languages") if m in sys.modules)
sys.stderr.write(f"exit={code} heavy={','.join(heavy) or '-'}\\n")
"""


def arcana(*args: str) -> subprocess.CompletedProcess:
    """The real CLI in a fresh interpreter; stderr ends with the exit code and heavy modules loaded."""
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env=os.environ.copy()
    )


def probe(result: subprocess.CompletedProcess) -> str:
    return result.stderr.strip().splitlines()[-1]


def test_keyword_recall_never_imports_the_model_but_hybrid_does():
    # A write decides with the slot patterns (compiled when first used); a read never compiles them.
    remember = arcana("remember", "The user prefers metric units.", "-a", "bob")
    assert probe(remember) == "exit=0 heavy=fastembed,memory.reconcile.languages,onnxruntime"
    keyword = arcana("recall", "metric units", "-a", "bob", "--mode", "keyword", "--json")
    assert probe(keyword) == "exit=0 heavy=-"
    payload = json.loads(keyword.stdout)
    assert payload["legs"] == ["keyword"] and payload["results"][0]["content"] == "The user prefers metric units."
    for command in (("embeddings", "status", "--json"), ("memory", "list", "-a", "bob"), ("doctor", "--help")):
        assert probe(arcana(*command)) == "exit=0 heavy=-", command
    hybrid = arcana("recall", "units the user likes", "-a", "bob", "--json")  # default: hybrid
    assert probe(hybrid) == "exit=0 heavy=fastembed,onnxruntime"  # positive control for the check above
    payload = json.loads(hybrid.stdout)
    assert payload["legs"] == ["semantic", "keyword"]
    assert payload["results"][0]["matched_by"] == ["semantic", "keyword"]


def test_unpinned_store_recalls_by_keyword_without_loading_anything(cli):
    assert cli("config", "set", "embedding.providers", "[]").exit_code == 0
    assert cli("remember", "Deploys happen on Fridays.", "-a", "amy").exit_code == 0
    result = arcana("recall", "deploys", "-a", "amy", "--json")
    assert probe(result) == "exit=0 heavy=-"
    assert json.loads(result.stdout)["legs"] == ["keyword"]


def test_status_reindex_and_semantic_recall(cli):
    assert cli("config", "set", "embedding.providers", "[]").exit_code == 0
    for text in ("The user prefers metric units.", "The cat sat on the mat."):
        assert cli("remember", text, "-a", "bob").exit_code == 0
    status = json.loads(cli("embeddings", "status", "--json").stdout)["databases"]
    assert [(d["model"], d["rows"], d["missing"]) for d in status] == [(None, 2, 2)]

    # Keyword-only by choice: the keyword index is rebuilt, vectors are left alone, and that is success.
    keyword_only = cli("reindex", "--agent", "bob", "--json")
    assert keyword_only.exit_code == 0, keyword_only.output
    [report] = json.loads(keyword_only.stdout)["agents"]
    assert (report["keyword_rows"], report["vectors"]) == (2, None)
    # An embedder configured but unreachable is a failure: exit 5, said on stderr.
    assert cli("config", "set", "embedding.providers", '["ollama"]').exit_code == 0
    assert cli("config", "set", "embedding.ollama_url", "http://127.0.0.1:9").exit_code == 0
    assert cli("config", "set", "embedding.ollama_model", "nomic-embed-text").exit_code == 0
    unreachable = cli("reindex", "--agent", "bob")
    assert unreachable.exit_code == 5 and "no healthy embedder" in unreachable.output
    assert cli("config", "set", "embedding.providers", '["fastembed"]').exit_code == 0
    result = cli("reindex", "--all", "--json")
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)["agents"]
    assert report["vectors"]["embedded"] == 2 and report["keyword_rows"] == 2
    status = json.loads(cli("embeddings", "status", "--json").stdout)["databases"]
    assert [(d["model"], d["dimension"], d["embedded"], d["missing"]) for d in status] == [
        ("sentence-transformers/all-MiniLM-L6-v2", 384, 2, 0)
    ]
    again = json.loads(cli("reindex", "--all", "--embeddings", "--json").stdout)["agents"][0]
    assert again["vectors"]["embedded"] == 0 and again["keyword_rows"] is None  # cron re-runs are no-ops

    found = json.loads(cli("recall", "what scale for lengths and weights", "-a", "bob", "--mode", "semantic", "--json").stdout)
    assert found["legs"] == ["semantic"] and found["results"][0]["content"] == "The user prefers metric units."
    # The similarity floor (embedding.min_similarity, 0.2): an unrelated query recalls nothing, not the nearest noise.
    assert [r["content"] for r in found["results"]] == ["The user prefers metric units."]
    unrelated = cli("recall", "quarterly tax filing deadline", "-a", "bob", "--mode", "semantic", "--json")
    assert json.loads(unrelated.stdout)["results"] == []
    assert cli("config", "set", "embedding.min_similarity", "--", "-1").exit_code == 0  # floor off: KNN returns neighbours
    everything = json.loads(cli("recall", "quarterly tax filing deadline", "-a", "bob", "--mode", "semantic", "--json").stdout)
    assert len(everything["results"]) == 2


def test_reindex_usage_errors_and_lock(cli, arcana_home):
    assert cli("reindex").exit_code == 2
    assert cli("reindex", "--all", "--re-embed").exit_code == 2
    assert cli("reindex", "--all", "--model", "x").exit_code == 2
    from memory.locks import exclusive

    with exclusive(arcana_home.locks_dir / "reindex.lock", "reindex"):
        result = arcana("reindex", "--all")
    assert probe(result) == "exit=75 heavy=-" and "another reindex is running" in result.stderr


def test_reembed_from_the_cli_repins(cli, embed_server):
    from embed_server import hashed_vectors

    server = embed_server({"fake-embed": hashed_vectors(16)})
    assert cli("config", "set", "embedding.ollama_url", server.url).exit_code == 0
    assert cli("remember", "The user prefers metric units.", "-a", "bob").exit_code == 0
    result = cli("reindex", "--agent", "bob", "--re-embed", "--model", "ollama:fake-embed", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["agents"][0]["repinned"] is True
    [db] = json.loads(cli("embeddings", "status", "--json").stdout)["databases"]
    assert (db["model"], db["dimension"], db["missing"], db["vec_table"]) == ("fake-embed", 16, 0, "memory_vec_2")


def test_doctor_reports_embedders(cli):
    result = cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    check = checks["embedder sentence-transformers/all-MiniLM-L6-v2"]
    assert check["ok"] and "384-dim" in check["detail"]
