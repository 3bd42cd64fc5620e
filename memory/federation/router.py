"""MemoryRouter: which tiers a write goes to, which a read fans across, and how
merged results rank. Pure policy — the federation does the I/O.

Every tier is wrapped in a :class:`ResilientTier` at registration, so nothing
downstream ever touches a raw backend on the read/write path.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memory.budgets import ConnectionsConfig
from memory.errors import MemoryRoutingError
from memory.federation.resilience import ResilientTier
from memory.promotion import promotable
from memory.protocols import MemoryAdapter
from memory.ranking.decay import DEFAULT_PROFILES, DecayProfile, assess
from memory.ranking.fusion import asks
from memory.types import MemoryEntry, MemoryQuery, MemoryScope, MemoryType, now_utc

NEUTRAL_WEIGHT = 0.5
# How much of a text match's score age and importance may take away (at most):
# enough to order near-equal matches fresh-first, never enough to bury an old
# strong match under a fresh weak one. Measured on LoCoMo (man/benchmarks.md).
DECAY_SHARE = 0.2
# How much a match written inside the query's time window is lifted: enough to
# beat a same-strength match from another time, not a far stronger one.
TIME_BOOST = 0.5
# What a pin adds to a text match's score. A pin says "keep this" (never pruned,
# first in a listing), not "this answers everything": among matches of a query it
# only breaks near-ties, so a pinned note never outranks a match this much stronger.
PIN_BOOST = 0.1
# What a match that ends by asking a question weighs against one that does not.
# In a conversation the turn that asks ("What kind of books do you have?")
# repeats the words of a later query about it, and the reply that answers it
# does not: on LoCoMo, of 166 questions whose evidence ranked 2-10, a turn
# ending in "?" ranked first in 58 and above the evidence in 110. Measured
# MRR@10 0.552 -> 0.579 at 0.75 with any@10 unchanged (0.7-0.8 within 0.003;
# cross-validated, man/benchmarks.md).
ASKING_WEIGHT = 0.75
# What a derived memory (a turn's echo, a session summary: DERIVED_TAG) weighs
# against the facts it was made from. A summary repeats its facts' words among
# others, so it matches a query about them about as well as they do; halved, it
# ranks below them in a query, and a summary at importance 0.4 lists below any
# fact above 0.2; it still answers what no fact holds.
DERIVED_WEIGHT = 0.5


class MemoryRouter:
    """Routes writes and reads across the private, shared and global tiers.

    ``pools`` maps a pool name to its (writable) backend; read-only members
    such as an attached vault are added with :meth:`register_pool`. Missing
    weights default to a neutral 0.5, so an agent with no card preferences
    still gets a stable importance-driven order.
    """

    def __init__(
        self,
        *,
        private: MemoryAdapter,
        global_: MemoryAdapter | None = None,
        pools: Mapping[str, MemoryAdapter] | None = None,
        weights: Mapping[MemoryType, float] | None = None,
        decay_profiles: Mapping[MemoryType, DecayProfile] | None = None,
        clock: Callable[[], datetime] = now_utc,
        resilience: ConnectionsConfig | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.resilience = resilience or ConnectionsConfig()
        self.rank_by(weights, decay_profiles)
        self.clock = clock
        self._monotonic = monotonic
        self.private = self._wrap(private, "private", MemoryScope.PRIVATE)
        self.global_ = None if global_ is None else self._wrap(global_, "global", MemoryScope.GLOBAL)
        self.pools: dict[str, list[ResilientTier]] = {}
        for name, adapter in (pools or {}).items():
            self.register_pool(name, adapter)

    def rank_by(self, weights: Mapping[MemoryType, float] | None, decay_profiles: Mapping[MemoryType, DecayProfile] | None) -> None:
        """The agent card's type weights and decay over the defaults; set again when a long-running
        process (the MCP server) sees the card changed."""
        self.weights = dict(weights or {})
        self.decay_profiles = {**DEFAULT_PROFILES, **(decay_profiles or {})}

    def _wrap(self, adapter: MemoryAdapter, name: str, scope: MemoryScope, pool: str | None = None, **kw: Any) -> ResilientTier:
        if isinstance(adapter, ResilientTier):
            return adapter
        budget = self.resilience.for_tier(scope, pool)
        return ResilientTier(adapter, name=name, scope=scope, pool_name=pool, budget=budget, clock=self._monotonic, **kw)

    def register_pool(
        self, name: str, adapter: MemoryAdapter, *, read_only: bool | None = None, label: str | None = None
    ) -> ResilientTier:
        """Add a backend to the shared pool ``name``.

        A pool has at most one writable backend (registering another replaces
        it) and any number of read-only members, which answer reads and show up
        as *refused* in a write's split.
        """
        tier = self._wrap(adapter, label or f"pool:{name}", MemoryScope.SHARED, name, read_only=read_only)
        members = self.pools.setdefault(name, [])
        if not tier.read_only:
            members[:] = [m for m in members if m.read_only]
            members.insert(0, tier)
        else:
            members.append(tier)
        return tier

    def pool_tier(self, name: str | None) -> ResilientTier | None:
        """The writable member of pool ``name`` (None: no such pool, or only read-only vaults):
        the store a write into the pool is reconciled against."""
        members = self.pools.get(name or "", [])
        return members[0] if members and not members[0].read_only else None

    def withdraw_pools(self, keep: set[str]) -> list[ResilientTier]:
        """Drop every shared tier whose pool name is not in ``keep`` (an agent that left a pool, a
        vault detached from it); the tiers dropped, for the caller to close."""
        return [tier for name in sorted(self.pools) if name not in keep for tier in self.pools.pop(name)]

    def set_global(self, adapter: MemoryAdapter | None) -> ResilientTier | None:
        """Switch the global tier on (``adapter``) or off (None), as `memory.global` now says;
        the tier it replaces, for the caller to close."""
        dropped = self.global_
        self.global_ = None if adapter is None else self._wrap(adapter, "global", MemoryScope.GLOBAL)
        return dropped

    def set_private(self, adapter: MemoryAdapter) -> None:
        """The agent's store in place of the stand-in a reader had while it was not made yet."""
        self.private = self._wrap(adapter, "private", MemoryScope.PRIVATE)

    @property
    def tiers(self) -> list[ResilientTier]:
        """Every tier, most local first: private, each pool's members, then global."""
        ordered = [self.private]
        for name in sorted(self.pools):
            ordered += self.pools[name]
        if self.global_ is not None:
            ordered.append(self.global_)
        return ordered

    def route_write(self, entry: MemoryEntry) -> list[ResilientTier]:
        """The tiers ``entry`` must be written to (read-only members included, to be refused).

        PRIVATE → private, plus global when the promotion policy allows it
        (:func:`memory.promotion.promotable`) and a global tier exists (the
        caller writes :func:`memory.promotion.global_copy` there). SHARED → the members of
        ``entry.pool_name``. GLOBAL → global. A required tier that is missing
        raises :class:`MemoryRoutingError`; a promotion without a global tier
        simply stays private.
        """
        if entry.scope is MemoryScope.PRIVATE:
            targets = [self.private]
            if self.global_ is not None and promotable(entry):
                targets.append(self.global_)
            return targets
        if entry.scope is MemoryScope.GLOBAL:
            if self.global_ is None:
                raise MemoryRoutingError("no global tier: a global write needs an embedder (global memory is off)")
            return [self.global_]
        if not entry.pool_name:
            # Said in the core's words, not one skin's flag: the CLI and MCP both show it.
            raise MemoryRoutingError(f"a shared memory needs a pool name; name one of the agent's pools ({self._known_pools(writable=True)})")
        members = self.pools.get(entry.pool_name)
        if not members:
            raise MemoryRoutingError(f"unknown pool '{entry.pool_name}' for this agent; {self._known_pools(writable=True)}")
        if all(m.read_only for m in members):
            raise MemoryRoutingError(f"pool '{entry.pool_name}' has no writable tier (only read-only vaults)")
        return list(members)

    def route_read(self, query: MemoryQuery) -> list[ResilientTier]:
        """The tiers ``query`` fans across, most local first.

        No scope → every tier. PRIVATE / GLOBAL → that tier (none when global
        is off: reads degrade, they do not raise). SHARED → the named pool, or
        every pool; naming an unknown pool is a caller error.
        """
        if query.scope is None:
            return self.tiers
        if query.scope is MemoryScope.PRIVATE:
            return [self.private]
        if query.scope is MemoryScope.GLOBAL:
            return [] if self.global_ is None else [self.global_]
        if query.pool_name is not None:
            if query.pool_name not in self.pools:
                raise MemoryRoutingError(f"unknown pool '{query.pool_name}' for this agent; {self._known_pools()}")
            return list(self.pools[query.pool_name])
        return [tier for name in sorted(self.pools) for tier in self.pools[name]]

    def _known_pools(self, *, writable: bool = False) -> str:
        """The agent's pools in words; for a write, only those it can write to (not a read-only vault)."""
        names = sorted(n for n, tiers in self.pools.items() if not writable or not all(t.read_only for t in tiers))
        return f"its pools: {', '.join(names)}" if names else "it has joined no pools" + (" it can write to" if writable else "")

    def weight(self, memory_type: MemoryType) -> float:
        return self.weights.get(memory_type, NEUTRAL_WEIGHT)

    def rank(
        self,
        entries: list[MemoryEntry],
        limit: int,
        now: datetime | None = None,
        relevance: Mapping[str, float] | None = None,
        window: tuple[datetime, datetime] | None = None,
        locality: Sequence[int] | None = None,
    ) -> list[tuple[MemoryEntry, float]]:
        """The best ``limit`` candidates for recall with the score each ranked by, best first.

        Without ``relevance`` (a listing, no query text): score = effective
        (decayed) importance × the agent's weight for the type, and aged-out
        entries are dropped — the seed's behaviour. With ``relevance`` (a text
        query, ``relevance[id]`` the backend's score as a fraction of its best,
        1 for an entry its tier did not score)
        relevance comes first: score = relevance × weight × a bounded freshness
        factor in [1 - DECAY_SHARE, 1], and nothing is dropped for age — decay
        must never hide the one memory that answers a question; a match that
        itself asks a question (:func:`asks`) weighs ASKING_WEIGHT. A ``window``
        (the span a time expression in the query names, see
        :mod:`memory.ranking.timeframe`) lifts the matches written inside
        it by TIME_BOOST. A derived entry weighs DERIVED_WEIGHT either way. Pinned entries
        are exempt from decay; they sort first in a listing, and in a text
        query gain only PIN_BOOST. Equal scores go to the more local tier (``locality``: each
        entry's tier's place in routing order, private first; None: one tier), then to the
        backend's score (comparable within a tier only: each tier's best is 1 whatever its
        scale, and a raw BM25 from a larger store ranked another agent's global memory over the
        agent's own), then the newer, then the smaller id, so a tie never falls to read order.
        The entries themselves are not changed.
        """
        now = now or self.clock()
        scored = []
        for place, entry in zip(locality or [0] * len(entries), entries, strict=True):
            effective, aged_out = assess(entry, self.decay_profiles[entry.type], now)
            if relevance is None:
                if aged_out:
                    continue
                score = effective * self.weight(entry.type)
            else:
                freshness = 1.0 - DECAY_SHARE + DECAY_SHARE * effective
                score = relevance.get(entry.id, 1.0) * self.weight(entry.type) * freshness
                if asks(entry.content):
                    score *= ASKING_WEIGHT
                if window is not None and window[0] <= entry.created_at < window[1]:
                    score *= 1.0 + TIME_BOOST
                if entry.pinned:
                    score *= 1.0 + PIN_BOOST
            if entry.derived:
                score *= DERIVED_WEIGHT
            backend_score = entry.score if entry.score is not None else float("-inf")
            first = entry.pinned and relevance is None  # a pin leads a listing, never a query's matches
            scored.append(((first, score, -place, backend_score, entry.created_at), score, entry))
        scored.sort(key=lambda item: item[2].id)  # the last tie-break; the stable sort below keeps it
        scored.sort(key=lambda item: item[0], reverse=True)
        return [(entry, score) for _, score, entry in scored[:limit]]
