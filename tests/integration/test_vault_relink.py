"""A pass that adds, removes, renames or re-aliases notes re-resolves only the links those names can
answer; the index must still say exactly what a rebuild of every link from the folder says."""

from __future__ import annotations

from memory.adapters.markdown import MarkdownFolderAdapter
from memory.graph.wikilinks import WIKILINK_SOURCE, LinkSource, NoteLinks, link_graph, note_targets
from memory.vaults.indexer import index_vault, open_store
from memory.vaults.manifest import COUNT_COLUMNS
from memory.vaults.registry import VaultRegistry

NOTES = {
    "Home.md": "[[Alpha]] [[Ghost]] [[sub/Gamma]] [[a1]] [[Dup]] [[./Projects/Beta]] ![[chart.png]] [[Home#top]]",
    "Projects/Alpha.md": "---\naliases: [A1]\n---\n[[Home]] [[Zed]] [[../Ghost]]",
    "Projects/Beta.md": "[[Ghost]] [[Dup]] [[projects/alpha]] [[A2]]",
    "x/Dup.md": "[[Ghost]] [[Home]] [Beta](../Projects/Beta.md)",
    "other/sub/Gamma.md": "[[Beta]] [[dup]]",
    "assets/chart.png": b"\x89PNG\r\n",
}


async def _indexed(vault) -> tuple[set[tuple[str, str]], dict[str, tuple[int, ...]]]:
    """The index's wikilink edges and each note's link tally."""
    store = open_store(vault)
    try:
        edges = await store.run(
            lambda raw: raw.execute("SELECT src_id, dst_id FROM memory_edges WHERE source = ?", (WIKILINK_SOURCE,)).fetchall()
        )
        tallies = await store.run(lambda raw: raw.execute(f"SELECT rel_path, {', '.join(COUNT_COLUMNS)} FROM vault_files").fetchall())
    finally:
        await store.aclose()
    return {tuple(e) for e in edges}, {r[0]: tuple(r[1:]) for r in tallies}


async def _rebuilt(vault) -> tuple[set[tuple[str, str]], dict[str, tuple[int, ...]], tuple[int, int]]:
    """Every link of the folder resolved from scratch: edges, tallies, (dangling, ambiguous)."""
    scan = await MarkdownFolderAdapter(vault.root, "agent").scan()
    per_note: dict[str, NoteLinks] = {}
    sources = [LinkSource(n.rel_path, n.id, n.aliases, note_targets(n)) for n in scan.notes]
    edges, report = link_graph(sources, scan.attachments, per_note=per_note)
    return {(e.src_id, e.dst_id) for e in edges}, {p: links.tally() for p, links in per_note.items()}, (report.dangling, report.ambiguous)


def _write(root, rel: str, text: str) -> str:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)
    return rel


async def test_targeted_passes_leave_the_links_a_full_rebuild_gives(make_vault, no_embedder):
    root = make_vault(NOTES, name="notes")
    vault = VaultRegistry(no_embedder).add(root, "notes")
    await index_vault(vault, embed=False)
    seen: set[tuple[int, int]] = set()

    async def step(paths: list[str] | None) -> None:
        report = await index_vault(vault, embed=False, paths=paths)
        assert report.mode == ("full" if paths is None else "targeted")
        edges, tallies = await _indexed(vault)
        want_edges, want_tallies, problems = await _rebuilt(vault)
        assert (edges, tallies) == (want_edges, want_tallies)
        assert (report.links.dangling, report.links.ambiguous) == problems
        seen.add(problems)

    await step([_write(root, "Ghost.md", "[[Home]]")])  # four dangling links now resolve
    await step([_write(root, "y/dup.md", "[[ghost]]")])  # [[Dup]] and [[dup]]: one name, two notes
    await step([_write(root, "Zeta.md", "---\naliases: [Zed]\n---\n[[A1]]")])  # [[Zed]] resolves by alias
    await step([_write(root, "Projects/Alpha.md", "---\naliases: [A2]\n---\n[[Home]] [[Zed]]")])  # A1 goes, A2 comes
    (root / "Projects/Beta.md").rename(root / "Projects/Beta2.md")
    await step(["Projects/Beta.md", "Projects/Beta2.md"])  # a rename: links to the old path dangle
    await step([_write(root, "Zeta.md", "---\naliases: [Zed, a2]\n---\n[[A1]]")])  # [[A2]]: two aliases
    (root / "x/Dup.md").unlink()
    await step(["x/Dup.md"])  # [[Dup]] is one note again
    await step([_write(root, "another/sub/Gamma.md", "[[Gamma]]")])  # [[sub/Gamma]]: a suffix of two paths
    await step([_write(root, "Home.md", "[[Ghost]] [[Zeta]] [[Projects/Beta2]]")])  # an edit renames nothing
    (root / "Ghost.md").unlink()
    await step(None)  # a walk finds it gone
    await step([_write(root, "projects/beta2.md", "[[ghost]]")])  # [[Projects/Beta2]]: one path but for case
    assert len(seen) >= 6  # control: the steps really changed what dangles and what is ambiguous
