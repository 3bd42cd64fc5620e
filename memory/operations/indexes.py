"""Index upkeep for one store: rebuild the keyword index, backfill or re-embed vectors.

Run by ``arcana reindex`` (often from cron, under the reindex lock), on
SQLite stores and on server pools alike. Rows are
never touched: the keyword index is rebuilt from them and vectors are added
beside them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from memory.adapters.vector import VectorAdapter
from memory.embedding.base import Embedder
from memory.sqlite.connection import transaction
from memory.types import FillReport


@dataclass
class ReindexReport:
    keyword_rows: int | None = None
    vectors: FillReport | None = None
    repinned: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


def _rebuild_fts(raw) -> int:
    with transaction(raw):
        raw.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
    return raw.execute("SELECT count(*) FROM memories").fetchone()[0]


async def reindex(
    vectors: VectorAdapter,
    *,
    keyword: bool = True,
    vectors_wanted: bool = True,
    reembed: Embedder | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ReindexReport:
    """Rebuild what ``keyword``/``reembed`` ask for; vectors are brought up to date unless
    ``vectors_wanted`` is false (a home configured keyword-only: no embedder to ask).

    ``vectors`` is a :class:`VectorAdapter` over a SQLite store, or a server
    store (:class:`PostgresAdapter`, semantic itself), whose keyword index is a
    generated ``tsvector`` that cannot go stale: nothing to rebuild there, its
    rows are counted.
    """
    report = ReindexReport()
    if keyword:
        on_server = not isinstance(vectors, VectorAdapter)
        report.keyword_rows = await (vectors.count() if on_server else vectors.store.run(_rebuild_fts))
    if reembed is not None:
        report.vectors = await vectors.reembed(reembed, on_progress)
        report.repinned = True
    elif vectors_wanted:
        report.vectors = await vectors.backfill(on_progress)
    return report
