"""Consolidation: merging restatements and digesting old episodes, decided as a plan (plan.py)."""
