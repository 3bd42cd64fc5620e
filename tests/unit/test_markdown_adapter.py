"""MarkdownFolderAdapter over real folders the tests generate, hostile ones included."""

from __future__ import annotations

import os
import subprocess
import tempfile
import unicodedata
import uuid
from pathlib import Path

import pytest

from memory.adapters.markdown import MarkdownFolderAdapter
from memory.errors import MemoryWriteError
from memory.markdown.notes import (
    BINARY,
    HIDDEN,
    IGNORED,
    NOTE_NAMESPACE,
    SYMLINK,
    TOO_LARGE,
    UNREADABLE,
    VANISHED,
    NoteIdentity,
    hashtags,
    mask_code,
    note_id,
    read_note,
    split_frontmatter,
    walk_folder,
)
from memory.types import MemoryEntry, MemoryQuery, MemoryType, RetrievalMode


def adapter(root, **kwargs) -> MarkdownFolderAdapter:
    return MarkdownFolderAdapter(root, "agent-1", **kwargs)


def by_path(scan):
    return {n.rel_path: n for n in scan.notes}


def test_id_is_uuid5_of_the_relative_posix_path_under_the_documented_namespace():
    assert NOTE_NAMESPACE == uuid.UUID("6f1d3c52-8a47-5b0e-9a41-0a7c5e2b9d13")
    assert note_id("sub/My Note.md") == str(uuid.uuid5(NOTE_NAMESPACE, "sub/My Note.md"))
    assert note_id("a.md") != note_id("A.md")


def test_frontmatter_maps_fields_and_hashtags_fold_into_tags(make_vault):
    root = make_vault(
        {
            "Plan.md": "---\ntype: procedural\nimportance: 0.9\npinned: true\ntags: [work, q3]\naliases: [The Plan]\n---\n"
            "# Heading is not a tag\nShip it #release and #area/infra/db.\n`#incode` and\n```\n#fenced\n```\n"
            "url http://x.org/#frag, issue #123\n",
        }
    )
    note = adapter(root).scan_sync().notes[0]
    entry = note.entry
    assert entry.type is MemoryType.PROCEDURAL
    assert entry.importance == 0.9 and entry.pinned is True
    assert entry.tags == ["work", "q3", "release", "area/infra/db"]
    assert note.aliases == ("The Plan",)
    assert not note.frontmatter_problem
    assert entry.id == note_id("Plan.md")
    assert entry.content.startswith("Plan\n\n# Heading")
    assert "importance" not in entry.content  # the frontmatter is not content


@pytest.mark.parametrize(
    "block",
    [
        "- just\n- a list\n",  # not a mapping
        "key: [unclosed\n",  # invalid YAML
        "'a scalar'\n",
    ],
)
def test_malformed_frontmatter_never_fails_the_scan_and_is_counted(make_vault, block):
    root = make_vault({"bad.md": f"---\n{block}---\nbody words here\n", "good.md": "fine"})
    scan = adapter(root).scan_sync()
    notes = by_path(scan)
    assert set(notes) == {"bad.md", "good.md"}  # positive control: the good note is there too
    assert notes["bad.md"].entry.content == f"bad\n\n---\n{block}---\nbody words here"  # no properties: all text
    assert scan.frontmatter_problems == ["bad.md"]


def test_a_leading_block_that_is_no_yaml_mapping_stays_searchable_text(make_vault):
    """A note opening with a `---` rule, prose, and another rule lost that prose from every search
    (the block was dropped as bad frontmatter); a real properties block is still not text."""
    root = make_vault({
        "Minutes.md": "---\nThe kickoff went well, said Ana.\n---\nAction items follow.",
        "Props.md": "---\ntags: [work]\n---\nThe kickoff agenda.",
    })
    hits = adapter(root).scan_sync()
    notes = by_path(hits)
    assert "The kickoff went well, said Ana." in notes["Minutes.md"].entry.content
    assert notes["Props.md"].entry.content == "Props\n\nThe kickoff agenda." and notes["Props.md"].entry.tags == ["work"]
    assert hits.frontmatter_problems == ["Minutes.md"]


