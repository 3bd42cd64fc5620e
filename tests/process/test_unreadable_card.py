"""One unreadable agent card stops no other agent (man/memory.md#agents).

Every lookup and every --all run read every card and raised on the first bad
one, so broken bob stopped ada's recall, `agent list`, the web view and every
cron prune. Now ada keeps working beside broken bob (the control in each test),
bob himself is still exit 4 by name, id or prefix, a name no readable card has
is exit 4 (never a twin made by `remember`), and each --all run does the
readable agents, names each unreadable card on stderr and exits 4.
"""

from __future__ import annotations

import json

import pytest
from runner import keyword_only, run_arcana

from arcana_cli import exit_codes
from memory.home import Home

BROKEN = '{"name": "bob", "id": 5'


@pytest.fixture
def home(tmp_path) -> tuple[Home, str, str]:
    """ada with two memories (one of low importance), bob whose card is then cut short; (home, ada's id, bob's id)."""
    home = Home(tmp_path / "h")
    keyword_only(home)
    ids = {}
    for name in ("ada", "bob"):
        made = arcana(home, "agent", "create", name, "--json")
        ids[name] = json.loads(made.stdout)["id"]
    arcana(home, "remember", "The user prefers green tea", "--agent", "ada")
    arcana(home, "remember", "A passing remark about weather", "--agent", "ada", "--importance", "0.05")
    (home.agent_dir(ids["bob"]) / "agent.json").write_text(BROKEN)
    return home, ids["ada"], ids["bob"]


def arcana(home: Home, *args: str, code: int = 0):
    done = run_arcana(*args, home=home.root, timeout=120)
    assert done.returncode == code, (args, done.returncode, done.stderr)
    return done


def folders(home: Home) -> list[str]:
    return sorted(p.name for p in home.agents_dir.iterdir())


def test_ada_works_by_name_id_and_prefix_while_bob_is_exit_4_every_way(home):
    home, ada, bob = home
    card = str(home.agent_dir(bob) / "agent.json")
    for who in ("ada", ada, ada[:8]):  # the control: her own card is readable
        found = arcana(home, "recall", "green tea", "--agent", who, "--json")
        assert [r["content"] for r in json.loads(found.stdout)["results"]] == ["The user prefers green tea"]
    arcana(home, "remember", "The user bikes to work", "--agent", "ada")
    for who in ("bob", bob, bob[:8]):
        refused = arcana(home, "recall", "tea", "--agent", who, code=exit_codes.CONFIG)
        assert card in refused.stderr and "repair the JSON" in refused.stderr and refused.stderr.count("\n") == 1


def test_a_name_no_readable_card_has_is_exit_4_and_makes_no_twin(home):
    home, ada, bob = home
    before = folders(home)
    for name in ("bob", "carol"):  # the unreadable card may be either: neither is made anew
        refused = arcana(home, "remember", "Standup at 10", "--agent", name, code=exit_codes.CONFIG)
        assert str(home.agent_dir(bob)) in refused.stderr and "created agent" not in refused.stderr
    arcana(home, "agent", "rename", "ada", "bob", code=exit_codes.CONFIG)  # nor a twin by renaming
    assert folders(home) == before
    (home.agent_dir(bob) / "agent.json").write_text(json.dumps({"id": bob, "name": "bob"}))  # repaired
    made = arcana(home, "remember", "Standup at 10", "--agent", "carol")  # the control: now it may be made
    assert "created agent 'carol'" in made.stderr and len(folders(home)) == 3


def test_agent_list_shows_the_readable_agents_and_names_each_unreadable_card(home):
    home, ada, bob = home
    listed = arcana(home, "agent", "list", "--json", code=exit_codes.CONFIG)
    assert [a["name"] for a in json.loads(listed.stdout)] == ["ada"]
    lines = listed.stderr.splitlines()
    assert len(lines) == 1 and str(home.agent_dir(bob) / "agent.json") in lines[0] and "invalid json" in lines[0].lower()
    assert "repair the JSON by hand, or move" in lines[0]
    # a card copied into another folder (it would take over bob's id) is named too, and ada listed once
    copy = home.agents_dir / ("0" * 32)
    copy.mkdir(mode=0o700)
    (copy / "agent.json").write_text((home.agent_dir(ada) / "agent.json").read_text())
    listed = arcana(home, "agent", "list", "--json", code=exit_codes.CONFIG)
    assert [a["id"] for a in json.loads(listed.stdout)] == [ada]
    assert len(listed.stderr.splitlines()) == 2 and "is not its folder's name" in listed.stderr


def test_every_all_run_does_the_readable_agents_and_names_the_unreadable_one(home, tmp_path):
    home, ada, bob = home
    card = str(home.agent_dir(bob) / "agent.json")
    pruned = arcana(home, "--quiet", "prune", "--all", "--min-importance", "0.1", code=exit_codes.CONFIG)  # cron
    assert pruned.stdout == "" and pruned.stderr.count("\n") == 1 and card in pruned.stderr and "left out" in pruned.stderr
    left = json.loads(arcana(home, "memory", "list", "--agent", "ada", "--json").stdout)
    assert [m["content"] for m in left] == ["The user prefers green tea"]  # ada was pruned
    for args in (("reindex", "--all"), ("consolidate", "--all", "--dry-run")):
        done = arcana(home, *args, "--json", code=exit_codes.CONFIG)
        report = json.loads(done.stdout)
        assert [a["agent"] for a in report["agents"]] == ["ada"] and card in report["unreadable"][0], args
        assert card in done.stderr
    target = tmp_path / "all.jsonl"
    exported = arcana(home, "export", "--all", "--output", str(target), code=exit_codes.CONFIG)
    assert "The user prefers green tea" in target.read_text() and card in exported.stderr
    doctor = arcana(home, "doctor", "--json", code=exit_codes.FAILURE)
    checks = {(c["name"], c["ok"]): c["detail"] for c in json.loads(doctor.stdout)["checks"]}
    assert card in checks[("agent cards", False)]
    assert ("tier private (ada)", True) in checks and (f"tier private ({bob})", False) in checks
