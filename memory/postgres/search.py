"""The PostgreSQL read SQL: ordered listing, rows by id, keyword ranking, KNN, term coverage.

Each function runs on a pooled connection and takes an admission clause
(memory/postgres/admission.py), so nothing is read that the predicate does not admit.
"""

from __future__ import annotations

from memory.postgres.fts import ROW_VECTOR, STOPWORD_CONFIG, STOPWORD_VECTOR, TEXT_CONFIG, rank, search_words
from memory.postgres.mutations import SELECT_COLUMNS
from memory.postgres.vectors import VEC_TABLE
from memory.query_terms import DF_BUDGET, DF_CAP, focus
from memory.sqlite.context import AFTER, BEFORE

KEYWORD_CANDIDATES = 1000  # matches ranked per keyword query (see keyword)


async def ordered(conn, clause, limit: int, offset: int = 0):
    n = len(clause.params)
    sql = (
        f"SELECT {SELECT_COLUMNS} FROM memories m WHERE {clause.sql} "
        f"ORDER BY m.pinned DESC, m.importance DESC, m.created_at DESC, m.seq LIMIT ${n + 1} OFFSET ${n + 2}"
    )
    return await conn.fetch(sql, *clause.params, limit, offset)


async def after(conn, clause, after_seq: int, limit: int):
    """A keyset page: the first ``limit`` admitted rows past ``after_seq`` in seq order (see ordered's OFFSET)."""
    n = len(clause.params)
    sql = f"SELECT {SELECT_COLUMNS}, m.seq FROM memories m WHERE m.seq > ${n + 1} AND {clause.sql} ORDER BY m.seq LIMIT ${n + 2}"
    return await conn.fetch(sql, *clause.params, after_seq, limit)


async def by_ids(conn, ids: list[str], clause):
    sql = f"SELECT {SELECT_COLUMNS} FROM memories m WHERE m.id = ANY($1::text[]) AND {clause.sql}"
    return await conn.fetch(sql, ids, *clause.params)


async def coverage(conn, entry_id: str, tq) -> float:
    """The share of the words of ``tq`` the row ``entry_id`` contains, as memory.sqlite.fts.coverage
    (each word stemmed alike, a plain number not in the date words)."""
    found = " + ".join(
        f"({ROW_VECTOR} @@ {tq.word(i, f'${2 + i}', TEXT_CONFIG)} OR {STOPWORD_VECTOR} @@ {tq.word(i, f'${2 + i}', STOPWORD_CONFIG)})::int"
        for i in range(len(tq.tokens))
    )
    return (await conn.fetchval(f"SELECT {found} FROM memories m WHERE m.id = $1", entry_id, *tq.tokens) or 0) / len(tq.tokens)