def test_a_withholding_property_in_frontmatter_yaml_cannot_read_still_withholds(make_vault):
    """`visibility: hidden` with a YAML typo on another line made the note public, its text searchable."""
    root = make_vault({
        "Hidden.md": "---\nvisibility: hidden\ntags: [a\n---\nthe safe code is 4242",
        "Archived.md": "---\narchived: true\nimportance: [\n---\nthe safe code is 4242",
        "Public.md": "---\nvisibility: public\ntags: [a\n---\nthe safe code is 4242",  # control
        "Nested.md": "---\nnote:\n  visibility: hidden\ntags: [a\n---\nthe safe code is 4242",  # control
    })
    scan = adapter(root).scan_sync()
    assert sorted(by_path(scan)) == ["Nested.md", "Public.md"]
    assert ("Archived.md", "withheld") in scan.skipped and ("Hidden.md", "withheld") in scan.skipped


def test_invalid_frontmatter_values_are_ignored_and_counted(make_vault):
    root = make_vault({"n.md": "---\nimportance: 7\ntype: nonsense\npinned: yes please\n---\nx"})
    note = adapter(root).scan_sync().notes[0]
    assert note.entry.importance == 0.5 and note.entry.type is MemoryType.SEMANTIC and not note.entry.pinned
    assert note.frontmatter_problem


def test_split_frontmatter_leaves_an_unterminated_block_as_text():
    meta, body, problem = split_frontmatter("---\nnot closed\nstill text")
    assert meta == {} and body.startswith("---") and not problem


