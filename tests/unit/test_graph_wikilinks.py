"""Wikilink parsing and resolution, and the extractor writing real edges into a real store."""

from __future__ import annotations

import unicodedata

import pytest

from memory.adapters.markdown import MarkdownFolderAdapter
from memory.graph.edges import EdgeStore, MemoryEdge
from memory.graph.wikilinks import (
    WIKILINK_SOURCE,
    LinkSource,
    WikiLink,
    WikilinkEdgeExtractor,
    link_graph,
    link_targets,
    parse_wikilinks,
)
from memory.markdown.notes import note_id


def test_parses_every_obsidian_form_and_ignores_code():
    body = (
        "[[Note]] [[Note|shown]] [[Note#Heading]] [[Note#^block1]] [[folder/Note]] ![[embed.png]] "
        "[[#Local heading]] | table [[Note\\|esc]]\n"
        "`[[inline code]]`\n```\n[[fenced]]\n```\n~~~\n![[tilde fenced]]\n~~~\n[[after]]"
    )
    assert parse_wikilinks(body) == [
        WikiLink("Note"),
        WikiLink("Note", alias="shown"),
        WikiLink("Note", fragment="Heading"),
        WikiLink("Note", fragment="^block1"),
        WikiLink("folder/Note"),
        WikiLink("embed.png", embed=True),
        WikiLink("", fragment="Local heading"),
        WikiLink("Note", alias="esc"),
        WikiLink("after"),
    ]


def test_markdown_links_to_notes_are_link_targets_and_urls_are_not():
    """`[text](Other.md)` (what Obsidian writes with wikilinks off) made no edge: the graph and
    `vault links` missed every such link. A URL, even one ending in .md, is no note of the vault."""
    body = (
        "See [the plan](Project%20Alpha.md#Goal), ![chart](<assets/chart one.png> \"a chart\"), [up](../Up.md) "
        "and [[Wiki]].\n[web](https://example.org/Readme.md) [mail](mailto:a@b.c) [top](#Heading)\n"
        "`[code](Code.md)`\n```\n[fenced](Fenced.md)\n```\n"
    )
    assert link_targets(body) == ("Wiki", "Project Alpha.md", "assets/chart one.png", "../Up.md", "")
    notes = [_src("Home.md", *link_targets(body)), _src("Project Alpha.md"), _src("Wiki.md")]
    edges, report = link_graph(notes, ["assets/chart one.png"])
    assert {e.dst_id for e in edges} == {note_id("Project Alpha.md"), note_id("Wiki.md")}  # with the wikilink, the control
    assert (report.resolved, report.attachments, report.self_links, report.dangling) == (3, 1, 1, 1)


def _src(path: str, *targets: str, aliases: tuple[str, ...] = ()) -> LinkSource:
    return LinkSource(path, note_id(path), aliases, targets)


def test_resolution_rules_are_exact_and_never_fuzzy():
    notes = [
        _src(
            "Home.md",
            "project alpha",  # basename, case-insensitive
            "Projects/Project Alpha",  # path
            "Project Alpha.md",  # explicit suffix
            "PA",  # alias
            "",  # same-note heading link
            "Daily",  # duplicate basename in two folders: ambiguous
            "2024/Daily",  # disambiguated by path
            "Project Alph",  # a near miss is dangling, never fuzzy-matched
            "diagram.png",  # attachment
            "missing.png",  # missing attachment: dangling
            "./Projects/Project Alpha",  # relative to the linking note
            "../outside",  # escapes the vault: dangling
        ),
        _src("Projects/Project Alpha.md", aliases=("PA",)),
        _src("2024/Daily.md"),
        _src("2025/Daily.md"),
    ]
    edges, report = link_graph(notes, ["assets/diagram.png"])
    alpha = note_id("Projects/Project Alpha.md")
    assert {(e.src_id, e.dst_id) for e in edges} == {(note_id("Home.md"), alpha), (note_id("Home.md"), note_id("2024/Daily.md"))}
    assert all(e.relation == "references" and e.source == WIKILINK_SOURCE for e in edges)
    assert report.links_found == 12
    assert report.resolved == 7 and report.self_links == 1
    assert report.attachments == 1
    assert report.ambiguous == 1 and report.ambiguous_links[0].candidates == ("2024/Daily.md", "2025/Daily.md")
    assert report.dangling == 3
    assert sorted(p.target for p in report.dangling_links) == ["../outside", "Project Alph", "missing.png"]


def test_root_note_wins_a_bare_link_by_exact_path_but_two_nested_duplicates_stay_ambiguous():
    root_dup = [_src("a.md", "Note"), _src("Note.md"), _src("sub/Note.md")]
    edges, report = link_graph(root_dup)
    assert [e.dst_id for e in edges] == [note_id("Note.md")] and report.ambiguous == 0
    nested = [_src("a.md", "Note"), _src("x/Note.md"), _src("y/Note.md")]
    edges, report = link_graph(nested)
    assert edges == [] and report.ambiguous == 1


