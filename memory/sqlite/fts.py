"""A query's terms (memory/query_terms.py) as safe, fast FTS5 lookups: the MATCH expression of
the keyword leg, a focused match for reconciliation, coverage and word pairs for fusion.

Each token is quoted (so no operator or column syntax survives) and OR-joined;
the porter tokenizer on the index stems both sides. A number the query does
not say as a date is not looked for in a row's date in words.
"""

from __future__ import annotations

from memory.query_terms import DF_CAP, QueryTerms, focus
from memory.sqlite.batches import select_in
from memory.sqlite.rows import admitted_rows


def term_match(terms: QueryTerms, token: str) -> str:
    """``token`` of ``terms`` as a MATCH on every column, but a plain number never on the row's
    date in words (``dated``: "7 May 2023"), which would find every row written on a 7th."""
    return f'- {{dated}} : "{token}"' if token in terms.plain_numbers else f'"{token}"'


def match_expression(terms: QueryTerms) -> str | None:
    """A MATCH expression for ``terms``, or None when there is no searchable word."""
    tokens = terms.tokens
    if not tokens:
        return None
    return " OR ".join(term_match(terms, token) for token in tokens)


# Majority words. FTS5's bm25 clamps the idf of a word in at least half the rows to
# 1e-6 (fts5_aux.c), so such a word moves a row's score by under 2.2e-6 (idf x (k1 + 1)),
# yet OR-ing it in makes FTS5 count and score every row that holds it ("the about" on
# the 1M-row bench store: 1,559 ms, 165 ms without "the", which is in 90% of its rows).
# On a store of MAJORITY_FROM rows or more (by seq span), a word in more than
# MAJORITY_SHARE of the rows of each of SAMPLE_WINDOWS windows of WINDOW_ROWS rows
# spread over the table is left out of the match. A word that falls short in any window
# is kept (a skewed word is kept, not dropped), and that window ends its sampling: a
# rare word costs one count, a query 0.2-0.8 ms at 1M.
MAJORITY_FROM = 20_000
SAMPLE_WINDOWS = 16
WINDOW_ROWS = 256
MAJORITY_SHARE = 0.6
MIN_SAMPLED = 1_000  # rows in the windows together, or no word is left out (a sparse, much-pruned store)


def _windows(raw) -> list[tuple[int, int, int]]:
    """(first seq, last seq, rows) of each non-empty sampling window, centred in equal slices
    of the seq span (FTS5 seeks a rowid range); [] on a store under MAJORITY_FROM rows or with
    fewer than MIN_SAMPLED rows in its windows."""
    # two subqueries: each is one b-tree seek; min() and max() in one SELECT scan the table (126 ms at 1M)
    low, high = raw.execute("SELECT (SELECT min(seq) FROM memories), (SELECT max(seq) FROM memories)").fetchone()
    if low is None or high - low + 1 < MAJORITY_FROM:
        return []
    span, windows = high - low + 1, []
    for i in range(SAMPLE_WINDOWS):
        first = low + span * (2 * i + 1) // (2 * SAMPLE_WINDOWS) - WINDOW_ROWS // 2
        last = first + WINDOW_ROWS - 1
        rows = raw.execute("SELECT count(*) FROM memories WHERE seq BETWEEN ? AND ?", (first, last)).fetchone()[0]
        if rows:
            windows.append((first, last, rows))
    return windows if sum(rows for _, _, rows in windows) >= MIN_SAMPLED else []


def _majority(raw, token: str, windows: list[tuple[int, int, int]]) -> bool:
    sql = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ? AND rowid BETWEEN ? AND ?"
    for first, last, rows in windows:
        if raw.execute(sql, (f'"{token}"', first, last)).fetchone()[0] <= MAJORITY_SHARE * rows:
            return False
    return True


def without_majority(raw, terms: QueryTerms) -> QueryTerms | None:
    """``terms`` less its majority words (see MAJORITY_SHARE), or None when none is left out,
    every word is one, or the store is too small to sample. A query of one word is never sampled."""
    if len(terms.tokens) < 2:
        return None
    windows = _windows(raw)
    if not windows:
        return None
    kept = tuple(t for t in terms.tokens if not _majority(raw, t, windows))
    return terms.narrowed(kept) if kept and len(kept) < len(terms.tokens) else None


