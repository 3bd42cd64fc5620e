"""A vault and the Arcana home never overlap: a folder holding the home (or inside it) is no vault.

A vault at a folder that holds the home (ARCANA_HOME=/data/arcana, `vault add /data`) had every
index write its database, state and lock files into the folder, and `vault watch` saw those
writes as changes and indexed again, every half second, without end. Real processes, real folders.
"""

from __future__ import annotations

import json
import os
import subprocess

from runner import ARCANA, keyword_only, run_arcana

from arcana_cli import exit_codes
from memory.home import Home


def home_inside(tmp_path, *parts: str) -> Home:
    home = Home(tmp_path.joinpath(*parts))
    keyword_only(home)
    return home


def registered(home: Home) -> set[str]:
    return set(json.loads(home.config_path.read_text()).get("vaults", {}))


def test_vault_add_refuses_a_folder_holding_the_home_or_inside_it(tmp_path):
    notes = tmp_path / "data"
    home = home_inside(tmp_path, "data", "arcana")
    (notes / "one.md").write_text("the heron nests by the weir\n")
    (home.root / "inbox").mkdir()
    for folder in (notes, home.root, home.root / "inbox"):
        refused = run_arcana("vault", "add", str(folder), "--name", "v", home=home)
        assert refused.returncode == exit_codes.USAGE, refused.stderr
        [line] = refused.stderr.splitlines()
        assert line.startswith("arcana: error: ") and "Arcana home" in line and "nothing registered" in line
    assert registered(home) == set()
    # Controls in the same home: a folder beside it, and one holding it only in a dot-folder (~/.arcana in ~).
    beside = tmp_path / "beside"
    beside.mkdir()
    assert run_arcana("vault", "add", str(beside), "--name", "beside", home=home).returncode == 0
    dotted = Home(tmp_path / "user" / ".arcana")
    keyword_only(dotted)
    (tmp_path / "user" / "todo.md").write_text("buy rope\n")
    assert run_arcana("vault", "add", str(tmp_path / "user"), "--name", "user", home=dotted).returncode == 0
    indexed = run_arcana("vault", "index", "user", "--json", home=dotted)
    assert indexed.returncode == 0 and json.loads(indexed.stdout)["added"] == 1, indexed.stderr
    assert registered(home) == {"beside"}


def test_a_registered_vault_holding_the_home_is_neither_indexed_nor_watched(tmp_path):
    """A config written by hand (or a home moved under a vault since): index and watch refuse, exit 4,
    without a write into the folder; before, the watch indexed its own writes for ever."""
    notes = tmp_path / "data"
    home = home_inside(tmp_path, "data", "arcana")
    (notes / "one.md").write_text("the heron nests by the weir\n")
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "two.md").write_text("the otter fishes at dawn\n")
    config = json.loads(home.config_path.read_text())
    config["vaults"] = {"data": {"path": str(notes)}, "beside": {"path": str(beside)}}
    home.config_path.write_text(json.dumps(config))

    index = run_arcana("vault", "index", "data", home=home)
    assert index.returncode == exit_codes.CONFIG, index.stderr
    assert "holds the Arcana home" in index.stderr and "nothing was indexed" in index.stderr
    assert not home.vault_db("data").exists() and not (home.locks_dir / "vault-data.lock").exists()

    watch = subprocess.Popen([*ARCANA, "vault", "watch", "data", "--json", "--debounce", "50"], env=_env(home),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        out, err = watch.communicate(timeout=20)  # before: still running, one index line every ~0.6 s
    except subprocess.TimeoutExpired:
        watch.kill()
        out, err = watch.communicate()
        raise AssertionError(f"the watch over the home kept running; {len(out.splitlines())} index lines") from None
    assert watch.returncode == exit_codes.CONFIG and "holds the Arcana home" in err and out == ""
    assert "watching" not in err  # before: "watching data; Ctrl-C to stop", then the refusal
    assert not home.vault_db("data").exists() and not home.vault_state("data").exists()

    # Control in the same home: the vault beside it indexes and is searched; removal still forgets the bad one.
    assert run_arcana("vault", "index", "beside", home=home).returncode == 0
    found = run_arcana("vault", "search", "beside", "otter", "--json", home=home)
    assert [r["content"] for r in json.loads(found.stdout)["results"]] == ["two\n\nthe otter fishes at dawn"]
    assert run_arcana("vault", "remove", "data", "--yes", home=home).returncode == 0
    assert registered(home) == {"beside"}


def _env(home: Home) -> dict:
    return {**os.environ, "ARCANA_HOME": str(home.root)}


def test_a_registered_vault_inside_the_home_is_never_read(tmp_path):
    """A config edited by hand to point a vault inside the home: `vault search` and `recall` scanned
    the home's files as notes (index and watch refused them). Now search exits 4 saying so, and
    recall leaves that tier out with a notice, while a vault beside the home still answers."""
    home = home_inside(tmp_path, "arcana")
    inner = home.root / "inbox"
    inner.mkdir()
    (inner / "kept.md").write_text("the heron plan lives in the home\n")
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "two.md").write_text("the heron fishes at dawn\n")
    assert run_arcana("remember", "the weather was mild", "--agent", "ada", home=home).returncode == 0
    config = json.loads(home.config_path.read_text())
    config["vaults"] = {"inbox": {"path": str(inner), "agent": "ada"}, "beside": {"path": str(beside), "agent": "ada"}}
    home.config_path.write_text(json.dumps(config))

    search = run_arcana("vault", "search", "inbox", "heron", "--json", home=home)
    assert search.returncode == exit_codes.CONFIG and search.stdout == "", search.stderr
    [line] = search.stderr.splitlines()
    assert "is inside the Arcana home" in line and "nothing was read" in line and "vault remove inbox" in line
    recall = run_arcana("recall", "heron", "--agent", "ada", "--json", home=home)
    assert recall.returncode == 0, recall.stderr
    found = [r["content"] for r in json.loads(recall.stdout)["results"]]
    assert found == ["two\n\nthe heron fishes at dawn"]  # the vault beside: the control
    assert "vault:inbox degraded" in recall.stderr and "nothing was read" in recall.stderr
    beside_search = run_arcana("vault", "search", "beside", "heron", "--json", home=home)
    assert [r["content"] for r in json.loads(beside_search.stdout)["results"]] == ["two\n\nthe heron fishes at dawn"]