def test_path_suffix_and_unicode_names_with_spaces():
    notes = [_src("a.md", "deep/Ünï côde", "ünï CÔDE"), _src("x/deep/Ünï côde.md")]
    edges, report = link_graph(notes)
    assert report.resolved == 2 and len(edges) == 1


def test_nfd_file_names_answer_nfc_links_as_obsidian_does():
    """macOS writes names in NFD; a typed link is NFC. Obsidian links them, so must we."""
    nfd, nfc = unicodedata.normalize("NFD", "Café"), "Café"
    assert nfd != nfc
    notes = [
        _src("a.md", nfc, f"Süd/{nfc}", "Crème", f"{nfc}.png", "Plain"),
        _src(f"{unicodedata.normalize('NFD', 'Süd')}/{nfd}.md"),
        _src("b.md", aliases=(unicodedata.normalize("NFD", "Crème"),)),
        _src("Plain.md"),  # the positive control: an ASCII name resolves with or without the fix
    ]
    edges, report = link_graph(notes, [f"img/{nfd}.png"])
    assert {e.dst_id for e in edges} == {
        note_id(f"{unicodedata.normalize('NFD', 'Süd')}/{nfd}.md"), note_id("b.md"), note_id("Plain.md")
    }
    assert (report.resolved, report.attachments, report.dangling, report.ambiguous) == (4, 1, 0, 0)


def test_basename_beats_alias_and_ambiguous_alias_is_counted():
    notes = [
        _src("a.md", "Target", "Shared"),
        _src("Target.md"),
        _src("Other.md", aliases=("Target",)),
        _src("p.md", aliases=("Shared",)),
        _src("q.md", aliases=("shared",)),
    ]
    edges, report = link_graph(notes)
    assert [e.dst_id for e in edges] == [note_id("Target.md")]
    assert report.ambiguous == 1


@pytest.fixture
async def edges(store):
    await store.connect()
    return EdgeStore(store)


async def test_links_in_properties_make_edges_as_links_in_the_body_do(make_vault, edges):
    """`up: "[[Index]]"` and `related: ["[[A]]"]` (Obsidian's property links) made no edge; a plain
    string property, or an unquoted [[x]] that YAML reads as a nested list, is no link."""
    root = make_vault({
        "Note.md": '---\nup: "[[Index]]"\nrelated: ["[[A|the a]]"]\nnested: {see: "[[B#Part]]"}\n'
                   "title: Index\nbare: [[C]]\n---\nbody [[D]]",
        **{f"{n}.md": n for n in ("Index", "A", "B", "C", "D")},
    })
    report = await WikilinkEdgeExtractor(MarkdownFolderAdapter(root, "agent"), edges).reindex()
    assert (report.links_found, report.resolved, report.dangling) == (4, 4, 0)
    outgoing = {e.dst_id for e in await edges.outgoing(note_id("Note.md"))}
    assert outgoing == {note_id(f"{n}.md") for n in ("Index", "A", "B", "D")}  # D, in the body, the control


async def test_reindex_rewrites_the_whole_wikilink_set(make_vault, edges, tree_digest):
    root = make_vault(
        {
            "A.md": "links [[B]] and [[C#Part]] and ![[pic.png]]\n```\n[[D]]\n```",
            "B.md": "back to [[a]] and [[nowhere]]",
            "C.md": "# Part\n[[#Part]]",
            "D.md": "only linked from code",
            "pic.png": b"\x89PNG",
        }
    )
    reader = MarkdownFolderAdapter(root, "agent")
    report = await WikilinkEdgeExtractor(reader, edges).reindex()
    assert report.counts() == {
        "notes_scanned": 4,
        "links_found": 6,
        "resolved": 4,
        "attachments": 1,
        "self_links": 1,
        "dangling": 1,
        "ambiguous": 0,
        "edges_written": 3,
    }
    a, b, c, d = (note_id(f"{n}.md") for n in "ABCD")
    assert await edges.neighbors(a) == sorted([b, c]) + []  # outgoing b, c; incoming b already seen
    assert await edges.neighbors(d) == []  # the code-fenced link made no edge
    await edges.upsert([MemoryEdge(d, a, "related", "manual", 0.5)])
    (root / "A.md").write_text("now only [[C]]")
    report = await WikilinkEdgeExtractor(reader, edges).reindex()
    assert report.edges_written == 2
    assert [e.dst_id for e in await edges.outgoing(a)] == [c]
    assert [e.src_id for e in await edges.incoming(a, "related")] == [d]
    assert await edges.count(WIKILINK_SOURCE) == 2 and await edges.count("manual") == 1  # other producers survive
    before = tree_digest(root)
    await WikilinkEdgeExtractor(reader, edges).reindex()
    assert tree_digest(root) == before
