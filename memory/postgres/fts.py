"""User text to a PostgreSQL full-text query that can never raise.

The same terms as the SQLite engine (memory/query_terms.py: letters and digits
only, stop words dropped, at most 32), each word a query of its own, OR-ed:
``websearch_to_tsquery`` accepts any text without a syntax error, and the
tokens carry no operator characters anyway. The ``english`` configuration
stems like FTS5's porter tokenizer but also drops stop words, so a query made
only of stop words ("who am I") is matched with ``arcana_stem`` instead
(schema v7: the same stemmer keeping stop words), as SQLite would still find
it, stemmed as there ("being" finds "to be"). A number the query does not say
as a date is looked for in a row's content and tags only (``tsv``), never in
its date words (``dated``, schema v9), as on SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memory.query_terms import QueryTerms, dates_may_hold

TEXT_CONFIG = "english"
STOPWORD_CONFIG = "arcana_stem"  # english stemming, no stop words dropped (memory/postgres/migrations.py, v7)
UNDATED = "D"  # the label of a row's content and tags; its date words (``dated``) are labelled A (v9)
# ts_rank_cd's default weighs a word labelled A ten times one labelled D: the labels tell the date
# words apart for matching only, so every label weighs alike, as the one unlabelled text did before v9.
_RANK_WEIGHTS = "'{0.1, 0.1, 0.1, 0.1}'"


def search_words(sql: str) -> str:
    """``sql`` (a text expression) as the indexed column reads words: through the store's
    ``arcana_search_text`` (memory/postgres/migrations.py), so "cafe" finds "café" and "example"
    finds "bob@example.com" as on SQLite."""
    return f"arcana_search_text({sql})"


def rank(vector: str, query: str) -> str:
    """ts_rank_cd of ``query`` on ``vector``, each label weighed alike (see _RANK_WEIGHTS)."""
    return f"ts_rank_cd({_RANK_WEIGHTS}, {vector}, {query}, 1)"


# A row's whole vector, for ranking and coverage: content and tags, then the date words (labelled A).
ROW_VECTOR = "(m.tsv || m.dated)"
# The same in the stop-word configuration (stop-word-only queries; computed per row, no index),
# made as the indexed columns are (v9): never over 1 MiB.
STOPWORD_VECTOR = (
    f"(arcana_content_tsvector('{STOPWORD_CONFIG}'::regconfig, m.content || ' ' || m.tags, m.created_at) "
    f"|| arcana_dates_tsvector('{STOPWORD_CONFIG}'::regconfig, m.created_at))"
)


@dataclass(frozen=True)
class TextQuery:
    config: str  # 'english' (the indexed tsvector) or STOPWORD_CONFIG (stop words only, computed per row)
    tokens: tuple[str, ...]  # its words, each a query of its own (see word)
    plain_numbers: frozenset[str] = frozenset()  # its numbers not said as a date (QueryTerms.plain_numbers)
    # its words a row's date words may hold: only these are looked up in ``dated`` too (an OR with
    # every word made the planner walk the whole table backwards for a word no row holds: 394 ms at 200k rows)
    dated: frozenset[str] = frozenset()

    def narrowed(self, tokens) -> TextQuery:
        """The same query asking only ``tokens`` (some of its own)."""
        return replace(self, tokens=tuple(tokens))

    def word(self, i: int, param: str, config: str | None = None) -> str:
        """The tsquery of word ``i``, its text in the SQL parameter ``param``, in ``config`` (the
        query's own by default). A plain number is digits only: nothing to_tsquery reads as an
        operator; labelled D, it skips the date words of a row's whole vector (ROW_VECTOR)."""
        config = config or self.config
        if self.tokens[i] in self.plain_numbers:
            return f"to_tsquery('{config}'::regconfig, {param}::text || ':{UNDATED}')"
        return f"websearch_to_tsquery('{config}'::regconfig, {search_words(param)})"

    def any_word(self, first: int, dated: bool = False) -> str | None:
        """The tsquery of any of the words (with ``dated``, of those a row's date words may hold;
        None if none may), word ``i`` in parameter ``$first + i``."""
        words = [self.word(i, f"${first + i}") for i, t in enumerate(self.tokens) if not dated or t in self.dated]
        return "(" + " || ".join(words) + ")" if words else None

    def finds(self, first: int, i: int | None = None) -> str:
        """SQL true for a row (alias ``m``) holding word ``i`` (or any word), word ``i`` in parameter
        ``$first + i``: through the GIN index of ``tsv`` and, for a word the date words may hold, of ``dated``."""
        if i is None:
            words, dated = self.any_word(first), self.any_word(first, dated=True)
        else:
            words = self.word(i, f"${first + i}")
            dated = words if self.tokens[i] in self.dated else None
        return f"(m.tsv @@ {words} OR m.dated @@ {dated})" if dated else f"m.tsv @@ {words}"


def text_query(parsed: QueryTerms) -> TextQuery | None:
    """How to search for the query's terms, or None when there is no searchable word."""
    if not parsed.tokens:
        return None
    config = STOPWORD_CONFIG if parsed.only_stopwords else TEXT_CONFIG
    dated = frozenset(t for t in parsed.tokens if t not in parsed.plain_numbers and dates_may_hold(t))
    return TextQuery(config, parsed.tokens, parsed.plain_numbers, dated)
