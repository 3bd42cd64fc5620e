"""Markdown `import` reads a folder under the vault's rules: what it cannot safely read it skips and names.

A symlink to a file outside the folder, a FIFO named like a note (which hung
the import forever), a file name that is not UTF-8 (which aborted it), and a
note over `max_content_bytes` (which was stored) sit beside ordinary notes in
one exported folder; every ordinary note is imported. A JSONL import refuses a
memory over the limit the same way.
"""

from __future__ import annotations

from runner import run_arcana

import json
import os
import subprocess
import sys
from pathlib import Path

from arcana_cli import exit_codes

ARCANA = [sys.executable, "-m", "arcana_cli.main"]


def _arcana(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return run_arcana(*args, home=home, timeout=timeout)


def _contents(home: Path, agent: str) -> list[str]:
    done = _arcana(home, "memory", "list", "--agent", agent, "--json", "--limit", "1000")
    assert done.returncode == 0, done.stderr
    return [m["content"] for m in json.loads(done.stdout)]


def test_markdown_import_skips_and_names_what_it_cannot_safely_read(no_embedder, tmp_path):
    home = no_embedder.root
    for text in ("the deploy runs on Tuesdays", "the staging DB is pg-stage-2"):
        assert _arcana(home, "remember", text, "--agent", "ada").returncode == 0
    folder = tmp_path / "notes"
    assert _arcana(home, "export", "--agent", "ada", "--format", "markdown", "-o", str(folder)).returncode == 0
    secret = tmp_path / "outside-secret.md"
    secret.write_text("---\nid: stolen\n---\n\nthe root password is hunter2\n")
    (folder / "linked.md").symlink_to(secret)
    os.mkfifo(folder / "pipe.md")
    (folder / os.fsdecode(b"caf\xe9.md")).write_text("a name that is not UTF-8\n")
    assert _arcana(home, "config", "set", "memory.max_content_bytes", "4096").returncode == 0
    (folder / "huge.md").write_text("---\nid: huge-note\n---\n\n" + "words and more words " * 1000 + "\n")
    done = _arcana(home, "import", str(folder), "--agent", "copy", timeout=60)  # a FIFO read would hang here
    assert done.returncode == exit_codes.USAGE, done.stderr
    assert "Traceback" not in done.stderr
    named = {line.split(": ")[3] for line in done.stderr.splitlines() if line.count(": ") >= 4}
    assert {"linked.md", "pipe.md", "caf\\xe9.md", "huge.md"} <= named, done.stderr
    assert "symlink" in done.stderr and "not_a_regular_file" in done.stderr and "name_not_utf8" in done.stderr
    stored = _contents(home, "copy")
    assert sorted(stored) == ["the deploy runs on Tuesdays", "the staging DB is pg-stage-2"]  # positive control
    assert not any("hunter2" in text for text in stored)


def _import_with_a_line_changed(home, tmp_path, **changes):
    """Export ada's one small fact, add a copy of its line with ``changes``, import it all as 'copy'."""
    assert _arcana(home, "remember", "a small fact", "--agent", "ada").returncode == 0
    export = tmp_path / "ada.jsonl"
    assert _arcana(home, "export", "--agent", "ada", "-o", str(export)).returncode == 0
    head, row = export.read_text().splitlines()
    record = json.loads(row)
    extra = {**record, "memory": {**record["memory"], **changes}}
    export.write_text("\n".join([head, row, json.dumps(extra)]) + "\n")
    return _arcana(home, "import", str(export), "--agent", "copy", "--no-embed")


def test_a_jsonl_import_refuses_a_memory_over_the_limit(no_embedder, tmp_path):
    home = no_embedder.root
    done = _import_with_a_line_changed(home, tmp_path, id="big-one", content="q" * (3 << 20))
    assert done.returncode == exit_codes.USAGE
    assert "line 3: content is 3,145,728 bytes, over the limit" in done.stderr
    assert _contents(home, "copy") == ["a small fact"]


def test_an_access_count_no_store_can_hold_is_a_named_bad_line(no_embedder, tmp_path):
    """An access_count past SQLite's 64-bit integer ended the import in an OverflowError traceback."""
    home = no_embedder.root
    done = _import_with_a_line_changed(home, tmp_path, id="huge-count", access_count=10**23)
    assert done.returncode == exit_codes.USAGE, done.stderr
    assert "Traceback" not in done.stderr and "line 3: invalid access_count" in done.stderr
    assert _contents(home, "copy") == ["a small fact"]  # the good line is imported


def test_a_memory_at_the_largest_access_count_survives_being_recalled(no_embedder, tmp_path):
    """A line at the largest count (accepted) then recalled: SQLite stored the overflowing count as a float
    no read accepts, and from the next recall on the agent's whole private tier degraded, its memories gone."""
    home = no_embedder.root
    done = _import_with_a_line_changed(home, tmp_path, id="max-count", content="a much read fact", access_count=2**63 - 1)
    assert done.returncode == 0, done.stderr
    for _ in range(2):
        recalled = _arcana(home, "recall", "fact", "--agent", "copy", "--json")
        assert recalled.returncode == 0, recalled.stderr
        result = json.loads(recalled.stdout)
        assert result["degraded"] == [], result["degraded"]
        assert sorted(r["content"] for r in result["results"]) == ["a much read fact", "a small fact"]


def test_tags_over_the_memory_limit_are_refused_on_every_way_in(no_embedder, tmp_path):
    """A limit on a memory's text that its tags could pass bounds nothing (tags leave with it on every
    recall): an `import` record, `remember --tag` and a `remember --from` line over the configured
    limit together are refused, one line each, and every other memory is stored."""
    home = no_embedder.root
    assert _arcana(home, "config", "set", "memory.max_content_bytes", "4096").returncode == 0
    done = _import_with_a_line_changed(home, tmp_path, id="tagged", tags=["w" * 5000])
    assert done.returncode == exit_codes.USAGE and "line 3: tags are 5,000 bytes together" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert _contents(home, "copy") == ["a small fact"]  # control: the good record is imported

    done = _arcana(home, "remember", "a tagged fact", "--agent", "eve", "--tag", "t" * 5000)
    assert done.returncode == exit_codes.USAGE and "tags are 5,000 bytes together" in done.stderr, done.stderr
    assert _arcana(home, "remember", "a lightly tagged fact", "--agent", "eve", "--tag", "ok").returncode == 0
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"content": "line one", "tags": ["y" * 3000, "z" * 3000]}) + "\n"
                     + json.dumps({"content": "line two", "tags": ["fine"]}) + "\n")
    done = _arcana(home, "remember", "--from", str(lines), "--agent", "eve")
    assert done.returncode == exit_codes.USAGE and "line 1: 'tags' are 6,000 bytes together" in done.stderr, done.stderr
    assert sorted(_contents(home, "eve")) == ["a lightly tagged fact", "line two"]
