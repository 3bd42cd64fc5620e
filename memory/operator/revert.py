"""A memory brought back to what one of its ledger rows left it (``arcana memory revert ID --to SEQ``).

Prune's condensing, an operator's ``memory set`` and a reconciler's edit
rewrite a memory in place; the ledger keeps each row's after image. A revert
reads the image row SEQ left and writes back the fields an operator may set
(:data:`REVERTIBLE`) through the one operator edit (``update``), so it is
ledgered like any change and reaches the memory's global copy. Version links,
dates and provenance are not rewound: a revert changes what a memory says,
not its history. Nor does it lift a restriction: a memory hidden or made
private since that row stays so (:func:`keep_restrictions`, as for an import);
lifting one is ``memory set --visibility``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memory.errors import InvalidRequestError, NotFoundError, UnreadableRowError
from memory.operator.edits import EDITABLE, EditReport, MemoryEditor, keep_restrictions
from memory.protocols import RepairsRows
from memory.types import Audience, LedgerRecord, MemoryEntry, Visibility

REVERTIBLE = EDITABLE


def reverted_fields(current: MemoryEntry, records: Sequence[LedgerRecord], seq: int) -> dict[str, Any]:
    """The :data:`REVERTIBLE` fields as ledger row ``seq`` of ``records`` (``current``'s history) left
    them, its visibility never less restricted than ``current``'s."""
    record = next((r for r in records if r.seq == seq), None)
    if record is None:
        seqs = ", ".join(str(r.seq) for r in records[-5:])
        raise NotFoundError(f"the memory has no ledger row {seq} (its latest: {seqs}); see `arcana memory history ID`")
    if record.after is None:
        raise InvalidRequestError(f"ledger row {seq} removed the memory; give a row that left it in place")
    image = record.after
    tags = json.loads(image["tags"]) if isinstance(image["tags"], str) else image["tags"]
    then = current.model_copy(update={"visibility": Visibility(image["visibility"])})
    return {**{k: image[k] for k in REVERTIBLE}, "tags": tags, "pinned": bool(image["pinned"]),
            "visibility": keep_restrictions(current, then).visibility}


async def revert_unreadable(editor: MemoryEditor, prefix: str, seq: int) -> EditReport | None:
    """A revert of a row an outside edit left unreadable, which no entry can be read from (None when
    it reads: revert it through :meth:`MemoryEditor.apply`). Ledger row ``seq``'s :data:`REVERTIBLE`
    fields are written back, and whatever else stops the row reading, in this store only: a global
    copy was never that row (revert again, once it reads, to reach the copy)."""
    if not isinstance(editor.store, RepairsRows):
        return None
    entry_id = await editor.resolve_recorded(prefix)
    try:
        await editor.store.get(entry_id, audience=Audience.OPERATOR, include_archived=True)
        return None
    except UnreadableRowError:
        pass
    changed = await editor.store.repair(entry_id, seq, REVERTIBLE)
    return EditReport(entry_id, bool(changed), await editor.store.get(entry_id, audience=Audience.OPERATOR, include_archived=True))
