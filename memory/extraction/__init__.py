"""Memory extraction: language signals, scoring, and the heuristic / LLM extractors."""
