"""Storage backends behind the MemoryAdapter protocol."""
