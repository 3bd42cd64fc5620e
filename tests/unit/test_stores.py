"""The store factory: every kind of store is opened in one place, with its policy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory.adapters.opener import open_database, open_store
from memory.store_kinds import StoreKind, kind_of, store_path

ROOT = Path(__file__).resolve().parents[2]


def test_only_the_factory_and_the_adapters_construct_a_store():
    constructing = re.compile(r"\b(SQLiteAdapter|VectorAdapter|PostgresAdapter)\(")
    offenders = []
    for path in [*ROOT.joinpath("memory").rglob("*.py"), *ROOT.joinpath("arcana_cli").rglob("*.py")]:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("memory/adapters/") or rel == "memory/adapters/opener.py":
            continue
        offenders += [f"{rel}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1) if constructing.search(line)]
    assert offenders == []
    # positive control: the pattern does find the factory's own constructions
    assert constructing.search(ROOT.joinpath("memory/adapters/opener.py").read_text())


@pytest.mark.parametrize(
    "kind, name, quarantined",
    [(StoreKind.PRIVATE, "ag-1", True), (StoreKind.VAULT, "notes", True), (StoreKind.POOL, "team", False), (StoreKind.GLOBAL, None, False)],
)
def test_each_kind_gets_its_policy_and_its_place(arcana_home, kind, name, quarantined):
    store = open_store(arcana_home, kind, name)
    assert store.path == store_path(arcana_home, kind, name)
    assert kind_of(arcana_home, store.path) is kind
    assert (store.quarantine_dir is not None) is quarantined
    assert store.backup_dir == arcana_home.backups_dir
    assert store.audit is not None and store.audit.path == arcana_home.audit_log


def test_a_database_found_under_the_home_opens_as_its_kind(arcana_home):
    pool = open_database(arcana_home, arcana_home.pool_db("team"))
    private = open_database(arcana_home, arcana_home.agent_db("ag-1"))
    assert pool.quarantine_dir is None and private.quarantine_dir == arcana_home.quarantine_dir


def test_a_named_kind_without_a_name_is_refused(arcana_home):
    with pytest.raises(ValueError):
        store_path(arcana_home, StoreKind.POOL)


def test_diagnosis_never_moves_a_store(arcana_home):
    assert open_store(arcana_home, StoreKind.PRIVATE, "ag-1", repair=False).quarantine_dir is None
    assert open_store(arcana_home, StoreKind.PRIVATE, "ag-1").quarantine_dir is not None  # control
