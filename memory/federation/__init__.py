"""Federation: private, shared and global tiers that degrade instead of failing."""

from memory.federation.assembly import PoolConfig, build_federation, federation_for_agent
from memory.federation.budgets import ConnectionsConfig, TierBudget
from memory.federation.decay import DecayKind, DecayProfile, effective_importance, resolve_decay_profiles, should_consolidate
from memory.federation.events import MemoryDegradedEvent
from memory.federation.federation import FederatedWriteError, MemoryFederation, RecallReport, WriteReport
from memory.federation.resilience import BreakerState, CircuitBreaker, ResilientTier
from memory.federation.router import MemoryRouter

__all__ = [
    "BreakerState",
    "CircuitBreaker",
    "ConnectionsConfig",
    "DecayKind",
    "DecayProfile",
    "FederatedWriteError",
    "MemoryDegradedEvent",
    "MemoryFederation",
    "MemoryRouter",
    "PoolConfig",
    "RecallReport",
    "ResilientTier",
    "TierBudget",
    "WriteReport",
    "build_federation",
    "effective_importance",
    "federation_for_agent",
    "resolve_decay_profiles",
    "should_consolidate",
]
