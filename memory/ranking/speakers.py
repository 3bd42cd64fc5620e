"""Who said a chat line ("Caroline: …"), and the lift a query gives the lines of a speaker it names.

"What did Caroline research?" is answered by a line Caroline said, yet the
line that ranks first is often the other speaker's reply, which names her
("Thanks for the tip, Caroline…"). Among a hybrid query's best candidates
(:func:`memory.ranking.fusion.rerank`), the lines of a speaker the query
names (as a whole word, "Caroline's" included) gain SPEAKER_LIFT of their
score; a query naming no speaker of its candidates ranks as before.

LoCoMo dev through the federation, replayed, fitted on two conversations and
scored on the third (two folds chose 0.75, one 1.0): any@5 / any@10 / MRR@10
0.786 / 0.872 / 0.615 -> 0.812 / 0.875 / 0.659 (man/benchmarks.md, "Who
said it").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SPEAKER_LIFT = 0.75
_SPEAKER = re.compile(r"^\s*([A-Z][\w.'-]*(?: [A-Z][\w.'-]*)?):\s+")


def speaker_of(text: str) -> tuple[str | None, str]:
    """("Caroline", "rest") for a chat line "Caroline: rest"; (None, text) otherwise."""
    match = _SPEAKER.match(text)
    return (match.group(1), text[match.end():]) if match else (None, text)


def lift_named_speakers(
    scores: Mapping[str, float], content: Mapping[str, str], query_text: str, lift: float = SPEAKER_LIFT
) -> dict[str, float]:
    """``scores`` with each line whose speaker ``query_text`` names times ``1 + lift``
    (``content``: each scored id's text, where its speaker is read)."""
    speaker = {i: speaker_of(content[i])[0] for i in scores}
    named = {s for s in set(speaker.values()) if s and re.search(rf"(?<!\w){re.escape(s)}(?!\w)", query_text)}
    if not named:
        return dict(scores)
    return {i: v * (1.0 + lift) if speaker[i] in named else v for i, v in scores.items()}