async def keyword(conn, tq, clause, limit: int, cap: int | None = None):
    """The best ``limit`` admitted rows by ts_rank_cd among a bounded candidate set.

    The GIN index finds admitted matches; only the first
    :data:`KEYWORD_CANDIDATES` of them (at least 50 per wanted row) are
    ranked, so a common word costs the same at 1M rows as at 10k instead of
    detoasting and ranking every match (36 ms at 100k). The bound is shared
    among the query's words, each taking its own first matches: one bound
    over the OR of them filled up with a common word's rows in table order,
    so "meeting auditors" lost the one row holding "auditors" behind 1,000
    older meetings, where SQLite ranked it first. A word matching more rows
    than its share ranks its newest matches: recall is bounded, precision
    kept. (Its first matches in table order were its oldest: "standup" on a
    pool of 1,500 standup notes never found the one just written, which SQLite
    ranked first; newest first costs the same, 0.8-1.2 ms at 100k rows.)
    ts_rank_cd knows nothing of how rare a word is, so each row's rank is
    weighted by the rarity of the words it holds (see :data:`_RARITY`), as
    FTS5's BM25 weighs them. A stop-word-only query matches on the stemming,
    stop-word-keeping configuration computed per row (no index, so one scan,
    not one per word): rare, and what SQLite's FTS5 would still find.
    ``cap``: how many matches are ranked, if not that bound.
    """
    n = len(clause.params)
    cap = cap or max(KEYWORD_CANDIDATES, 50 * limit)
    # The query inline, not as a FROM item: joined from a function scan, the GIN
    # index went unused (13 ms instead of under 1 ms on 5,000 rows).
    q = tq.any_word(n + 3)
    if tq.config != TEXT_CONFIG or len(tq.tokens) < 2:
        vector, finds = (ROW_VECTOR, tq.finds(n + 3)) if tq.config == TEXT_CONFIG else (STOPWORD_VECTOR, f"{STOPWORD_VECTOR} @@ {q}")
        sql = (
            f"SELECT * FROM (SELECT {SELECT_COLUMNS}, {rank(vector, q)} AS rank, m.seq FROM memories m "
            f"WHERE {finds} AND {clause.sql} ORDER BY m.seq DESC LIMIT ${n + 2}) AS c ORDER BY rank DESC, seq LIMIT ${n + 1}"
        )
        return await conn.fetch(sql, *clause.params, limit, cap, *tq.tokens)
    each = " UNION ALL ".join(
        f"(SELECT m.seq, {i} AS word FROM memories m WHERE {tq.finds(n + 3, i)} "
        f"AND {clause.sql} ORDER BY m.seq DESC LIMIT ${n + 2})"
        for i in range(len(tq.tokens))
    )
    sql = (
        f"WITH hits AS MATERIALIZED ({each}), "
        "found AS (SELECT word, count(*) AS df FROM hits GROUP BY word), "
        f"weighted AS MATERIALIZED (SELECT h.seq, sum({_RARITY.format(share=f'${n + 2}')}) AS weight "
        "FROM hits h JOIN found f USING (word) GROUP BY h.seq) "
        f"SELECT {SELECT_COLUMNS}, w.weight * {rank(ROW_VECTOR, q)} AS rank, m.seq "
        # = ANY(ARRAY(...)) looks the candidates up by seq; joined alone, the planner hashed them
        # against a scan of the whole table.
        "FROM weighted w JOIN memories m ON m.seq = w.seq WHERE m.seq = ANY(ARRAY(SELECT seq FROM weighted)) "
        f"ORDER BY rank DESC, m.seq LIMIT ${n + 1}"
    )
    return await conn.fetch(sql, *clause.params, limit, -(-cap // len(tq.tokens)), *tq.tokens)


async def focused_keyword(conn, tq, clause, limit: int):
    """The best ``limit`` admitted rows on the few words :func:`memory.query_terms.focus` picks,
    as SQLite's candidate search (memory.sqlite.fts.focused_match): the rare words' best matches,
    then the rarest common word's among its newest ``DF_BUDGET`` rows.

    Each word's memories are counted bounded (``LIMIT DF_CAP + 1``), all in one round trip, over
    content and tags (a row's date words aside, as SQLite's ``content`` column). A stop-word-only
    query has no index to count on: it is ranked whole, as :func:`keyword` does.
    """
    if tq.config != TEXT_CONFIG:
        return await keyword(conn, tq, clause, limit)
    counts = ", ".join(
        f"(SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.tsv @@ {tq.word(i, f'${2 + i}')} LIMIT $1) AS c)"
        for i in range(len(tq.tokens))
    )
    row = await conn.fetchrow(f"SELECT {counts}", DF_CAP + 1, *tq.tokens)
    picked = focus(list(zip(tq.tokens, row)))
    if picked is None:
        return []
    rows = await keyword(conn, tq.narrowed(picked.rare), clause, limit) if picked.rare else []
    if picked.common is not None and len(rows) < limit:
        seen = {r["seq"] for r in rows}
        more = await keyword(conn, tq.narrowed([picked.common]), clause, limit, cap=DF_BUDGET)
        rows += [r for r in more if r["seq"] not in seen][: limit - len(rows)]
    return rows


# How much a word a row holds weighs in its rank: ln(1 + share / matches), the words' own
# matches counted up to their share of the candidate set. A word only this row holds weighs
# about 6 at a share of 500, one that fills its share ln 2: the ordering BM25's idf gives,
# from counts the candidate set already made (no table statistics, no extra read).
_RARITY = "ln(1 + {share}::float8 / f.df)"


async def knn(conn, vector_text: str, clause, limit: int):
    """Nearest admitted rows by cosine distance, nearest first.

    The HNSW index ranks a window of candidates on the vector table alone (a
    plan the planner always takes; joined and filtered in one query it chose a
    full sort at small sizes), then admission and filters run on the window.
    A window that leaves the page short widens until enough rows pass or the
    vectors run out, as the SQLite keyword leg does. Settings: see open_pool.
    """
    sql = (
        f"SELECT {SELECT_COLUMNS}, c.distance FROM (SELECT seq, embedding <=> $1::vector AS distance "
        f"FROM {VEC_TABLE} ORDER BY embedding <=> $1::vector LIMIT $2) AS c "
        f"JOIN memories m ON m.seq = c.seq WHERE {clause.sql} ORDER BY c.distance LIMIT ${len(clause.params) + 3}"
    )
    window, total = max(4 * limit, 40), None
    while True:
        rows = await conn.fetch(sql, vector_text, window, *clause.params, limit)
        if len(rows) >= limit:
            return rows
        if total is None:
            total = await conn.fetchval(f"SELECT count(*) FROM {VEC_TABLE}")
        if window >= total:
            return rows
        window = min(window * 8, total)


async def keyword_leg(conn, tq, clause, limit: int):
    """The keyword leg of a hybrid recall on one connection: the best ``limit`` rows and the
    best one's :func:`coverage` of the query's words."""
    rows = await keyword(conn, tq, clause, limit)
    return rows, await coverage(conn, rows[0]["id"], tq) if rows else 0.0


# A word pair said together: either order, at most two words between, as FTS5's NEAR(a b, 2) (on the
# content and tags: never a row's last word and its first date word, v9).
_PAIR = "(m.tsv @@ to_tsquery('english'::regconfig, {q}))::int"


async def turn_context(conn, ids: list[str], pairs: list[tuple[str, str]], clause, gate):
    """For each of ``ids`` that ``clause`` admits (numbered from $2): the id of the turn before it
    that ``gate`` admits (numbered after the clause), and the share of ``pairs`` its text holds."""
    n = 1 + len(clause.params) + len(gate.params)
    near = []
    for first, second in pairs:
        a, b = search_words(f"${n + 1 + 2 * len(near)}::text"), search_words(f"${n + 2 + 2 * len(near)}::text")
        spans = [f"{x} || ' <{d}> ' || {y}" for d in (1, 2, 3) for x, y in ((a, b), (b, a))]
        near.append(_PAIR.format(q=" || ' | ' || ".join(spans)))
    share = f"({' + '.join(near)})::float / {len(near)}" if near else "0.0"
    sql = (
        f"SELECT m.id, ({BEFORE.format(column='id', c='m.', gate=gate.sql)}) AS before, {share} AS share FROM memories m "
        f"WHERE m.id = ANY($1::text[]) AND {clause.sql}"
    )
    words = [w for pair in pairs for w in pair]
    rows = await conn.fetch(sql, ids, *clause.params, *gate.params, *words)
    return {r["id"]: r["before"] for r in rows if r["before"] is not None}, {r["id"]: r["share"] for r in rows if r["share"]}


async def adjacent_ids(conn, ids: list[str], clause, gate) -> dict[str, list[str]]:
    """For each of ``ids`` that ``clause`` admits (numbered from $2), the ids of the turns before and
    after it in its session that ``gate`` admits (numbered after the clause): memory/sqlite/context.py's
    definition, as SQLite's session neighbours read it."""
    before, after = (side.format(column="id", c="m.", gate=gate.sql) for side in (BEFORE, AFTER))
    sql = (
        f"SELECT m.id, ({before}) AS before, ({after}) AS after FROM memories m "
        f"WHERE m.id = ANY($1::text[]) AND m.source_session_id IS NOT NULL AND {clause.sql}"
    )
    rows = await conn.fetch(sql, ids, *clause.params, *gate.params)
    return {r["id"]: [n for n in (r["before"], r["after"]) if n is not None] for r in rows}
