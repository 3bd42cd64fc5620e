"""Maintenance across a home's stores: prune and reindex, each under its lock, each audited.

``arcana prune`` and ``arcana reindex`` are one call here, so a library caller
gets the same lock (a second run fails fast with :class:`LockHeldError`), the
same audit line and the same reach into the promoted copies an agent's
memories have in the global tier.
"""

from memory.maintenance.prune import PruneRun, prune_home
from memory.maintenance.reindex import ReindexRun, reindex_home
from memory.maintenance.targets import Selection, Target, prune_targets, reindex_targets

__all__ = [
    "PruneRun",
    "ReindexRun",
    "Selection",
    "Target",
    "prune_home",
    "prune_targets",
    "reindex_home",
    "reindex_targets",
]
