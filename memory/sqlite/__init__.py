"""SQLite plumbing shared by every store: connections, FTS queries, admission, ledger."""
