"""Reindex across stores under one lock: keyword index, vectors, and a re-embed audited per store.

A store that fails (corrupt, busy) is reported with its error and the run
goes on to the next, so one bad pool does not leave every agent unindexed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory.adapters.opener import open_store, open_tier, server_url
from memory.agent_lock import connect_agent_store
from memory.agents import UnreadableCard
from memory.audit import AuditLog
from memory.deadline import lock_wait
from memory.errors import MemoryStorageError, NotFoundError, VectorIndexDamagedError
from memory.home import Home
from memory.locks import exclusive_within
from memory.operations.indexes import ReindexReport, reindex
from memory.operator.targets import Selection, Target, reindex_targets, unreadable_cards
from memory.store_kinds import StoreKind

Progress = Callable[[str, int, int], None]
"""``on_progress(label, done, total)``: embedding progress of the store named ``label``."""


def rebuild_command(kind: StoreKind, name: str | None, model: str) -> str:
    """How to rebuild a store's vector index from its rows: a re-embed with its pinned ``model``
    (``name``: the agent's name, the pool's or the vault's)."""
    if kind is StoreKind.VAULT:  # derived from its notes as a whole, and not a reindex target
        return f"move the vault's index aside and run `arcana vault index {name}`"
    where = {StoreKind.PRIVATE: f"--agent {name}", StoreKind.POOL: f"--pool {name}", StoreKind.GLOBAL: "--global"}[kind]
    return f"`arcana reindex {where} --re-embed --model {model}`"


@dataclass
class StoreReindex:
    target: Target
    report: ReindexReport | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return self.target.shown

    def as_dict(self) -> dict:
        if self.error is not None:
            return {**self.target.fields, "error": self.error}
        return {**self.target.fields, **self.report.as_dict()}


@dataclass
class ReindexRun:
    stores: list[StoreReindex] = field(default_factory=list)
    unreadable: list[UnreadableCard] = field(default_factory=list)  # agents --all could not reindex

    @property
    def failed(self) -> list[StoreReindex]:
        return [s for s in self.stores if s.error is not None]

    def as_dict(self) -> dict:
        """The shape ``arcana reindex --json`` prints."""
        return {
            "agents": [s.as_dict() for s in self.stores if s.target.kind is StoreKind.PRIVATE],
            "tiers": [s.as_dict() for s in self.stores if s.target.kind is not StoreKind.PRIVATE],
            "unreadable": [str(card) for card in self.unreadable],
        }


async def reindex_home(
    home: Home,
    config: Any,
    selection: Selection,
    *,
    keyword: bool = True,
    model: str | None = None,
    notify: Callable[[str], None] | None = None,
    on_progress: Progress | None = None,
    actor: str = "library",
) -> ReindexRun:
    """Bring the vectors of every store ``selection`` names (see :func:`reindex_targets`) up to date
    under ``<home>/locks/reindex.lock``; ``keyword`` rebuilds the keyword index too, ``model``
    re-embeds everything with it and re-pins each store to it.

    One warm embedder serves every store. A home whose config lists no
    embedding provider is keyword-only by choice: its keyword index is rebuilt
    and its vectors left alone (``report.vectors`` is None), which is success,
    not a store error. A second reindex of the same home fails with
    :class:`LockHeldError`, at once unless the command's lock wait lets it wait for the first.
    """
    from memory.adapters.opener import vector_adapter
    from memory.embedding.factory import build_embedder, build_gateway, vector_options

    targets = reindex_targets(home, config, selection)
    for target in targets:  # a server tier's unset url_env fails the run before any store is touched
        server_url(config, target.kind, target.name)
    settings = config.embedding
    target_model = build_embedder(model, settings, home) if model else None
    gateway = build_gateway(settings, home)
    audit = AuditLog(home.audit_log)
    run = ReindexRun(unreadable=unreadable_cards(home, selection))
    with exclusive_within(home.locks_dir / "reindex.lock", "reindex", lock_wait(0.0)):
        for target in targets:
            done = StoreReindex(target)
            progress = (lambda d, t, label=done.name: on_progress(label, d, t)) if on_progress else None
            if target.kind is StoreKind.PRIVATE:
                store = open_store(home, target.kind, target.name, actor=actor)
                try:
                    await connect_agent_store(home, target.name, target.shown, store)
                except NotFoundError:
                    continue  # deleted since the run listed it
                except MemoryStorageError as exc:  # as when the store is first read below
                    done.error = str(exc)
                    run.stores.append(done)
                    continue
                vectors = vector_adapter(store, settings, home, notify=notify, gateway=gateway)
            else:  # a pool or the global tier: its SQLite file behind the vector layer, or its server
                vectors = open_tier(home, target.kind, target.name, config=config, embedding=gateway, actor=actor,
                                    vector_options={**vector_options(settings), "notify": notify})
            try:
                done.report = await reindex(vectors, keyword=keyword, vectors_wanted=bool(settings.providers),
                                            reembed=target_model, on_progress=progress)
            except VectorIndexDamagedError as exc:
                how = rebuild_command(target.kind, target.fields.get("agent") or target.name, exc.model)
                done.error = f"{exc}; rows are intact, rebuild it from them: {how}"
            except MemoryStorageError as exc:
                done.error = str(exc)
            finally:
                await vectors.aclose()
            if done.report is not None and done.report.repinned:
                audit.append("reembed", store=done.name, model=target_model.model_name)
            run.stores.append(done)
    return run
