"""What an operator does to memories: edits that reach every copy, and which stores a selection means."""
