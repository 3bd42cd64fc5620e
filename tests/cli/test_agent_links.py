"""Issue 21 item 5: config.json names agents by id (pool members, vault attachments).

A rename keeps an agent's vault and pools; a delete takes them away, so a new
agent under the old name inherits nothing; a hand-written name still works.
"""

from __future__ import annotations

import json


def recalled(cli, agent: str, query: str) -> list[str]:
    result = cli("recall", query, "--agent", agent, "--mode", "keyword", "--json")
    assert result.exit_code == 0, result.output
    return [r["content"] for r in json.loads(result.stdout)["results"]]


def config(home) -> dict:
    return json.loads(home.config_path.read_text())


def indexed_vault(cli, tmp_path, *extra: str) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "boat.md").write_text("# Boat\nThe sailboat is moored at pier seven.\n")
    assert cli("vault", "add", str(notes), "--name", "notes", *extra).exit_code == 0
    assert cli("vault", "index", "notes", "--keyword-only").exit_code == 0


def test_a_renamed_agent_keeps_its_vault_and_a_new_namesake_gets_none(cli, no_embedder, tmp_path):
    assert cli("remember", "The user likes green tea", "--agent", "ada").exit_code == 0
    assert cli("remember", "The user likes rowing", "--agent", "bob").exit_code == 0
    indexed_vault(cli, tmp_path, "--agent", "ada")
    ada_id = json.loads(cli("agent", "show", "ada", "--json").stdout)["id"]
    assert config(no_embedder)["vaults"]["notes"]["agent"] == ada_id
    assert any("pier seven" in c for c in recalled(cli, "ada", "sailboat pier"))
    assert not any("pier seven" in c for c in recalled(cli, "bob", "sailboat pier"))  # not bob's vault

    assert cli("agent", "rename", "ada", "ada2").exit_code == 0
    assert any("pier seven" in c for c in recalled(cli, "ada2", "sailboat pier"))
    listed = json.loads(cli("vault", "list", "--json").stdout)[0]
    assert (listed["agent"], listed["agent_id"]) == ("ada2", ada_id)

    assert cli("agent", "delete", "ada2", "--yes").exit_code == 0
    assert config(no_embedder)["vaults"]["notes"].get("agent") is None
    assert cli("remember", "The user likes coffee", "--agent", "ada2").exit_code == 0
    fresh = recalled(cli, "ada2", "sailboat pier coffee")
    assert "The user likes coffee" in fresh and not any("pier seven" in c for c in fresh)


def test_a_deleted_agent_leaves_no_pool_membership_behind(cli, no_embedder):
    assert cli("pool", "create", "team").exit_code == 0
    for agent in ("alice", "bob"):
        assert cli("agent", "join", agent, "team").exit_code == 0
    bob_id = json.loads(cli("agent", "show", "bob", "--json").stdout)["id"]
    assert bob_id in config(no_embedder)["pools"]["team"]["members"]

    assert cli("agent", "delete", "bob", "--yes").exit_code == 0
    members = config(no_embedder)["pools"]["team"]["members"]
    assert bob_id not in members and len(members) == 1  # alice stays
    assert json.loads(cli("agent", "show", "alice", "--json").stdout)["pools"] == ["team"]
    assert cli("remember", "Rowing on Sunday", "--agent", "bob").exit_code == 0
    assert json.loads(cli("agent", "show", "bob", "--json").stdout)["pools"] == []


def test_a_hand_written_agent_name_still_attaches_and_becomes_the_id_on_rename(cli, no_embedder, tmp_path):
    assert cli("remember", "The user likes green tea", "--agent", "ada").exit_code == 0
    assert cli("pool", "create", "team").exit_code == 0
    indexed_vault(cli, tmp_path, "--agent", "ada")
    raw = config(no_embedder)
    raw["vaults"]["notes"]["agent"] = "ada"  # as a user (or an older Arcana) wrote it
    raw["pools"]["team"]["members"] = ["ada"]
    no_embedder.config_path.write_text(json.dumps(raw))
    assert any("pier seven" in c for c in recalled(cli, "ada", "sailboat pier"))
    assert json.loads(cli("agent", "show", "ada", "--json").stdout)["pools"] == ["team"]

    assert cli("agent", "rename", "ada", "ada3").exit_code == 0
    ada_id = json.loads(cli("agent", "show", "ada3", "--json").stdout)["id"]
    after = config(no_embedder)
    assert after["vaults"]["notes"]["agent"] == ada_id and after["pools"]["team"]["members"] == [ada_id]
    assert any("pier seven" in c for c in recalled(cli, "ada3", "sailboat pier"))
    assert json.loads(cli("agent", "show", "ada3", "--json").stdout)["pools"] == ["team"]


