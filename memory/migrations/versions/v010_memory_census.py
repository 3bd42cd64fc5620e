"""v10: the memory census — a store's rows by state, in one row kept by triggers.

``SQLiteAdapter.count`` and ``census`` read this row instead of the table:
after every ``arcana run`` turn that wrote, the consolidation check counted the
live rows (19 ms a turn at 300,000 rows), and the web view's first page took
every listed store's census with an aggregate over all its rows (135 ms a store
at 300,000). Triggers keep it exact whatever path writes; a store's existing
rows are counted once, here.
"""

VERSION = 10
NAME = "memory_census"

# Each count and a row's share of it, over ``{r}`` (``new``, ``old`` or the table itself).
_SHARES = {
    "total": "1",
    "recallable": "({r}.visibility = 'visible' AND {r}.archived = 0 AND {r}.valid_to IS NULL)",
    "archived": "({r}.archived != 0)",
    "hidden": "({r}.visibility = 'hidden')",
    "private": "({r}.visibility = 'private')",
    "superseded": "({r}.valid_to IS NOT NULL)",
}


def _shift(sign: str, r: str) -> str:
    """The census ``UPDATE`` adding (``+``) or taking away (``-``) row ``r``'s shares."""
    sets = ", ".join(f"{c} = {c} {sign} {share.format(r=r)}" for c, share in _SHARES.items())
    return f"UPDATE memory_census SET {sets} WHERE id = 1;"


_COLUMNS = ", ".join(f"{c} INTEGER NOT NULL" for c in _SHARES)
_COUNTED = ", ".join(f"coalesce(sum({share.format(r='memories')}), 0)" for share in _SHARES.values())

STATEMENTS = [
    f"CREATE TABLE memory_census (id INTEGER PRIMARY KEY CHECK (id = 1), {_COLUMNS})",
    f"INSERT INTO memory_census (id, {', '.join(_SHARES)}) SELECT 1, {_COUNTED} FROM memories",
    f"CREATE TRIGGER memory_census_insert AFTER INSERT ON memories BEGIN {_shift('+', 'new')} END",
    f"CREATE TRIGGER memory_census_delete AFTER DELETE ON memories BEGIN {_shift('-', 'old')} END",
    (
        "CREATE TRIGGER memory_census_update AFTER UPDATE OF archived, visibility, valid_to ON memories "
        "WHEN old.archived IS NOT new.archived OR old.visibility IS NOT new.visibility OR old.valid_to IS NOT new.valid_to "
        f"BEGIN {_shift('-', 'old')} {_shift('+', 'new')} END"
    ),
]
