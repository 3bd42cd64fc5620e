"""Arcana's in-process memory core: stores, search, federation. No CLI imports here."""
