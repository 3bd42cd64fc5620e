"""User text to a PostgreSQL full-text query that can never raise.

The same tokens as the SQLite engine (memory/sqlite/fts.py: letters and digits
only, stop words dropped, at most 32), OR-ed in ``websearch_to_tsquery``
syntax — a function that accepts any text without a syntax error; the tokens
carry no operator characters anyway. The ``english`` configuration stems like
FTS5's porter tokenizer but also drops stop words, so a query made only of
stop words ("who am I") is matched with the ``simple`` configuration instead,
as SQLite would still find it.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.sqlite.fts import STOPWORDS, query_tokens

TEXT_CONFIG = "english"


@dataclass(frozen=True)
class TextQuery:
    config: str  # 'english' (the indexed tsvector) or 'simple' (stop words only, computed per row)
    text: str  # the websearch_to_tsquery argument


def text_query(text: str | None) -> TextQuery | None:
    """How to search for ``text``, or None when it has no searchable word."""
    tokens = query_tokens(text)
    if not tokens:
        return None
    config = "simple" if all(t in STOPWORDS for t in tokens) else TEXT_CONFIG
    return TextQuery(config, " or ".join(tokens))
