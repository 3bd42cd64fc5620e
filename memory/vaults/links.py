"""``arcana vault links NOTE``: a note's outgoing links and backlinks, from the index."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memory.errors import InvalidRequestError, NotFoundError
from memory.graph.edges import EdgeStore
from memory.graph.wikilinks import (
    AMBIGUOUS, RESOLVED, SELF, LinkResolver, LinkSource, parse_wikilinks,
)
from memory.vaults import manifest
from memory.vaults.indexer import open_store
from memory.vaults.relink import filed
from memory.vaults.registry import Vault


@dataclass(frozen=True)
class LinkReport:
    """One note's links in its vault: resolved both ways, and the targets that resolve to nothing."""

    vault: str
    note: str
    id: str
    outgoing: list[str]
    backlinks: list[str]
    unresolved: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _link_target(note: str) -> str:
    """The note part of ``note`` as a link would read it: ``[[Note#Heading|shown]]`` and ``Note#^id``
    name ``Note``, as a link copied from a note does. Nothing left is a usage error."""
    text = note.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2]
    links = parse_wikilinks(f"[[{text}]]")
    target = links[0].target if len(links) == 1 else text
    if not target:
        raise InvalidRequestError(f"'{note}' names no note; give a note's name, alias or path, e.g. `arcana vault links Home`")
    return target


def _resolver(raw, targets: Sequence[str], source: LinkSource) -> LinkResolver:
    """A resolver that resolves ``targets`` (written in ``source``) as one holding the whole vault would:
    it holds only the notes filed under their keys, picked from the manifest a page at a time, so
    `vault links` on a vault of 100,000 notes never holds them all."""
    return LinkResolver(filed((r for r, _ in manifest.rows(raw)), [(t, source) for t in targets]))


def _outgoing_and_unresolved(raw, target: LinkSource) -> tuple[LinkSource, list[str]]:
    """``target`` with its link targets, and those of them that resolve to no note or attachment."""
    target = LinkSource(target.rel_path, target.id, target.aliases, manifest.targets_of(raw, target.rel_path))
    resolver = _resolver(raw, target.targets, target)
    return target, [t for t in target.targets if resolver.resolve(t, target)[0] not in (RESOLVED, SELF, "attachment")]


async def note_links(vaults: Sequence[Vault], note: str) -> LinkReport:
    """Resolve ``note`` exactly as a ``[[note]]`` link would be, in each indexed vault; one match wins."""
    note = _link_target(note)
    found: list[LinkReport] = []
    ambiguous: list[str] = []
    asked = LinkSource("", "")
    for vault in vaults:
        if not vault.db_path.exists():
            continue
        store = open_store(vault)
        try:
            resolver = await store.run(_resolver, [note], asked)
            status, candidates = resolver.resolve(note, asked)
            if status == AMBIGUOUS:
                ambiguous += [f"{vault.name}:{c.rel_path}" for c in candidates]
                continue
            if status not in (RESOLVED, SELF) or not candidates or not candidates[0].id:
                continue
            target, unresolved = await store.run(_outgoing_and_unresolved, candidates[0])
            edges = EdgeStore(store)
            out_ids = [e.dst_id for e in await edges.outgoing(target.id)]
            in_ids = [e.src_id for e in await edges.incoming(target.id)]
            paths = await store.run(manifest.paths_for, list(dict.fromkeys(out_ids + in_ids)))
            outgoing = [paths[i] for i in out_ids if i in paths]
            backlinks = [paths[i] for i in in_ids if i in paths]
            found.append(
                LinkReport(vault.name, target.rel_path, target.id, sorted(set(outgoing)), sorted(set(backlinks)), unresolved)
            )
        finally:
            await store.aclose()
    if ambiguous and not found:
        raise InvalidRequestError(f"'{note}' matches several notes: {', '.join(ambiguous)}; give its path")
    if not found:
        raise NotFoundError(f"no indexed note matches '{note}' (is the vault indexed? `arcana vault index NAME`)")
    if len(found) > 1:
        raise InvalidRequestError(
            f"'{note}' is in several vaults ({', '.join(f.vault for f in found)}); pick one with --vault"
        )
    return found[0]
