"""Commands that change config.json at the same moment each keep their change.

config.json holds pool members, vaults, models and settings; `agent join`,
`vault add`, `model add` and `config set` each read it, change one thing and
write it back. Real processes running them together (released from one
barrier, as a script's `&` jobs are) must not overwrite each other: every one
that exits 0 finds its change in the file afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

from runner import arcana

TRIALS = 3

RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    go = Path(sys.argv[1])
    import arcana_cli.app, arcana_cli.commands.agent, arcana_cli.commands.config_cmd  # imported before the line
    import arcana_cli.commands.model, arcana_cli.commands.vault, memory.agents, memory.config, memory.federation.pools
    while not go.exists():
        time.sleep(0.001)
    from arcana_cli.main import main
    sys.argv = ["arcana", "--quiet", *sys.argv[2:]]
    main()
    """
)


def test_concurrent_config_writers_lose_no_change(tmp_path):
    for trial in range(TRIALS):
        home = tmp_path / f"home-{trial}"
        home.mkdir(mode=0o700)
        (home / "config.json").write_text(json.dumps({"embedding": {"providers": []}}))
        arcana("pool", "create", "team", home=home)
        agents = [f"a{i}" for i in range(5)]
        for name in agents:
            arcana("agent", "create", name, home=home)
        folders = [tmp_path / f"notes-{trial}-{i}" for i in range(2)]
        for folder in folders:
            folder.mkdir()
        jobs = [["agent", "join", name, "team"] for name in agents]
        jobs += [["config", "set", "recall.limit", "7"], ["config", "set", "prune.min_importance", "0.2"]]
        jobs += [["model", "add", "m1", "--provider", "ollama", "--base-url", "http://127.0.0.1:9", "--model", "x"]]
        jobs += [["vault", "add", str(folder), "--name", f"v{i}"] for i, folder in enumerate(folders)]
        go = tmp_path / f"go-{trial}"
        env = {**os.environ, "ARCANA_HOME": str(home)}
        racers = [subprocess.Popen([sys.executable, "-c", RACER, str(go), *job], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for job in jobs]
        time.sleep(2.0)  # every racer has imported and waits at the line
        go.touch()
        for proc, job in zip(racers, jobs, strict=True):
            _, errors = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"{job}: {errors}"  # each one says it made its change

        config = json.loads((home / "config.json").read_text())
        members = json.loads(arcana("pool", "show", "team", "--json", home=home))["members"]
        assert sorted(members) == agents, f"trial {trial}: pool members lost: {sorted(set(agents) - set(members))}"
        assert config["recall"]["limit"] == 7, f"trial {trial}: config set recall.limit lost"
        assert config["prune"]["min_importance"] == 0.2, f"trial {trial}: config set prune.min_importance lost"
        assert "m1" in config["models"], f"trial {trial}: model add lost"
        assert sorted(config["vaults"]) == ["v0", "v1"], f"trial {trial}: vault add lost"
        assert config["embedding"]["providers"] == []  # what no racer touched is kept too


def test_a_second_vault_add_of_one_name_at_once_is_refused_not_overwritten(tmp_path):
    """Two `vault add --name same` at once: one registers, the other is told the name is taken (exit 2)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.json").write_text(json.dumps({"embedding": {"providers": []}}))
    folders = [tmp_path / f"notes-{i}" for i in range(2)]
    for folder in folders:
        folder.mkdir()
    for trial in range(TRIALS):
        name = f"same{trial}"
        go = tmp_path / f"go-{trial}"
        env = {**os.environ, "ARCANA_HOME": str(home)}
        racers = [subprocess.Popen([sys.executable, "-c", RACER, str(go), "vault", "add", str(folder), "--name", name],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for folder in folders]
        time.sleep(2.0)
        go.touch()
        codes = sorted(proc.wait(timeout=120) for proc in racers)
        for proc in racers:
            proc.communicate()
        assert codes == [0, 2], f"trial {trial}: exit codes {codes}; both said they registered '{name}'"
        arcana("vault", "remove", name, "--yes", home=home)


def test_concurrent_changes_to_one_agent_card_are_all_kept(tmp_path):
    """`agent set` (two of them) and `agent rename` on one agent at once: each that exits 0 finds its
    change in the card; a set that comes after the rename no longer finds the old name (exit 3)."""
    jobs = [["agent", "set", "ada", "--system-prompt", "be brief"], ["agent", "set", "ada", "--weight", "semantic=0.3"],
            ["agent", "rename", "ada", "ada2"]]
    kept = {
        0: lambda card: card["system_prompt"] == "be brief",
        1: lambda card: card["memory_weights"] == {"semantic": 0.3},
        2: lambda card: card["name"] == "ada2",
    }
    for trial in range(2 * TRIALS):
        home = tmp_path / f"home-{trial}"
        home.mkdir(mode=0o700)
        (home / "config.json").write_text(json.dumps({"embedding": {"providers": []}}))
        arcana("agent", "create", "ada", home=home)
        go = tmp_path / f"go-{trial}"
        env = {**os.environ, "ARCANA_HOME": str(home)}
        racers = [subprocess.Popen([sys.executable, "-c", RACER, str(go), *job], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for job in jobs]
        time.sleep(2.0)
        go.touch()
        codes = []
        for proc, job in zip(racers, jobs, strict=True):
            _, errors = proc.communicate(timeout=120)
            assert proc.returncode in (0, 3), f"{job}: {errors}"
            assert proc.returncode == 0 or "no agent named 'ada'" in errors, errors
            codes.append(proc.returncode)
        cards = [json.loads(p.read_text()) for p in (home / "agents").glob("*/agent.json")]
        assert len(cards) == 1, f"trial {trial}: {len(cards)} cards"
        lost = [jobs[i] for i, code in enumerate(codes) if code == 0 and not kept[i](cards[0])]
        assert not lost, f"trial {trial}: exited 0 but their change is gone: {lost}; card {cards[0]}"
        assert codes[2] == 0  # the rename always finds ada: nothing else takes its name away
