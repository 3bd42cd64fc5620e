"""Index upkeep for one store: rebuild the keyword index, backfill or re-embed vectors.

Run by ``arcana reindex`` (often from cron, under the reindex lock). Rows are
never touched: the keyword index is rebuilt from them and vectors are added
beside them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from memory.adapters.vector import FillReport, VectorAdapter
from memory.embedding.base import Embedder
from memory.sqlite.connection import transaction


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
    reembed: Embedder | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ReindexReport:
    """Rebuild what ``keyword``/``reembed`` ask for; vectors are always brought up to date."""
    report = ReindexReport()
    if keyword:
        report.keyword_rows = await vectors.store.run(_rebuild_fts)
    if reembed is not None:
        report.vectors = await vectors.reembed(reembed, on_progress)
        report.repinned = True
    else:
        report.vectors = await vectors.backfill(on_progress)
    return report
