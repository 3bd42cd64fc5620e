"""One module per schema version. Append-only: never edit a shipped migration."""
