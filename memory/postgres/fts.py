"""User text to a PostgreSQL full-text query that can never raise.

The same terms as the SQLite engine (memory/query_terms.py: letters and digits
only, stop words dropped, at most 32), OR-ed in ``websearch_to_tsquery``
syntax — a function that accepts any text without a syntax error; the tokens
carry no operator characters anyway. The ``english`` configuration stems like
FTS5's porter tokenizer but also drops stop words, so a query made only of
stop words ("who am I") is matched with ``arcana_stem`` instead (schema v7:
the same stemmer keeping stop words), as SQLite would still find it, stemmed
as there ("being" finds "to be").
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.query_terms import QueryTerms

TEXT_CONFIG = "english"


def search_words(sql: str) -> str:
    """``sql`` (a text expression) as the indexed column reads words: through the store's
    ``arcana_search_text`` (memory/postgres/migrations.py), so "cafe" finds "café" and "example"
    finds "bob@example.com" as on SQLite."""
    return f"arcana_search_text({sql})"


STOPWORD_CONFIG = "arcana_stem"  # english stemming, no stop words dropped (memory/postgres/migrations.py, v7)
# A row's vector in that configuration (stop-word-only queries; computed per row, no index).
ROW_TEXT = "m.content || ' ' || m.tags || ' ' || arcana_date_words(m.created_at)"  # what the indexed column is computed from
STOPWORD_VECTOR = f"arcana_tsvector('{STOPWORD_CONFIG}'::regconfig, {search_words(ROW_TEXT)})"  # never over 1 MiB (v6)


@dataclass(frozen=True)
class TextQuery:
    config: str  # 'english' (the indexed tsvector) or STOPWORD_CONFIG (stop words only, computed per row)
    text: str  # the websearch_to_tsquery argument
    tokens: tuple[str, ...] = ()  # its words, each a query of its own for the bounded candidate set


def text_query(parsed: QueryTerms) -> TextQuery | None:
    """How to search for the query's terms, or None when there is no searchable word."""
    if not parsed.tokens:
        return None
    config = STOPWORD_CONFIG if parsed.only_stopwords else TEXT_CONFIG
    return TextQuery(config, " or ".join(parsed.tokens), tuple(parsed.tokens))