def test_mask_code_keeps_length_and_lines():
    text = "a `x` b\n```\ncode [[L]]\n```\nafter"
    masked = mask_code(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    assert "[[L]]" not in masked and "after" in masked
    assert hashtags("# Title\n#tag and #9 and a#b") == ["tag"]


def test_a_stray_backtick_never_hides_the_links_of_later_paragraphs():
    """A code span cannot cross a blank line (it is inline, within one paragraph): two stray backticks
    paragraphs apart are literal, and the link and tag between them are real, as Obsidian shows them."""
    text = "Press the ` key.\n\nSee [[Quokka]] #zoo.\n\nThen ` again."
    assert "[[Quokka]]" in mask_code(text) and hashtags(mask_code(text)) == ["zoo"]
    wrapped = "a `code [[Hidden]]\nstill code` and [[Shown]]"  # control: a span wrapping one line still masks
    masked = mask_code(wrapped)
    assert "[[Hidden]]" not in masked and "[[Shown]]" in masked and len(masked) == len(wrapped)


def test_a_line_of_inline_triple_backtick_code_is_not_a_fence_left_open():
    """A backtick fence's info string cannot hold a backtick: "```npm test``` then [[A]]" is inline
    code, and the links after it (on that line and below) are real."""
    text = "```npm test``` then [[A]]\n\nSee [[B]] #tag."
    masked = mask_code(text)
    assert "[[A]]" in masked and "[[B]]" in masked and "npm" not in masked and hashtags(masked) == ["tag"]
    fenced = "```js title\ncode [[Hidden]]\n```\n[[After]]"  # control: a fence with an info string still masks
    assert "[[Hidden]]" not in mask_code(fenced) and "[[After]]" in mask_code(fenced)


def test_obsidian_comments_hide_links_and_tags():
    text = "see [[Shown]] #kept %%draft: [[Hidden]] #gone%% and\n%%\n[[AlsoHidden]]\n%%\n[[Last]]"
    masked = mask_code(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    assert "[[Shown]]" in masked and "[[Last]]" in masked  # control: links outside comments stay
    assert "[[Hidden]]" not in masked and "[[AlsoHidden]]" not in masked
    assert hashtags(masked) == ["kept"]
    assert "[[Tail]]" not in mask_code("text %% unclosed comment [[Tail]]")


def test_hostile_vault_skips_and_counts_everything_odd(make_vault, tmp_path):
    root = make_vault(
        {
            "ok.md": "fine note",
            "empty.md": "",
            "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00 binary",
            "latin1.md": "caf\xe9 cr\xe8me".encode("latin-1"),
            "huge.md": "x" * 2048,
            ".hidden.md": "dotfile",
            ".obsidian/workspace.md": "config",
            ".trash/old.md": "trashed",
            "Archive/old.md": "ignored by glob",
            "notes/Ünïcode name with spaces.md": "unicode body",
            "image.png": b"\x89PNG",
        }
    )
    (root / "link.md").symlink_to(root / "ok.md")
    (root / "loop").symlink_to(root)  # a symlink loop: never followed
    scan = adapter(root, max_file_bytes=1024, ignore_globs=["Archive"]).scan_sync()
    notes = by_path(scan)
    assert set(notes) == {"ok.md", "empty.md", "latin1.md", "notes/Ünïcode name with spaces.md"}
    assert notes["empty.md"].entry.content == "empty"  # an empty note is still a note (and a link target)
    assert notes["latin1.md"].entry.content == "latin1\n\ncaf\ufffd cr\ufffdme"
    skipped = dict(scan.skipped)
    assert skipped == {
        ".hidden.md": HIDDEN,
        ".obsidian": HIDDEN,
        ".trash": HIDDEN,
        "Archive": IGNORED,
        "binary.md": BINARY,
        "huge.md": TOO_LARGE,
        "link.md": SYMLINK,
        "loop": SYMLINK,
    }
    assert scan.attachments == ["image.png"]


def test_file_deleted_between_walk_and_read_is_skipped_as_vanished(make_vault):
    root = make_vault({"a.md": "a", "b.md": "b"})
    walk = walk_folder(root)
    (root / "a.md").unlink()
    who = NoteIdentity("agent")
    results = {info.rel_path: read_note(root, info, who, 1 << 20) for info in walk.notes}
    assert results["a.md"] == VANISHED
    assert results["b.md"].entry.content == "b\n\nb"


def _scan_as_nobody(root: Path) -> dict:
    """Root reads everything, so drop to nobody's effective ids for the scan (reversible as root)."""
    os.setegid(65534)
    os.seteuid(65534)
    try:
        scan = adapter(root).scan_sync()
    finally:
        os.seteuid(0)
        os.setegid(0)
    return {"notes": [n.rel_path for n in scan.notes], "skipped": scan.skipped}


def test_unreadable_files_and_dirs_are_skipped_and_counted():
    base = Path(tempfile.mkdtemp(prefix="arcana-unreadable-"))
    try:
        os.chmod(base, 0o755)
        (base / "ok.md").write_text("readable")
        (base / "secret.md").write_text("no")
        (base / "locked").mkdir()
        (base / "locked" / "inner.md").write_text("no")
        for path in (base / "ok.md",):
            os.chmod(path, 0o644)
        os.chmod(base / "secret.md", 0o000)
        os.chmod(base / "locked", 0o000)
        if os.geteuid() == 0:
            found = _scan_as_nobody(base)
        else:
            scan = adapter(base).scan_sync()
            found = {"notes": [n.rel_path for n in scan.notes], "skipped": scan.skipped}
        assert found["notes"] == ["ok.md"]
        assert sorted(map(tuple, found["skipped"])) == [("locked", UNREADABLE), ("secret.md", UNREADABLE)]
    finally:
        os.chmod(base / "locked", 0o755)
        subprocess.run(["rm", "-rf", str(base)], check=False)


async def test_search_ranks_pinned_then_relevance_then_importance_then_recency_then_path(make_vault):
    root = make_vault(
        {
            "a.md": "---\nimportance: 0.2\n---\nmetric units",
            "b.md": "---\nimportance: 0.8\n---\nmetric units",
            "c.md": "---\npinned: true\nimportance: 0.1\n---\nunits only",
            "d.md": "metric units metric units and units",
            "e.md": "nothing relevant",
            "f.md": "---\nimportance: 0.8\n---\nmetric units",
        }
    )
    os.utime(root / "f.md", ns=(10**18, 10**18))  # f newer than b: recency breaks their tie
    os.utime(root / "b.md", ns=(10**17, 10**17))
    results = await adapter(root).search(MemoryQuery(text="metric units", limit=10))
    order = [r.content.split("\n")[0] for r in results]
    assert order[0] == "c"  # pinned first even with lower relevance
    assert order[1] == "d"  # most relevant
    assert order[2:] == ["f", "b", "a"]
    assert "e" not in order
    assert all(r.matched_by == ["keyword"] for r in results)


async def test_text_written_in_nfd_is_found_by_the_words_typed_in_nfc(make_vault):
    """macOS may write a note's name and text decomposed (e + U+0301); a typed query is NFC."""
    root = make_vault({
        unicodedata.normalize("NFD", "Pâtisserie.md"): unicodedata.normalize("NFD", "Le pâtissier écrit: crème"),
        "Plain.md": "Une crème plain note",  # the control: NFC on disk, found either way
    })
    folder = adapter(root)
    for query, titles in (("pâtissier", ["Pâtisserie"]), ("pâtisserie", ["Pâtisserie"]), ("crème", ["Plain", "Pâtisserie"])):
        found = await folder.search(MemoryQuery(text=query, retrieval_mode=RetrievalMode.keyword))
        assert sorted(r.content.split("\n")[0] for r in found) == titles, query


async def test_ties_break_by_path(make_vault):
    root = make_vault({"z.md": "same words", "m.md": "same words", "a.md": "same words"})
    for name in ("z.md", "m.md", "a.md"):
        os.utime(root / name, ns=(10**18, 10**18))
    results = await adapter(root).search(MemoryQuery(text="words"))
    assert [r.content[0] for r in results] == ["a", "m", "z"]


async def test_every_mode_is_served_by_keyword_with_one_notice(make_vault):
    root = make_vault({"n.md": "metric units"})
    seen: list[str] = []
    folder = adapter(root, on_degraded=seen.append)
    keyword = await folder.search(MemoryQuery(text="units", retrieval_mode=RetrievalMode.keyword))
    assert seen == []  # positive control: keyword mode is not degraded
    for mode in (RetrievalMode.semantic, RetrievalMode.hybrid):
        assert [e.id for e in await folder.search(MemoryQuery(text="units", retrieval_mode=mode))] == [keyword[0].id]
    assert len(seen) == 2 and all("\n" not in s and "keyword" in s for s in seen)


async def test_filters_types_and_tags(make_vault):
    root = make_vault({"a.md": "---\ntype: preference\n---\nunits #x", "b.md": "units #y"})
    folder = adapter(root)
    only = await folder.search(MemoryQuery(text="units", types=[MemoryType.PREFERENCE]))
    assert [e.content[0] for e in only] == ["a"]
    tagged = await folder.search(MemoryQuery(text="units", tags=["y"]))
    assert [e.content[0] for e in tagged] == ["b"]


async def test_cache_reparses_only_changed_files(make_vault):
    root = make_vault({"a.md": "alpha", "b.md": "beta"})
    folder = adapter(root)
    first = by_path(folder.scan_sync())
    (root / "b.md").write_text("beta changed and longer")
    second = by_path(folder.scan_sync())
    assert second["a.md"] is first["a.md"]  # same parsed object: not re-read
    assert second["b.md"] is not first["b.md"] and "changed" in second["b.md"].entry.content
    (root / "a.md").unlink()
    (root / "c.md").write_text("gamma")
    third = by_path(folder.scan_sync())
    assert set(third) == {"b.md", "c.md"}
    assert [e.content.split()[0] for e in await folder.search(MemoryQuery(text="gamma"))] == ["c"]


async def test_write_raises_and_reads_never_modify_the_folder(make_vault, tree_digest):
    root = make_vault({"a.md": "---\ntags: [t]\n---\nalpha [[b]]", "b.md": "beta"})
    before = tree_digest(root)
    folder = adapter(root)
    with pytest.raises(MemoryWriteError):
        await folder.write(MemoryEntry(agent_id="x", content="nope"))
    await folder.search(MemoryQuery(text="alpha", retrieval_mode=RetrievalMode.hybrid))
    notes = await folder.notes()
    assert {n.rel_path for n in notes} == {"a.md", "b.md"}
    assert (await folder.get(note_id("b.md"))).content == "b\n\nbeta"
    assert await folder.get(note_id("missing.md")) is None
    assert tree_digest(root) == before


async def test_health_check_is_cheap_and_never_raises(make_vault, tmp_path):
    root = make_vault({"a.md": "a"})
    assert (await adapter(root).health_check()).healthy
    missing = await adapter(tmp_path / "nope").health_check()
    assert not missing.healthy and "nope" in missing.message
    (tmp_path / "file").write_text("x")
    assert not (await adapter(tmp_path / "file").health_check()).healthy
