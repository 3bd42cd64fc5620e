"""Decay: how much of an entry's importance survives its age, per memory type.

Decay is a ranking score, never a delete. Each :class:`MemoryType` gets its own
clock — a throwaway exchange (episodic) fades in weeks, a fact (semantic) over
seasons, a how-to (procedural) over years — and a ``floor`` keeps slow types
from being driven toward zero, the failure peer tools show when one curve
decays everything. An entry whose remaining fraction falls below its profile's
``consolidation_threshold`` has aged out: recall drops it (a summary should
carry it now). Pinned entries are exempt from all of this.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory.errors import ConfigError, InvalidRequestError
from memory.types import MemoryEntry, MemoryType

DAY_SECONDS = 86_400.0


class DecayKind(StrEnum):
    EXPONENTIAL = "exponential"  # halves every half_life_days
    LINEAR = "linear"  # loses half by half_life_days, all of it by twice that
    NONE = "none"  # never decays


class DecayProfile(BaseModel):
    """One type's decay curve.

    ``floor`` and ``consolidation_threshold`` are fractions of the stored
    importance: the curve never goes below ``floor``, and an entry whose
    remaining fraction is below ``consolidation_threshold`` has aged out. A
    floor at or above the threshold therefore means "never ages out".
    """

    # A card is JSON, which has no Infinity: a half-life of 1e999 was stored as null, and the card refused.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: DecayKind = DecayKind.EXPONENTIAL
    half_life_days: float = Field(default=30.0, gt=0.0)
    floor: float = Field(default=0.0, ge=0.0, le=1.0)
    refresh_on_access: bool = True
    consolidation_threshold: float = Field(default=0.0, ge=0.0, lt=1.0)

    def remaining(self, age_days: float) -> float:
        """The fraction of importance left after ``age_days``, floor applied."""
        age_days = max(0.0, age_days)
        if self.kind is DecayKind.NONE:
            factor = 1.0
        elif self.kind is DecayKind.EXPONENTIAL:
            factor = math.pow(0.5, age_days / self.half_life_days)
        else:
            factor = max(0.0, 1.0 - age_days / (2.0 * self.half_life_days))
        return max(factor, self.floor)


DEFAULT_PROFILES: dict[MemoryType, DecayProfile] = {
    # What happened: fades in weeks and ages out after ~3 half-lives.
    MemoryType.EPISODIC: DecayProfile(half_life_days=7.0, floor=0.0, consolidation_threshold=0.1),
    # Facts: slow, and never below 30% of their importance.
    MemoryType.SEMANTIC: DecayProfile(half_life_days=180.0, floor=0.3, consolidation_threshold=0.05),
    # How-tos: very slow, never below half.
    MemoryType.PROCEDURAL: DecayProfile(half_life_days=730.0, floor=0.5, consolidation_threshold=0.05),
    # Stated preferences hold until contradicted.
    MemoryType.PREFERENCE: DecayProfile(half_life_days=365.0, floor=0.5, consolidation_threshold=0.05),
}


def age_days(entry: MemoryEntry, profile: DecayProfile, now: datetime) -> float:
    """Days since the entry was written, or last read when the profile refreshes on access.

    A read after ``now`` (a recall --as-of an earlier time) had not happened then: it is not counted."""
    reference = entry.created_at
    if profile.refresh_on_access and entry.last_accessed_at is not None and entry.last_accessed_at <= now:
        reference = max(reference, entry.last_accessed_at)
    return (now - reference).total_seconds() / DAY_SECONDS


def assess(entry: MemoryEntry, profile: DecayProfile, now: datetime) -> tuple[float, bool]:
    """``(effective importance, aged out)`` in one pass — what ranking needs per candidate."""
    if entry.pinned or profile.kind is DecayKind.NONE:
        return entry.importance, False
    left = profile.remaining(age_days(entry, profile, now))
    return entry.importance * left, left < profile.consolidation_threshold


def effective_importance(entry: MemoryEntry, profile: DecayProfile, now: datetime) -> float:
    """Stored importance discounted by age; pinned entries keep all of it."""
    return assess(entry, profile, now)[0]


def should_consolidate(entry: MemoryEntry, profile: DecayProfile, now: datetime) -> bool:
    """True when the entry has aged out of recall (never for pinned entries)."""
    return assess(entry, profile, now)[1]


def decay_block_with(block: Mapping[str, Mapping], changes: Iterable[tuple[str, str, Any]]) -> dict[str, dict]:
    """A card's ``decay`` block with ``changes`` ((type, field, value); a None value clears the field
    back to its default, a type left empty goes) laid in: what `agent set --decay` writes.

    Each change is checked on its own, so a bad one is the caller's
    :class:`InvalidRequestError` (exit 2), never blamed on the card; what the
    card held already, valid or not, is kept unless a change names it, so a
    field hand-edited wrong is replaced or cleared here (the whole block is
    checked by the card's reader, which names what is still wrong).
    """
    merged = {kind: dict(fields) if isinstance(fields, Mapping) else fields for kind, fields in block.items()}
    for kind, field, value in changes:
        if value is None:
            fields = merged.get(kind)
            if isinstance(fields, dict):
                fields.pop(field, None)
            if kind in merged and not (isinstance(fields, dict) and fields):  # emptied, or no object at all
                del merged[kind]
            continue
        try:
            resolve_decay_profiles({kind: {field: value}}, source="--decay")  # names the field
        except ConfigError as exc:
            why = str(exc).replace("--decay.", "--decay ", 1)
            raise InvalidRequestError(f"{why}; e.g. --decay episodic.half_life_days=3 (man/federation.md)") from None
        fields = merged.get(kind)
        merged[kind] = {**(fields if isinstance(fields, dict) else {}), field: value}
    return merged


def resolve_decay_profiles(
    overrides: Mapping[str, Mapping] | None = None, *, source: str = "decay"
) -> dict[MemoryType, DecayProfile]:
    """Defaults with an agent card's ``decay`` block laid over them, field by field.

    ``overrides`` maps a type name to the fields it changes, e.g.
    ``{"episodic": {"half_life_days": 3}}``. An unknown type or a bad value is
    a :class:`ConfigError` naming ``source`` and the field.
    """
    profiles = dict(DEFAULT_PROFILES)
    for type_name, fields in (overrides or {}).items():
        try:
            memory_type = MemoryType(type_name)
        except ValueError:
            known = ", ".join(t.value for t in MemoryType)
            raise ConfigError(f"{source}: unknown memory type '{type_name}' (use {known})") from None
        if not isinstance(fields, Mapping):
            raise ConfigError(f"{source}.{type_name}: must be an object of decay fields")
        merged = {**profiles[memory_type].model_dump(), **fields}
        try:
            profiles[memory_type] = DecayProfile.model_validate(merged)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            suffix = f".{where}" if where else ""
            raise ConfigError(f"{source}.{type_name}{suffix}: {first['msg']}") from None
    return profiles