def test_a_removed_pool_detaches_its_vaults_and_a_new_namesake_gets_none(cli, no_embedder, tmp_path):
    """A vault names its pool by name: left attached, it joined a new pool of the same name."""
    for pool, agent in (("team", "ada"), ("crew", "bob")):
        assert cli("pool", "create", pool).exit_code == 0
        assert cli("agent", "join", agent, pool).exit_code == 0
    indexed_vault(cli, tmp_path, "--pool", "team")
    crew_notes = tmp_path / "crew"
    crew_notes.mkdir()
    (crew_notes / "oar.md").write_text("# Oar\nThe spare sailboat oar hangs in shed nine.\n")
    assert cli("vault", "add", str(crew_notes), "--name", "crewnotes", "--pool", "crew").exit_code == 0
    assert cli("vault", "index", "crewnotes", "--keyword-only").exit_code == 0
    assert any("pier seven" in c for c in recalled(cli, "ada", "sailboat pier"))

    removed = cli("pool", "remove", "team", "--yes", "--json")
    assert removed.exit_code == 0, removed.output
    assert json.loads(removed.stdout)["detached_vaults"] == ["notes"]
    assert config(no_embedder)["vaults"]["notes"].get("pool") is None  # still registered, attached to nothing
    assert cli("pool", "create", "team").exit_code == 0
    assert cli("agent", "join", "cara", "team").exit_code == 0
    assert cli("remember", "The sailboat needs new paint", "--agent", "cara", "--pool", "team").exit_code == 0
    fresh = recalled(cli, "cara", "sailboat pier")
    assert "The sailboat needs new paint" in fresh and not any("pier seven" in c for c in fresh)
    assert any("shed nine" in c for c in recalled(cli, "bob", "sailboat oar"))  # the other pool's vault stays
    assert json.loads(cli("pool", "show", "crew", "--json").stdout)["vaults"] == ["crewnotes"]


def test_a_trash_folder_of_the_same_name_and_second_is_never_reused(cli, no_embedder):
    """The trash names a pool by name and second: a pool removed, made again and removed within one
    second failed on the first one's folder ('file exists', exit 1), and an agent deleted so failed
    ('directory not empty') after its pool memberships were dropped. Here the names those moves would
    take for the next half minute are taken already; each lands beside them, the earlier ones intact."""
    import time

    assert cli("pool", "create", "team").exit_code == 0
    assert cli("agent", "join", "ada", "team").exit_code == 0
    assert cli("remember", "Standup is at nine", "--agent", "ada", "--pool", "team").exit_code == 0
    ada_id = json.loads(cli("agent", "show", "ada", "--json").stdout)["id"]
    now = int(time.time())
    for stem in ("pool-team", f"agent-ada-{ada_id}"):
        for second in range(now - 1, now + 30):
            earlier = no_embedder.trash_dir / f"{stem}-{second}"
            earlier.mkdir(parents=True)
            (earlier / "earlier.txt").write_text("an earlier removal")
    removed = cli("pool", "remove", "team", "--yes", "--json")
    assert removed.exit_code == 0, removed.output
    moved = json.loads(removed.stdout)["moved_to"]
    assert sorted(p.name for p in (no_embedder.trash_dir / moved.rsplit("/", 1)[-1]).iterdir()) == ["team.db"]
    deleted = cli("agent", "delete", "ada", "--yes", "--json")
    assert deleted.exit_code == 0, deleted.output
    assert (no_embedder.trash_dir / json.loads(deleted.stdout)["moved_to"].rsplit("/", 1)[-1] / "agent.json").is_file()
    assert not no_embedder.agent_dir(ada_id).exists()
    earlier = [p for p in no_embedder.trash_dir.iterdir() if (p / "earlier.txt").exists()]
    assert len(earlier) == 62 and all(sorted(c.name for c in p.iterdir()) == ["earlier.txt"] for p in earlier)
