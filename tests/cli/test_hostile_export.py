"""What Arcana writes outside the home is private, and a Markdown export never loses a note.

Exports hold hidden and private memories: the JSONL file is 0600, a Markdown
folder 0700 with 0600 notes, whatever the umask. Memories whose note names
would collide, and ids holding ``/``, each get their own note, and the folder
imports back to the same set of ids.
"""

from __future__ import annotations

import json
import os

import pytest


@pytest.fixture
def loose_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _lines(tmp_path, records) -> str:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_a_jsonl_export_is_0600(cli, tmp_path, loose_umask, no_embedder):
    assert cli("remember", "a hidden thing", "--agent", "ada", "--visibility", "hidden").exit_code == 0
    out = tmp_path / "exports" / "ada.jsonl"
    assert cli("export", "--agent", "ada", "-o", str(out)).exit_code == 0
    assert out.stat().st_mode & 0o777 == 0o600
    assert out.parent.stat().st_mode & 0o777 == 0o700  # a folder the export made
    assert "a hidden thing" in out.read_text()  # positive control: the export is complete


def test_a_markdown_export_is_a_0700_folder_of_0600_notes(cli, tmp_path, loose_umask, no_embedder):
    for text in ("private plans", "the office wifi password"):
        assert cli("remember", text, "--agent", "ada", "--visibility", "private").exit_code == 0
    folder = tmp_path / "notes"
    assert cli("export", "--agent", "ada", "--format", "markdown", "-o", str(folder)).exit_code == 0
    assert folder.stat().st_mode & 0o777 == 0o700
    notes = list(folder.iterdir())
    assert len(notes) == 2
    assert all(n.stat().st_mode & 0o777 == 0o600 for n in notes)


def test_an_existing_folder_keeps_the_mode_its_owner_gave_it(cli, tmp_path, loose_umask, no_embedder):
    assert cli("remember", "shared notes", "--agent", "ada").exit_code == 0
    folder = tmp_path / "team-share"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    assert cli("export", "--agent", "ada", "--format", "markdown", "-o", str(folder)).exit_code == 0
    assert folder.stat().st_mode & 0o777 == 0o755
    assert all(n.stat().st_mode & 0o777 == 0o600 for n in folder.iterdir())


def test_colliding_note_names_and_ids_with_slashes_lose_no_note(cli, tmp_path, no_embedder):
    same_start = "The weekly report goes to the whole team on Friday morning, copy "
    records = [{"content": same_start + str(i), "id": f"batch-01-{i}"} for i in range(5)]
    records += [{"content": f"note number {i} about subject {i * 7}", "id": f"notes/{i}"} for i in range(50)]
    result = cli("remember", "--agent", "ada", "--from", _lines(tmp_path, records), "--no-reconcile")
    assert result.exit_code == 0, result.stderr
    folder = tmp_path / "notes"
    result = cli("export", "--agent", "ada", "--format", "markdown", "-o", str(folder))
    assert result.exit_code == 0, result.stderr
    assert "exported 55 memories" in result.stderr
    assert len(list(folder.glob("*.md"))) == 55
    assert not any(p.is_dir() for p in folder.iterdir())  # no id became a sub-folder
    assert cli("import", str(folder), "--agent", "copy", "--no-embed").exit_code == 0
    back = tmp_path / "back.jsonl"
    assert cli("export", "--agent", "copy", "-o", str(back)).exit_code == 0
    ids = {json.loads(line)["memory"]["id"] for line in back.read_text().splitlines()[1:]}
    assert ids == {r["id"] for r in records}
