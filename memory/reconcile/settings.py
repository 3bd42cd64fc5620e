"""Reconciliation tunables and their measured defaults (kept import-light: config.py reads them)."""

from __future__ import annotations

from dataclasses import dataclass

# Measured on tests/eval/knowledge_update_eval.py (see man/benchmarks.md, "Facts that evolve").
DEFAULT_MIN_SIMILARITY = 0.1
DUPLICATE_SIMILARITY = 0.95
CANDIDATES = 6
DEFAULT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class ReconcileSettings:
    strategy: str = "heuristic"  # heuristic | llm | off
    min_similarity: float = DEFAULT_MIN_SIMILARITY
    duplicate_similarity: float = DUPLICATE_SIMILARITY
    candidates: int = CANDIDATES
    language: str = "en"
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
