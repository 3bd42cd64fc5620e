"""Digests condensed under a byte budget: prune shortens what is already covered before it archives
the only record of a fact.

A digest carries up to five aged-out turns whose rows are archived, so archiving the
digest loses them; yet it keeps most of their bytes (88% on LoCoMo). Before a
byte budget takes a digest or an undigested fact, prune rewrites digests to
their date, each turn's speaker and the rarest of each turn's content words the digest holds
("On 8 May 2023: Caroline: went LGBTQ support group transgender stories.
Melanie: painting sunrise lake."), a share of them at a time: every digest
loses its commonest words before any digest loses more, and only as many
digests are rewritten as the budget needs. Each rewrite is a ledgered edit
(op ``condense``, the old text in its before-image), so ``memory history``
shows what it said; the sources and their edges, visibility, scope and tags
stay as they were. A digest is a row consolidation inserted (its ledger's
``consolidate`` insert): a merge's keeper also carries sources, but its text
is its own, not its sources'.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from memory.sqlite import mutations
from memory.sqlite.batches import batches, select_in
from memory.sqlite.consolidation import SOURCES, digest_sql
from memory.sqlite.fact_words import content_words, speaker_of, spelled_words
from memory.types import Visibility

OP = "condense"
# Of each turn's distinct content words, the rarest share kept (at least one), mildest first: the
# first keeps every content word and drops only stop words and small talk.
SHARES = (1.0, 0.75, 0.5, 0.35, 0.2, 0.0)
WINDOW = 500  # digests read at a time

_DATED = re.compile(r"^(?:On|From) [^:]*: ")

DIGEST_SQL = digest_sql("memories")
"""A candidate column of the prune order: the row is a digest consolidation wrote."""


def condensed_text(digest: str, turns: Sequence[str], held: Counter, share: float) -> str:
    """``digest``'s date and, for each of its ``turns`` in order, the speaker and the rarest ``share``
    of its distinct content words by ``held`` (rows holding each word), in the turn's own order."""
    dated = _DATED.match(digest)
    # Only words the digest still holds: it left some of a turn out (a question), and an operator may
    # have written a word out of it since (`memory set --content`); condensing never brings one back.
    own = {key for _, key in spelled_words(digest) if key is not None}
    parts, speaker_last = [], None
    for turn in turns:
        speaker = speaker_of(turn)[0]
        spelled = [(word, key) for word, key in spelled_words(turn) if key in own]
        if not spelled:
            continue
        keys = list(dict.fromkeys(key for _, key in spelled))
        kept = set(sorted(keys, key=lambda k: (held[k], k))[:max(1, math.ceil(share * len(keys)))])
        words = []
        for word, key in spelled:
            if key in kept:
                words.append(word)
                kept.discard(key)  # each word once
        text = " ".join(words) + "."
        parts.append(f"{speaker}: {text}" if speaker and speaker != speaker_last else text)
        speaker_last = speaker
    return (dated.group(0) if dated else "") + " ".join(parts)


def _size(text: str) -> int:
    return len(text.encode())


class Condenser:
    """Shortens digests inside a prune's transaction, once, when its walk reaches what it would
    otherwise archive; a dry run only records the rewrites."""

    def __init__(self, raw, actor: str, dry_run: bool):
        self.raw, self.actor, self.dry_run = raw, actor, dry_run
        self.decisions: list[dict] = []

    def __call__(self, order: Sequence[tuple[str, int]], excess: int) -> dict[str, int]:
        """Rewrite digests of ``order`` ((id, bytes), least worth first) until ``excess`` bytes are
        saved or none can shrink more; the new size of each rewritten one."""
        held = self._held()
        was = dict(order)
        sizes = dict(was)
        texts: dict[str, str] = {}
        shown: set[str] = set()
        saved = 0
        for share in SHARES:
            for window in batches([entry_id for entry_id, _ in order], WINDOW):
                contents, turns = self._read(window)
                shown |= self._visible(window)
                for entry_id in window:
                    if saved >= excess:
                        return self._apply(texts, sizes, was, shown)
                    text = condensed_text(contents[entry_id], turns.get(entry_id, ()), held, share)
                    if turns.get(entry_id) and _size(text) < sizes[entry_id]:
                        saved += sizes[entry_id] - _size(text)
                        sizes[entry_id], texts[entry_id] = _size(text), text
        return self._apply(texts, sizes, was, shown)

    def _held(self) -> Counter:
        """How many live rows hold each content word: a word's rarity in the store."""
        held: Counter = Counter()
        for (content,) in self.raw.execute("SELECT content FROM memories WHERE archived = 0"):
            held.update(content_words(content))
        return held

    def _read(self, ids: list[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
        """The digests' texts, and each one's sources' texts in the order they were said."""
        contents = dict(select_in(self.raw, "SELECT id, content FROM memories WHERE id IN ({marks})", ids))
        turns: dict[str, list[str]] = {}
        sql = (f"SELECT e.src_id, m.content FROM memory_edges e JOIN memories m ON m.id = e.dst_id "
               f"WHERE e.relation = '{SOURCES}' AND e.src_id IN ({{marks}}) ORDER BY e.src_id, m.created_at, m.seq")
        for src, content in select_in(self.raw, sql, ids):
            turns.setdefault(src, []).append(content)
        return contents, turns

    def _visible(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` are visible: a hidden or private digest's new text is never listed."""
        return {row[0] for row in select_in(self.raw, "SELECT id FROM memories WHERE visibility = ? AND id IN ({marks})",
                                            ids, before=(Visibility.VISIBLE.value,))}

    def _apply(self, texts: dict[str, str], sizes: dict[str, int], was: dict[str, int], shown: set[str]) -> dict[str, int]:
        """Rewrite (or, in a dry run, only record) each digest; the record of a hidden or private one
        holds no text (``prune --json`` prints it, and cron logs it), only its id and sizes."""
        for entry_id, text in texts.items():
            self.decisions.append({"id": entry_id, "bytes": [was[entry_id], sizes[entry_id]],
                                   "content": text if entry_id in shown else None})
            if not self.dry_run:
                mutations.update(self.raw, [entry_id], OP, self.actor, "content = ?", (text,))
        return {entry_id: sizes[entry_id] for entry_id in texts}
