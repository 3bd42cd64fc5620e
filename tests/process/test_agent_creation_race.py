"""Racing first writes to a new agent name never create twin agents.

Eight real processes each run `arcana remember --agent NEW` (the CLI's own
entry point), released together from a barrier so their first look at the
agents folder happens at the same moment. Exactly one agent is made, and all
eight memories are reached through `--agent NEW`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

WORKERS = 8
TRIALS = 3

RACER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    go = Path(sys.argv[1])
    import arcana_cli.app, arcana_cli.commands.remember, memory.agents  # imported before the start line
    while not go.exists():
        time.sleep(0.001)
    from arcana_cli.main import main
    sys.argv = ["arcana", "--quiet", "remember", sys.argv[2], "--agent", "newcomer", "--no-reconcile"]
    main()
    """
)


def test_concurrent_first_writes_make_one_agent(no_embedder, tmp_path):
    for trial in range(TRIALS):
        home = tmp_path / f"home-{trial}"
        home.mkdir()
        (home / "config.json").write_text(json.dumps({"embedding": {"providers": []}}))
        go = tmp_path / f"go-{trial}"
        env = {**os.environ, "ARCANA_HOME": str(home)}
        racers = [subprocess.Popen([sys.executable, "-c", RACER, str(go), f"fact {i} of trial {trial}"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(WORKERS)]
        time.sleep(2.0)  # every racer has imported and waits at the line
        go.touch()
        for proc in racers:
            out, errors = proc.communicate(timeout=120)
            assert proc.returncode == 0, errors
        cards = [json.loads(p.read_text()) for p in (home / "agents").glob("*/agent.json")]
        assert [c["name"] for c in cards] == ["newcomer"], f"trial {trial}: {len(cards)} agents named newcomer"
        listed = subprocess.run([sys.executable, "-m", "arcana_cli.main", "memory", "list", "--agent", "newcomer",
                                 "--json"], env=env, capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert len(json.loads(listed.stdout)) == WORKERS  # positive control: every acknowledged memory is reached
