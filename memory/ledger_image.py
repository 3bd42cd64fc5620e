"""How a ledger row's before and after images are written, the same for every engine.

orjson, because encoding the after image of each new row was an eighth of a
bulk import's write thread with the standard library's encoder (5.8 us an
image against 0.8). Keys are sorted, so one row's images compare as text.
"""

from __future__ import annotations

import orjson


def encode(image: dict | None) -> str | None:
    """``image`` as JSON text (None stays None: an insert has no before image, a delete no after)."""
    return None if image is None else orjson.dumps(image, option=orjson.OPT_SORT_KEYS).decode()
