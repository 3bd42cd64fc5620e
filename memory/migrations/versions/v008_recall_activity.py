"""v8: recall activity — how many recalls a store answered, and how many memories they returned, per day.

Bookkeeping about reads, like ``access_count``: folded in with the buffered
access hits (memory/sqlite/mutations.py ``touch_access``), never ledgered.
``day`` is the UTC day number (unix seconds // 86400).
"""

VERSION = 8
NAME = "recall_activity"

STATEMENTS = [
    """
    CREATE TABLE recall_activity (
        day INTEGER PRIMARY KEY,
        recalls INTEGER NOT NULL DEFAULT 0,
        hits INTEGER NOT NULL DEFAULT 0
    )
    """,
]
