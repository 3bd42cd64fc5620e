"""The cron-safe prune CLI: targets, modes, config defaults, locks (the store's rules:
tests/contract/test_store_prune.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


# Keyword-only homes: these tests are about the store, not the embedding model.
pytestmark = pytest.mark.usefixtures("no_embedder")


# -- CLI ---------------------------------------------------------------------------


def _seed(cli, agent: str, importances: list[float]) -> None:
    for i, importance in enumerate(importances):
        result = cli("remember", f"{agent} memory {i}", "--agent", agent, "--importance", str(importance))
        assert result.exit_code == 0, result.stderr


def _live(cli, agent: str) -> int:
    return len(json.loads(cli("memory", "list", "--agent", agent, "--json").stdout))


def test_prune_one_agent_leaves_the_other(cli):
    _seed(cli, "ada", [0.1, 0.2, 0.9])
    _seed(cli, "bob", [0.1, 0.9])
    result = cli("prune", "--agent", "ada", "--min-importance", "0.5", "--json")
    assert result.exit_code == 0, result.stderr
    [report] = json.loads(result.stdout)["agents"]
    assert (report["agent"], report["archived"]) == ("ada", 2)
    assert (_live(cli, "ada"), _live(cli, "bob")) == (1, 2)


def test_prune_all_agents_and_purge_mode(cli):
    _seed(cli, "ada", [0.1, 0.9])
    _seed(cli, "bob", [0.1, 0.2, 0.9])
    result = cli("prune", "--all", "--min-importance", "0.5", "--mode", "purge", "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    reports = {r["agent"]: r["purged"] for r in json.loads(result.stdout)["agents"]}
    assert reports == {"ada": 1, "bob": 2}
    listed = json.loads(cli("memory", "list", "--agent", "bob", "--all", "--archived", "--json").stdout)
    assert len(listed) == 1


def test_prune_dry_run_via_cli(cli):
    _seed(cli, "ada", [0.1, 0.2, 0.9])
    result = cli("prune", "--agent", "ada", "--max-entries", "1", "--dry-run", "--json")
    assert json.loads(result.stdout)["agents"][0]["archived"] == 2
    assert "would remove 2" in result.stderr
    assert _live(cli, "ada") == 3


def test_nothing_to_do_is_exit_zero_and_quiet_is_silent(cli):
    _seed(cli, "ada", [0.9])
    result = cli("prune", "--agent", "ada", "--min-importance", "0.5")
    assert result.exit_code == 0 and "nothing to prune" in result.stderr
    quiet = cli("prune", "--all", "--min-importance", "0.95", "--quiet")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    assert _live(cli, "ada") == 0  # positive control: quiet still pruned


def test_prune_uses_config_defaults_and_rejects_no_rule(cli):
    _seed(cli, "ada", [0.05, 0.3, 0.9])
    default = cli("prune", "--agent", "ada", "--json")  # the built-in policy: archive below 0.1
    assert default.exit_code == 0, default.stderr
    assert json.loads(default.stdout)["policy"]["mode"] == "archive"
    assert json.loads(default.stdout)["agents"][0]["archived"] == 1 and _live(cli, "ada") == 2
    assert cli("config", "set", "prune.min_importance", "0.5").exit_code == 0
    result = cli("prune", "--agent", "ada", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["agents"][0]["archived"] == 1
    flags = cli("prune", "--agent", "ada", "--max-entries", "5", "--json")  # flags replace prune.* entirely
    assert json.loads(flags.stdout)["policy"]["min_importance"] is None and _live(cli, "ada") == 1
    assert cli("config", "set", "prune.min_importance", "null").exit_code == 0
    no_rule = cli("prune", "--agent", "ada")
    assert no_rule.exit_code == 2 and "no rule" in no_rule.stderr


def test_max_bytes_keeps_the_content_within_a_budget_and_is_a_rule_of_its_own(cli):
    _seed(cli, "ada", [0.05, 0.5, 0.9])  # "ada memory N": 12 bytes each
    roomy = cli("prune", "--agent", "ada", "--max-bytes", "36", "--json")
    assert json.loads(roomy.stdout)["policy"]["max_bytes"] == 36
    assert json.loads(roomy.stdout)["agents"][0]["archived"] == 0  # the flag replaces prune.* (control: 0.05 stays)
    tight = cli("prune", "--agent", "ada", "--max-bytes", "20", "--json")
    assert tight.exit_code == 0, tight.stderr
    assert json.loads(tight.stdout)["agents"][0]["archived"] == 2  # 36 -> 12 bytes, the least worth first
    assert [m["content"] for m in json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)] == ["ada memory 2"]
    assert cli("prune", "--agent", "ada", "--max-bytes", "-1").exit_code == 2


def test_prune_needs_exactly_one_target(cli):
    _seed(cli, "ada", [0.1])
    assert cli("prune", "--min-importance", "0.5").exit_code == 2
    assert cli("prune", "--agent", "ada", "--all", "--min-importance", "0.5").exit_code == 2
    assert cli("prune", "--agent", "nobody", "--min-importance", "0.5").exit_code == 3


def test_lock_held_by_another_process_exits_75(cli, arcana_home):
    _seed(cli, "ada", [0.1])
    lock = arcana_home.locks_dir / "prune.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\n"
         "sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        result = cli("prune", "--agent", "ada", "--min-importance", "0.5", "--quiet")
        assert result.exit_code == 75
        assert "another prune is running" in result.stderr
        assert _live(cli, "ada") == 1
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert cli("prune", "--agent", "ada", "--min-importance", "0.5", "--quiet").exit_code == 0
    assert _live(cli, "ada") == 0


def test_prune_all_with_no_agents_is_nothing_to_do(cli):
    result = cli("prune", "--all", "--min-importance", "0.5")
    assert result.exit_code == 0 and "nothing to prune" in result.stderr


def test_prune_a_pool_and_the_global_tier_leaves_private_stores_alone(cli, no_embedder):
    assert cli("pool", "create", "team").exit_code == 0
    _seed(cli, "ada", [0.1])
    assert cli("agent", "join", "ada", "team").exit_code == 0
    for importance in ("0.1", "0.8"):
        written = cli("remember", f"team note {importance}", "--agent", "ada", "--pool", "team", "--importance", importance)
        assert written.exit_code == 0, written.stderr
    result = cli("prune", "--pool", "team", "--min-importance", "0.5", "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["agents"] == [] and [(t["tier"], t["archived"]) for t in payload["tiers"]] == [("pool:team", 1)]
    assert _live(cli, "ada") == 1  # the private store was not a target
    recalled = json.loads(cli("recall", "team note", "--agent", "ada", "--json").stdout)["results"]
    assert [r["content"] for r in recalled] == ["team note 0.8"]
    assert cli("prune", "--pool", "nope", "--min-importance", "0.5").exit_code == 3
    assert cli("prune", "--min-importance", "0.5").exit_code == 2  # no target named


def test_prune_the_global_tier(cli, arcana_home):
    assert cli("config", "set", "embedding.providers", "[]").exit_code == 0
    none_yet = cli("prune", "--global", "--min-importance", "0.5", "--json")  # nothing promoted: nothing to do
    assert none_yet.exit_code == 0 and json.loads(none_yet.stdout)["tiers"] == []
    _seed(cli, "ada", [0.95, 0.95])  # promoted: private and global copies
    result = cli("prune", "--global", "--max-entries", "1", "--json")
    assert result.exit_code == 0, result.stderr
    assert [(t["tier"], t["archived"]) for t in json.loads(result.stdout)["tiers"]] == [("global", 1)]
    assert _live(cli, "ada") == 2  # control: private copies untouched


OLD_TURNS = [  # an aged-out session: `consolidate` digests it
    {"content": "Caroline: I went to an LGBTQ support group and it was so very powerful for me.", "type": "episodic",
     "session": "s1", "created_at": "2023-05-08T10:00:00Z"},
    {"content": "Melanie: I painted a sunrise over the lake, and it was such a quiet morning.", "type": "episodic",
     "session": "s1", "created_at": "2023-05-08T10:01:00Z"},
]


def test_a_byte_budget_dry_run_lists_condensations_and_the_real_run_ledgers_them(cli, tmp_path, arcana_home):
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in OLD_TURNS))
    assert cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile").exit_code == 0
    assert cli("consolidate", "--agent", "ada", "--quiet").exit_code == 0
    (digest,) = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    budget = str(len(digest["content"].encode()) - 10)

    dry = cli("prune", "--agent", "ada", "--max-bytes", budget, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.stdout)
    (store,) = report["agents"]
    assert (report["removed"], report["condensed"], store["archived"], store["condensed"]) == (0, 1, 0, 1)
    (decision,) = store["condensations"]
    assert decision["id"] == digest["id"] and decision["bytes"][0] == len(digest["content"].encode())
    assert decision["content"].startswith("On 8 May 2023: Caroline: went LGBTQ support group")
    assert "would condense 1 digests" in dry.stderr
    assert json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout) == [digest]  # nothing changed

    done = cli("prune", "--agent", "ada", "--max-bytes", budget, "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["agents"][0]["condensations"] == [decision]
    (after,) = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    assert after["content"] == decision["content"]
    history = json.loads(cli("memory", "history", digest["id"], "--agent", "ada", "--json").stdout)
    assert history[-1]["op"] == "condense" and history[-1]["before"]["content"] == digest["content"]
    events = [json.loads(line) for line in arcana_home.audit_log.read_text().splitlines()]
    (line,) = [e for e in events if e["event"] == "prune" and not e["dry_run"]]
    assert line["condensed"] == 1 and "condensations" not in line
    again = cli("prune", "--agent", "ada", "--max-bytes", budget)
    assert again.exit_code == 0 and "nothing to prune" in again.stderr  # a second prune: a no-op


def test_a_condensed_digest_s_global_copy_is_condensed_with_it(cli, tmp_path, arcana_home):
    """An operator's action reaches every copy: prune's rewrite of a promoted digest rewrites its copy."""
    assert cli("config", "set", "embedding.providers", "[]").exit_code == 0
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in OLD_TURNS))
    assert cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile").exit_code == 0
    assert cli("consolidate", "--agent", "ada", "--quiet").exit_code == 0
    (digest,) = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    assert cli("remember", "I am allergic to penicillin.", "--agent", "ada", "--importance", "0.95").exit_code == 0
    assert cli("memory", "set", digest["id"], "--agent", "ada", "--importance", "0.95").exit_code == 0
    copy = json.loads(cli("memory", "show", digest["id"], "--global", "--json").stdout)
    assert copy["content"] == digest["content"]  # promoted: the copy the condensing must reach

    budget = str(len(digest["content"].encode()) - 10)
    # the dry run counts the copy its real run rewrites (it said nothing of it), and changes none
    dry = cli("prune", "--agent", "ada", "--max-bytes", budget, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    (planned,) = json.loads(dry.stdout)["agents"]
    assert planned["condensed_copies"] == {"tier": "global", "op": "update", "changed": True, "count": 1}
    assert json.loads(cli("memory", "show", digest["id"], "--global", "--json").stdout)["content"] == digest["content"]
    done = cli("prune", "--agent", "ada", "--max-bytes", budget, "--json")
    assert done.exit_code == 0, done.output
    (store,) = json.loads(done.stdout)["agents"]
    (condensed,) = store["condensations"]
    assert store["condensed_copies"] == planned["condensed_copies"]
    assert store["condensations"] == planned["condensations"]
    assert json.loads(cli("memory", "show", digest["id"], "--agent", "ada", "--json").stdout)["content"] == condensed["content"]
    copy = json.loads(cli("memory", "show", digest["id"], "--global", "--json").stdout)
    assert copy["content"] == condensed["content"] != digest["content"]


def test_a_hidden_digest_s_condensed_text_never_leaves_in_the_report(cli, tmp_path):
    """``prune --max-bytes --json`` (dry run and real) printed a hidden digest's condensed text. Now its
    id and sizes are listed, its text null; the visible digest beside it (the control) shows its own."""
    second = [{**line, "session": "s2", "content": line["content"].replace("lake", "harbour")} for line in OLD_TURNS]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [*OLD_TURNS, *second]))
    assert cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile").exit_code == 0
    assert cli("consolidate", "--agent", "ada", "--quiet").exit_code == 0
    digests = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    (secret,) = [d for d in digests if "harbour" in d["content"]]
    assert cli("memory", "set", secret["id"], "--agent", "ada", "--visibility", "hidden").exit_code == 0
    budget = str(sum(len(d["content"].encode()) for d in digests) * 6 // 10)  # both must shrink

    for dry in (["--dry-run"], []):
        done = cli("prune", "--agent", "ada", "--max-bytes", budget, "--json", *dry)
        assert done.exit_code == 0, done.output
        shown = {c["id"]: c["content"] for c in json.loads(done.stdout)["agents"][0]["condensations"]}
        assert len(shown) == 2 and shown[secret["id"]] is None and "harbour" not in done.stdout
        assert "LGBTQ" in next(text for i, text in shown.items() if i != secret["id"])  # control
    rows = {m["id"]: m for m in json.loads(cli("memory", "list", "--agent", "ada", "--all", "--json").stdout)}
    assert rows[secret["id"]]["content"] != secret["content"]  # condensed all the same
