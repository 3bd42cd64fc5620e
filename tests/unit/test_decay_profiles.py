"""Decay curves, floors, refresh on access, consolidation, and card overrides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.errors import ConfigError
from memory.ranking.decay import (
    DEFAULT_PROFILES,
    DecayKind,
    DecayProfile,
    effective_importance,
    resolve_decay_profiles,
    should_consolidate,
)
from memory.types import MemoryEntry, MemoryType

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def aged(memory_type: MemoryType, days: float, importance: float = 0.8, **kw) -> tuple[MemoryEntry, datetime]:
    entry = MemoryEntry(agent_id="a", content="x", type=memory_type, importance=importance, created_at=T0, **kw)
    return entry, T0 + timedelta(days=days)


def test_exponential_halves_every_half_life():
    profile = DecayProfile(kind=DecayKind.EXPONENTIAL, half_life_days=10)
    entry, _ = aged(MemoryType.SEMANTIC, 0)
    assert effective_importance(entry, profile, T0) == pytest.approx(0.8)
    assert effective_importance(entry, profile, T0 + timedelta(days=10)) == pytest.approx(0.4)
    assert effective_importance(entry, profile, T0 + timedelta(days=20)) == pytest.approx(0.2)


def test_linear_and_none_curves():
    linear = DecayProfile(kind=DecayKind.LINEAR, half_life_days=10)
    entry, _ = aged(MemoryType.SEMANTIC, 0)
    assert effective_importance(entry, linear, T0 + timedelta(days=10)) == pytest.approx(0.4)
    assert effective_importance(entry, linear, T0 + timedelta(days=25)) == 0.0
    assert effective_importance(entry, DecayProfile(kind=DecayKind.NONE), T0 + timedelta(days=9999)) == 0.8


def test_default_clocks_episodic_fast_semantic_slow_procedural_slowest():
    month = T0 + timedelta(days=30)
    left = {
        t: effective_importance(aged(t, 0)[0], DEFAULT_PROFILES[t], month) / 0.8
        for t in (MemoryType.EPISODIC, MemoryType.SEMANTIC, MemoryType.PROCEDURAL)
    }
    assert left[MemoryType.EPISODIC] < 0.1 < 0.8 < left[MemoryType.SEMANTIC] < left[MemoryType.PROCEDURAL] < 1.0


@pytest.mark.parametrize("memory_type", [MemoryType.SEMANTIC, MemoryType.PROCEDURAL, MemoryType.PREFERENCE])
def test_floors_hold_for_durable_types_even_after_decades(memory_type):
    profile = DEFAULT_PROFILES[memory_type]
    entry, decades_later = aged(memory_type, 365 * 30)
    assert profile.floor > 0
    assert effective_importance(entry, profile, decades_later) == pytest.approx(0.8 * profile.floor)
    assert not should_consolidate(entry, profile, decades_later)


def test_episodic_ages_out_but_not_while_fresh():
    profile = DEFAULT_PROFILES[MemoryType.EPISODIC]
    fresh, week = aged(MemoryType.EPISODIC, 7)
    assert not should_consolidate(fresh, profile, week)
    stale, two_months = aged(MemoryType.EPISODIC, 60)
    assert should_consolidate(stale, profile, two_months)


def test_pinned_entries_are_exempt():
    profile = DEFAULT_PROFILES[MemoryType.EPISODIC]
    entry, year = aged(MemoryType.EPISODIC, 365, pinned=True)
    assert effective_importance(entry, profile, year) == 0.8
    assert not should_consolidate(entry, profile, year)


def test_access_refreshes_the_clock_only_when_the_profile_says_so():
    entry, later = aged(MemoryType.EPISODIC, 30, last_accessed_at=T0 + timedelta(days=29))
    refreshing = DEFAULT_PROFILES[MemoryType.EPISODIC]
    fixed = refreshing.model_copy(update={"refresh_on_access": False})
    assert effective_importance(entry, refreshing, later) == pytest.approx(0.8 * 0.5 ** (1 / 7))
    assert effective_importance(entry, fixed, later) == pytest.approx(0.8 * 0.5 ** (30 / 7))


def test_card_overrides_change_only_the_named_fields():
    profiles = resolve_decay_profiles({"episodic": {"half_life_days": 3}, "semantic": {"kind": "none"}})
    assert profiles[MemoryType.EPISODIC].half_life_days == 3
    assert profiles[MemoryType.EPISODIC].floor == DEFAULT_PROFILES[MemoryType.EPISODIC].floor
    assert profiles[MemoryType.SEMANTIC].kind is DecayKind.NONE
    assert profiles[MemoryType.PROCEDURAL] == DEFAULT_PROFILES[MemoryType.PROCEDURAL]


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"episodc": {}}, "unknown memory type 'episodc'"),
        ({"episodic": {"half_life_days": 0}}, "agent 'a' decay.episodic.half_life_days"),
        ({"semantic": {"floor": 2}}, "decay.semantic.floor"),
        ({"semantic": {"speed": 2}}, "decay.semantic.speed"),
        ({"semantic": 3}, "must be an object"),
    ],
)
def test_bad_card_overrides_name_the_field(overrides, needle):
    with pytest.raises(ConfigError) as info:
        resolve_decay_profiles(overrides, source="agent 'a' decay")
    assert needle in str(info.value)
