"""A Markdown export made into a vault withholds what the operator withheld.

`arcana export --format markdown` writes every memory, hidden and forgotten ones
too (their frontmatter says so), into a folder the manual calls "a vault to read
and edit". Registered as a vault, that folder answered `vault search`, and an
agent's recall through the attached vault, with the hidden memory's words: the
note parser read type, importance and pin from the properties but not
visibility or archived. Such a note is now skipped ("withheld") by the folder
scan and the index alike, and an index built before is read again.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3

from mcp_client import seed

from memory.home import Home
from memory.types import ConfidenceSource


def out(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def contents(hits: list[dict]) -> str:
    return "\n".join(hit["content"] for hit in hits)


def test_hidden_and_forgotten_memories_exported_to_a_vault_stay_withheld(cli, no_embedder, tmp_path):
    ids = {}
    for key, text in (("hidden", "The alarm disarm code is walrus3391"), ("forgotten", "The safe opens with walrus8120"),
                      ("visible", "The alarm panel hangs by the walrus poster"), ("later", "The walrus key hangs in the hall")):
        ids[key] = out(cli("remember", text, "--agent", "hal", "--json"))["id"]
    assert cli("memory", "set", ids["hidden"], "--agent", "hal", "--visibility", "hidden").exit_code == 0
    assert cli("memory", "forget", ids["forgotten"], "--agent", "hal").exit_code == 0
    folder = tmp_path / "hal-notes"
    assert cli("export", "--format", "markdown", "--agent", "hal", "--output", str(folder)).exit_code == 0
    assert len(list(folder.glob("*.md"))) == 4  # the export itself stays whole
    assert cli("agent", "create", "bob").exit_code == 0
    assert cli("vault", "add", str(folder), "--name", "hal", "--agent", "bob").exit_code == 0

    def answers() -> list[str]:
        searched = contents(out(cli("vault", "search", "hal", "walrus", "--json"))["results"])
        recalled = contents(out(cli("recall", "walrus", "--agent", "bob", "--json"))["results"])
        return [searched, recalled]

    for phase in ("folder", "index"):
        if phase == "index":
            index = out(cli("vault", "index", "hal", "--json"))
            assert index["added"] == 2 and index["skipped"] == {"withheld": 2}, index
        for answer in answers():
            assert "walrus3391" not in answer and "walrus8120" not in answer, phase
            assert "by the walrus poster" in answer and "walrus key" in answer, phase  # control: visible notes
    check = out(cli("vault", "check", "hal", "--json"))
    assert sorted(s["reason"] for s in check["skipped"]) == ["withheld", "withheld"]

    # An index built before notes were read so (no notes_format) may hold a note withheld now whose file
    # it saw unchanged (same size and time): its next index reads every note again.
    (note,) = [n for n in folder.glob("*.md") if "walrus key" in n.read_text()]
    stat = note.stat()
    note.write_text(note.read_text().replace("visibility: visible", "visibility: private"))
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert note.stat().st_size == stat.st_size
    with sqlite3.connect(Home.resolve().root / "vaults" / "hal.db") as raw:
        raw.execute("DELETE FROM vault_meta WHERE key = 'notes_format'")
    assert out(cli("vault", "index", "hal", "--json"))["removed"] == 1
    for answer in answers():
        assert "walrus key" not in answer and "by the walrus poster" in answer


def test_a_re_export_takes_out_purged_memories_notes_and_names_no_hidden_words(cli, no_embedder, tmp_path):
    """A memory purged after a Markdown export kept its note through every later export into the folder,
    and a vault made of the folder answered with it; a hidden memory's note was named by its first words,
    so listing the folder showed them. The purged memory's note goes now (named on stderr), a hidden or
    private one is `memory-<id>.md`; another store's notes and a person's own stay."""
    ids = {}
    for key, text in (("purged", "The vault combination is otter5521"), ("hidden", "The backup passphrase is otter7730"),
                      ("visible", "The otter poster hangs in the hall")):
        ids[key] = out(cli("remember", text, "--agent", "hal", "--json"))["id"]
    other = out(cli("remember", "The otter pond freezes in January", "--agent", "bob", "--json"))["id"]
    folder = tmp_path / "notes"
    assert cli("export", "--format", "markdown", "--agent", "bob", "--output", str(folder)).exit_code == 0
    assert cli("export", "--format", "markdown", "--agent", "hal", "--output", str(folder)).exit_code == 0
    (folder / "mine.md").write_text("otter facts of my own\n")
    assert cli("memory", "purge", ids["purged"], "--agent", "hal", "--yes").exit_code == 0
    assert cli("memory", "set", ids["hidden"], "--agent", "hal", "--visibility", "hidden").exit_code == 0
    done = cli("export", "--format", "markdown", "--agent", "hal", "--output", str(folder), "--yes", "--json")
    names = sorted(p.name for p in folder.glob("*.md"))
    assert not [n for n in names if ids["purged"] in n]
    assert out(done)["notes_removed"] == 1 and "removed 1 note(s) of memories deleted or purged" in done.stderr
    assert f"memory-{ids['hidden']}.md" in names and not [n for n in names if "passphrase" in n]
    # Controls: the visible memory's note keeps its words; bob's note and the person's own stay.
    assert f"the-otter-poster-hangs-in-the-hall-{ids['visible']}.md" in names
    assert f"the-otter-pond-freezes-in-january-{other}.md" in names and "mine.md" in names
    assert cli("agent", "create", "cal").exit_code == 0
    assert cli("vault", "add", str(folder), "--name", "notes", "--agent", "cal").exit_code == 0
    found = contents(out(cli("vault", "search", "notes", "otter", "--json"))["results"])
    assert "otter5521" not in found and "otter7730" not in found
    assert "otter poster" in found and "otter pond" in found


def test_a_superseded_version_exported_to_a_vault_is_not_current_there(cli, no_embedder, tmp_path):
    """The export writes a replaced version with its `superseded_by`, and a vault made of the folder
    answered "where do I live" with the old city beside the new one: recall sees current versions
    only, and a vault read must too. A note whose YAML is unreadable still withholds so."""
    old = out(cli("remember", "I live in Berlin near the heron lake.", "--agent", "ada", "--json"))["id"]
    new = out(cli("remember", "I moved to Lisbon by the heron river.", "--agent", "ada", "--json"))
    assert new["supersedes"] == [old], new
    folder = tmp_path / "ada-notes"
    assert cli("export", "--format", "markdown", "--agent", "ada", "--output", str(folder)).exit_code == 0
    broken = folder / "broken.md"  # the export's properties with a YAML typo below them
    broken.write_text(f"---\nsuperseded_by: {new['id']}\nvalid_to: 2026-01-01T00:00:00Z\ntags: [a\n---\nI live in Porto by the heron bay.\n")
    record = folder / "adr-7.md"  # a person's decision record naming its successor: their own, and read
    record.write_text("---\nstatus: superseded\nsuperseded_by: ADR-12\n---\nWe log to the heron syslog box.\n")
    assert cli("agent", "create", "bob").exit_code == 0
    assert cli("vault", "add", str(folder), "--name", "ada", "--agent", "bob").exit_code == 0
    for phase in ("folder", "index"):
        if phase == "index":
            index = out(cli("vault", "index", "ada", "--json"))
            assert index["added"] == 2 and index["skipped"] == {"withheld": 2}, index
        searched = contents(out(cli("vault", "search", "ada", "heron", "--json"))["results"])
        recalled = contents(out(cli("recall", "heron", "--agent", "bob", "--json"))["results"])
        for answer in (searched, recalled):
            assert "Berlin" not in answer and "Porto" not in answer, phase
            assert "Lisbon by the heron river" in answer, phase  # control: the current version answers
            assert "heron syslog box" in answer, phase  # control: superseded_by alone is the person's own


def test_an_agents_claim_exported_to_a_vault_keeps_its_source_and_confidence(cli, no_embedder, tmp_path):
    """The export writes an agent's claim with `confidence_source: agent` and its capped confidence; a
    vault made of the folder read every note as the user's (`imported`, 1.00), so `recall
    --min-confidence` found the claim there and not in the store, and the context put before a model
    called it certain."""
    asyncio.run(seed(no_embedder, "ada", [
        {"content": "The user owns a heron kite"},
        {"content": "The user probably flies the heron kite on Sundays", "confidence_source": ConfidenceSource.AGENT,
         "confidence": 0.7},
    ]))
    folder = tmp_path / "ada-notes"
    assert cli("export", "--format", "markdown", "--agent", "ada", "--output", str(folder)).exit_code == 0
    assert cli("agent", "create", "bob").exit_code == 0
    assert cli("vault", "add", str(folder), "--name", "ada", "--agent", "bob").exit_code == 0
    for phase in ("folder", "index"):
        if phase == "index":
            assert cli("vault", "index", "ada").exit_code == 0
        for agent in ("ada", "bob"):  # the store itself, and the vault made of its export
            sure = contents(out(cli("recall", "heron kite", "--agent", agent, "--min-confidence", "0.8", "--json"))["results"])
            assert "owns a heron kite" in sure and "Sundays" not in sure, (phase, agent)  # control: the user's fact
        context = out(cli("context", "heron kite", "--agent", "bob", "--json"))["context"]
        (line,) = [line for line in context.splitlines() if "Sundays" in line]
        assert "agent 0.70" in line, (phase, line)
