"""Any user text becomes a valid FTS5 MATCH expression, and search never raises on it."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.adapters.sqlite import SQLiteAdapter
from memory.sqlite.connection import dbapi
from memory.query_terms import MAX_TOKENS, STOPWORDS, query_tokens, terms
from memory.sqlite.fts import match_expression
from memory.types import MemoryEntry, MemoryQuery

# Text that looks like FTS5 syntax, mixed with anything at all.
SYNTAX = st.sampled_from(
    ['"', "'", "(", ")", "*", ":", "^", "-", "+", "AND", "OR", "NOT", "NEAR", "NEAR(", "content:", "tags:",
     "{content tags}:", "\x00", "\u202e", "ﬁ", "ß", "İ", "日本語", "🙂", "\\", "%", "_", " ", "\n"]
)
ANY_TEXT = st.one_of(st.text(), st.lists(st.one_of(SYNTAX, st.text(max_size=5)), max_size=20).map("".join))


@pytest.fixture(scope="module")
def fts_conn():
    conn = dbapi().connect(":memory:")
    # the store's columns (migrations v005): a number is matched on all but ``dated``
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tags, context, dated, "
                 "tokenize='porter unicode61 remove_diacritics 2')")
    conn.executemany(
        "INSERT INTO t (content, tags, dated) VALUES (?, ?, '7 May 2023')",
        [("the kettle is blue", "[]"), ("near the harbour", '["sea"]'), ("日本語 text", "[]")],
    )
    yield conn
    conn.close()


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT)
def test_match_expression_is_always_valid_fts5(fts_conn, text):
    expression = match_expression(terms(text))
    if expression is None:
        assert query_tokens(text) == []
        return
    fts_conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)", (expression,)).fetchall()
    assert expression.count(" OR ") == len(query_tokens(text)) - 1


@pytest.fixture(scope="module")
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def seeded_store(tmp_path_factory, loop):
    store = SQLiteAdapter(tmp_path_factory.mktemp("fts") / "memory.db")
    loop.run_until_complete(
        store.write_many([MemoryEntry(agent_id="a", content=c) for c in ("kettle blue", "NEAR harbour", "AND or NOT")])
    )
    yield store
    loop.run_until_complete(store.aclose())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ANY_TEXT)
def test_search_never_raises(seeded_store, loop, text):
    found = loop.run_until_complete(seeded_store.search(MemoryQuery(text=text)))
    assert len(found) <= 10


def test_operators_are_searched_as_words():
    assert match_expression(terms('kettle AND "blue" NEAR(x) content:harbour -foo*')) == (
        '"kettle" OR "blue" OR "near" OR "x" OR "content" OR "harbour" OR "foo"'
    )


def test_stopwords_are_dropped_but_kept_when_nothing_else_is_left():
    assert query_tokens("what is the kettle") == ["kettle"]
    assert query_tokens("who am I") == ["who", "am", "i"]
    assert all(word in STOPWORDS for word in ("the", "is", "what"))


def test_tokens_are_distinct_lowercase_and_bounded():
    assert query_tokens("Kettle kettle KETTLE") == ["kettle"]
    assert len(query_tokens(" ".join(f"w{i}" for i in range(100)))) == MAX_TOKENS


@pytest.mark.parametrize("text", [None, "", "   ", '"""', "()*:^-", "\x00\x01"])
def test_no_words_means_no_match(text):
    assert match_expression(terms(text)) is None