# A word pair both of whose words are in more memories than this is matched per candidate
# (see pair_share); counting that far costs under a millisecond a word.
PAIR_DF_CAP = 5_000


def document_count(raw, token: str, cap: int) -> int:
    """How many memories hold ``token`` in their content, counted no further than ``cap``."""
    sql = "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"
    return raw.execute(sql, (f'content : "{token}"', cap)).fetchone()[0]


def focused_match(raw, parsed: QueryTerms) -> tuple[str | None, str | None] | None:
    """MATCH expressions on the ``content`` column for the words :func:`memory.query_terms.focus`
    picks: the rare ones OR-ed (None if none), and the rarest common one (None if none). None
    when no word of the query is in the index."""
    picked = focus([(token, document_count(raw, token, DF_CAP + 1)) for token in parsed.tokens])
    if picked is None:
        return None
    return _in_content(picked.rare) if picked.rare else None, _in_content([picked.common]) if picked.common else None


def _in_content(tokens) -> str:
    return "content : (" + " OR ".join(f'"{token}"' for token in tokens) + ")"


def every_word_match(words) -> str:
    """A MATCH on the ``content`` column for rows holding every one of ``words``: content words
    (:mod:`memory.sqlite.fact_words`), whose plural "s" was dropped, so each is matched with it too."""
    return _word_match(words, "AND")


def any_word_match(words) -> str:
    """:func:`every_word_match` for rows holding any one of ``words``."""
    return _word_match(words, "OR")


def _word_match(words, joiner: str) -> str:
    return "content : (" + f" {joiner} ".join(f'("{w}" OR "{w}s")' for w in words) + ")"


def coverage(raw, terms: QueryTerms, entry_id: str, clause_sql: str, params: tuple) -> float:
    """The share of the query's search words that the FTS row of ``entry_id`` contains (any column).

    What tells a keyword match on the question's words from one on a stray
    word (see :mod:`memory.ranking.fusion`); stemmed by the index itself,
    one indexed lookup per word. Only a row admitted by ``clause_sql`` (alias
    ``m``) is looked at; 0 for any other, or when there is nothing to match.
    """
    tokens = terms.tokens
    row = raw.execute(f"SELECT m.seq FROM memories m WHERE m.id = ? AND {clause_sql}", (entry_id, *params)).fetchone()
    if not tokens or row is None:
        return 0.0
    sql = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ? AND rowid = ?"
    found = sum(raw.execute(sql, (term_match(terms, token), row[0])).fetchone()[0] for token in tokens)
    return found / len(tokens)


def pair_share(raw, terms: QueryTerms, entry_ids: list[str], clause_sql: str, params: tuple) -> dict[str, float]:
    """For each of ``entry_ids`` admitted by ``clause_sql`` (alias ``m``), the share of the query's
    adjacent search-word pairs that its own text holds within two words of each other
    (FTS5 ``NEAR`` on the ``content`` column).

    For re-ranking the candidates the legs found: only a share comes back,
    and only for those rows, none for a row the query does not admit. Stemmed
    by the index; one lookup per pair; {} for a query of fewer than two
    search words.
    """
    pairs = terms.pairs
    if not pairs or not entry_ids:
        return {}
    seq_of = {r["seq"]: r["id"] for r in admitted_rows(raw, "id", entry_ids, clause_sql, params)}
    if not seq_of:
        return {}
    common = {t for t in terms.tokens if document_count(raw, t, PAIR_DF_CAP + 1) > PAIR_DF_CAP}
    found: dict[str, int] = {}
    for first, second in pairs:
        match = f'content : NEAR("{first}" "{second}", 2)'
        if first in common and second in common:
            # both words in most of a large store: the whole NEAR walks both posting lists
            # (285 ms for two words in 70% and 44% of 1M rows), one per candidate is bounded (9 ms)
            seqs = [r[0] for r in select_in(raw, "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
                                            "AND rowid IN ({marks})", list(seq_of), before=(match,))]
        else:
            # one MATCH per pair, intersected here: a rowid IN list made FTS5 evaluate the
            # NEAR once per candidate (hybrid p50 +27 ms on a 663-turn store)
            seqs = [r[0] for r in raw.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (match,))]
        for seq in seqs:
            if seq in seq_of:
                found[seq_of[seq]] = found.get(seq_of[seq], 0) + 1
    return {entry_id: n / len(pairs) for entry_id, n in found.items()}
