"""A private store the system will not let Arcana write (an immutable memory.db, `chattr +i`): doctor
said all was well, and `remember` failed with SQLite's 'attempt to write a readonly database' and no
fix. Doctor now names the file, and the write says what to do, in one line, exit 5. Bob's store, in the
same home, is the positive control."""

from __future__ import annotations

import json

from immutable import immutable
from runner import keyword_only, run_arcana


def test_a_store_that_cannot_be_written_is_named_by_doctor_and_the_write(arcana_home):
    keyword_only(arcana_home)
    ids = {}
    for name in ("ada", "bob"):
        assert run_arcana("agent", "create", name, home=arcana_home).returncode == 0
        assert run_arcana("remember", f"Tea is served at four for {name}.", "-a", name, home=arcana_home).returncode == 0
        ids[name] = json.loads(run_arcana("agent", "show", name, "--json", home=arcana_home).stdout)["id"]
    db = arcana_home.agent_db(ids["ada"])
    arcana_home.config_path.chmod(0o600)

    with immutable(db):
        done = run_arcana("doctor", "--json", home=arcana_home)
        assert done.returncode == 1, done.stdout
        [failure] = [c for c in json.loads(done.stdout)["checks"] if not c["ok"]]
        assert failure["name"] == f"writable agents/{ids['ada']}/memory.db"
        assert "cannot be written" in failure["detail"] and f"chattr -i {db}" in failure["detail"]

        done = run_arcana("remember", "The kettle is blue.", "-a", "ada", home=arcana_home)
        assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
        assert f"{db}: the store cannot be written" in done.stderr and f"chattr -i {db}" in done.stderr, done.stderr
        done = run_arcana("recall", "tea", "-a", "ada", home=arcana_home)  # reads go on
        assert done.returncode == 0 and "Tea is served" in done.stdout
        done = run_arcana("remember", "The kettle is blue.", "-a", "bob", home=arcana_home)
        assert done.returncode == 0, done.stderr  # control: another store of the same home

    done = run_arcana("doctor", "--json", home=arcana_home)
    assert done.returncode == 0, [c for c in json.loads(done.stdout)["checks"] if not c["ok"]]
    assert run_arcana("remember", "The kettle is blue.", "-a", "ada", home=arcana_home).returncode == 0


def test_an_immutable_agent_card_is_named_with_its_fix(arcana_home):
    """agent set on an immutable agent.json named the temp file it had written and already removed."""
    keyword_only(arcana_home)
    assert run_arcana("agent", "create", "ada", home=arcana_home).returncode == 0
    ada = json.loads(run_arcana("agent", "show", "ada", "--json", home=arcana_home).stdout)["id"]
    card = arcana_home.root / "agents" / ada / "agent.json"
    before = card.read_bytes()

    with immutable(card):
        done = run_arcana("agent", "set", "ada", "--system-prompt", "Be brief.", home=arcana_home)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"arcana: error: {card}: operation not permitted;") and f"chattr -i -a {card}" in done.stderr
    assert card.read_bytes() == before and [p.name for p in card.parent.glob(".agent.*")] == []
    done = run_arcana("agent", "set", "ada", "--system-prompt", "Be brief.", home=arcana_home)
    assert done.returncode == 0, done.stderr  # control: once it may change again
