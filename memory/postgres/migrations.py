"""Forward-only migrations for a PostgreSQL store, safe when machines upgrade at once.

The whole upgrade is one transaction holding a transaction-level advisory
lock, so a second machine waits and then finds nothing left to do; DDL is
transactional here, so a failing step leaves the schema at the version before
it. ``arcana_schema`` records each applied version; a server whose schema is
newer than this Arcana is refused before anything is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from memory.errors import ConfigError, SchemaTooNewError

LOCK_KEY = 0x41524341  # 'ARCA': the advisory lock every Arcana upgrade takes
# An upgrade rewrites the table (v9: about 4,000 rows/s on 2 busy cores) and a second machine waits on
# the lock meanwhile, so neither runs under the tier's statement timeout (its budget's, 5 s by default,
# which no pool past some 20,000 rows could pass); an hour per statement is over 10M rows.
# A recall that connects to a pool still pending stays bounded by its tier's budget (and rolls back).
UPGRADE_TIMEOUT_S = 3600


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


_CORE = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    """
    CREATE TABLE memories (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        agent_id text NOT NULL,
        type text NOT NULL,
        content text NOT NULL,
        scope text NOT NULL DEFAULT 'private',
        pool_name text,
        importance double precision NOT NULL DEFAULT 0.5,
        pinned integer NOT NULL DEFAULT 0,
        confidence double precision NOT NULL DEFAULT 1.0,
        confidence_source text NOT NULL DEFAULT 'user_confirmed',
        conflict_with text,
        superseded_by text,
        tags text NOT NULL DEFAULT '[]',
        source_session_id text,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        last_accessed_at double precision,
        access_count integer NOT NULL DEFAULT 0,
        archived integer NOT NULL DEFAULT 0,
        visibility text NOT NULL DEFAULT 'visible',
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content || ' ' || tags)) STORED
    )
    """,
    "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
    "CREATE INDEX memories_order ON memories (archived, pinned DESC, importance DESC, created_at DESC)",
    "CREATE INDEX memories_agent ON memories (agent_id)",
    """
    CREATE TABLE memory_ledger (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        memory_id text NOT NULL,
        op text NOT NULL,
        actor text NOT NULL,
        at double precision NOT NULL,
        before text,
        after text
    )
    """,
    "CREATE INDEX memory_ledger_memory ON memory_ledger (memory_id, seq)",
    """
    CREATE FUNCTION arcana_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'memory_ledger is append-only'; END $$
    """,
    """
    CREATE TRIGGER memory_ledger_append_only BEFORE UPDATE OR DELETE ON memory_ledger
    FOR EACH ROW EXECUTE FUNCTION arcana_ledger_append_only()
    """,
    # The pin: which model this pool's vectors belong to. memory_vectors itself
    # is created with the first pin, when its dimension is known.
    """
    CREATE TABLE embedding_meta (
        id integer PRIMARY KEY CHECK (id = 1),
        model text NOT NULL,
        family text NOT NULL,
        dimension integer NOT NULL CHECK (dimension > 0),
        vec_table text NOT NULL,
        pinned_at double precision NOT NULL
    )
    """,
)

# Versioned facts (the SQLite store's v7): a superseded copy keeps its row,
# ``valid_to`` ends it, ``supersedes`` links the successor back. Entities stay
# in the agent's private SQLite store, where reconciliation runs.
_FACT_VERSIONS = (
    "ALTER TABLE memories ADD COLUMN valid_from double precision",
    "ALTER TABLE memories ADD COLUMN valid_to double precision",
    "ALTER TABLE memories ADD COLUMN supersedes text",
    "CREATE INDEX memories_supersedes ON memories (supersedes)",
)

# Recalls answered and memories returned per UTC day (the SQLite store's v8).
_RECALL_ACTIVITY = (
    "CREATE TABLE recall_activity (day integer PRIMARY KEY, recalls integer NOT NULL DEFAULT 0, "
    "hits integer NOT NULL DEFAULT 0)",
)

# access_count as 64 bits, what SQLite's INTEGER (and MemoryEntry) holds: an imported count past
# 2^31 was refused by the server and took its whole batch with it.
_WIDE_ACCESS_COUNT = ("ALTER TABLE memories ALTER COLUMN access_count TYPE bigint",)

# Words as SQLite's FTS5 tokenizer (unicode61, remove_diacritics 2) reads them: every ASCII punctuation
# mark separates words (the default parser read "bob@example.com", "example.com" or "3.14" as one
# token, so "example" never found them) and a Latin letter's diacritics go ("cafe" finds "café").
# The index, the per-row stop-word vector and every query (memory/postgres/search.py) go through it.
# normalize() needs a UTF8 server; elsewhere only the punctuation rule applies (an encoding is fixed per database).
_SEARCH_TEXT = (
    r"""
    CREATE FUNCTION arcana_search_text(t text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT regexp_replace(
            translate(CASE WHEN current_setting('server_encoding') = 'UTF8' THEN normalize(t, NFD) ELSE t END,
                      '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', repeat(' ', 32)),
            '([A-Za-z])[\u0300-\u036f]+', '\1', 'g')
    $$
    """,
    "ALTER TABLE memories DROP COLUMN tsv",  # its GIN index goes with it
    "ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
    "(to_tsvector('english'::regconfig, arcana_search_text(content || ' ' || tags))) STORED",
    "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
)

# Each row's date in words, as the SQLite store indexes it beside the content (memory/sqlite/context.py's
# render_date: "8 May 2023", no weekday): a server pool answered "what happened in May 2023?" with nothing
# where a SQLite pool found that month's memories. The day is the UTC one; 'FMMonth' is never localised
# (only 'TM' is), so the function is immutable as a generated column needs.
# The vector is built by arcana_tsvector: a tsvector holds at most 1 MiB, about three times the text at
# worst (distinct three-letter words), so a memory within max_content_bytes (1 MiB) was refused by the
# server ("string is too long for tsvector") where SQLite stored it. Text up to 256 KiB is vectorised as
# is (no overhead on the rows that matter); a longer one keeps as much of its start as fits.
_DATE_WORDS = (
    """
    CREATE FUNCTION arcana_date_words(t double precision) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT to_char(to_timestamp(t) AT TIME ZONE 'UTC', 'FMDD FMMonth FMYYYY')
    $$
    """,
    """
    CREATE FUNCTION arcana_long_tsvector(config regconfig, t text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
    DECLARE
        kept text := t;
    BEGIN
        LOOP
            BEGIN
                RETURN to_tsvector(config, kept);
            EXCEPTION WHEN program_limit_exceeded THEN
                kept := left(kept, length(kept) / 2);
            END;
        END LOOP;
    END
    $$
    """,
    """
    CREATE FUNCTION arcana_tsvector(config regconfig, t text) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT CASE WHEN octet_length(t) <= 262144 THEN to_tsvector(config, t) ELSE arcana_long_tsvector(config, t) END
    $$
    """,
    "ALTER TABLE memories DROP COLUMN tsv",  # its GIN index goes with it
    "ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS (arcana_tsvector('english'::regconfig, "
    "arcana_search_text(content || ' ' || tags || ' ' || arcana_date_words(created_at)))) STORED",
    "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
)

# English stemming that keeps stop words, for a query made only of them ("who am I", "being"): the
# 'simple' configuration used before did not stem, so "being" or "its" found nothing on a server tier
# where SQLite's porter tokenizer finds "to be" or "it's". memory/postgres/fts.py's STOPWORD_CONFIG.
_STOPWORD_STEMS = (
    "CREATE TEXT SEARCH DICTIONARY arcana_english_stem (TEMPLATE = snowball, Language = english)",
    "CREATE TEXT SEARCH CONFIGURATION arcana_stem (COPY = english)",
    "ALTER TEXT SEARCH CONFIGURATION arcana_stem ALTER MAPPING REPLACE english_stem WITH arcana_english_stem",
)

# An id prefix (`memory show 1a2b`, an MCP get) is a left-anchored LIKE, which a plain btree index answers
# only on a "C"-collated database; pattern ops answer it under any collation (else a full scan per lookup).
_ID_PREFIX = (
    "CREATE INDEX memories_id_prefix ON memories (id text_pattern_ops)",
    "CREATE INDEX memory_ledger_id_prefix ON memory_ledger (memory_id text_pattern_ops)",
)

# Each row's date words in a column of their own, as SQLite's ``dated`` FTS column: a number the query
# does not say as a date ("room 7") is looked for in ``tsv`` (content and tags) alone, and no longer
# finds every row written on a 7th (memory/sqlite/fts.py's term_match); a date word in either. Each
# has its GIN index: one vector labelling its date words instead made a plain "2026" recheck every
# row written in 2026 (41-85 ms at 200k rows, 2-4 ms before). Ranking reads ``tsv || dated``, the date
# words labelled A so a plain number's query ('7':D) skips them there too (memory/postgres/fts.py).
# A long text is cut as v6 cuts it, so that it fits a tsvector's 1 MiB with its date words beside it;
# that loop's exception block cannot run in parallel mode (leader included), so both are parallel
# unsafe (v6's was declared safe: a stop-word query meeting a long row under a parallel plan failed).
_DATES_APART = (
    """
    CREATE FUNCTION arcana_dates_tsvector(config regconfig, created double precision) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT setweight(to_tsvector(config, arcana_date_words(created)), 'A')
    $$
    """,
    """
    CREATE FUNCTION arcana_long_tsvector(config regconfig, t text, tail tsvector) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE AS $$
    DECLARE
        kept text := t;
    BEGIN
        LOOP
            BEGIN
                RETURN to_tsvector(config, kept) || tail;
            EXCEPTION WHEN program_limit_exceeded THEN
                kept := left(kept, length(kept) / 2);
            END;
        END LOOP;
    END
    $$
    """,
    """
    CREATE FUNCTION arcana_content_tsvector(config regconfig, t text, created double precision) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL UNSAFE AS $$
        SELECT CASE WHEN octet_length(s) <= 262144 THEN to_tsvector(config, s)
            ELSE ts_filter(arcana_long_tsvector(config, s, arcana_dates_tsvector(config, created)), '{d}') END
        FROM (SELECT arcana_search_text(t) AS s) AS parts
    $$
    """,
    # one statement, one rewrite of the table; the old column's GIN index goes with it
    "ALTER TABLE memories DROP COLUMN tsv, ADD COLUMN tsv tsvector GENERATED ALWAYS AS "
    "(arcana_content_tsvector('english'::regconfig, content || ' ' || tags, created_at)) STORED, "
    "ADD COLUMN dated tsvector GENERATED ALWAYS AS (arcana_dates_tsvector('english'::regconfig, created_at)) STORED",
    "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
    "CREATE INDEX memories_dated ON memories USING gin (dated)",
)

# A row's tags as jsonb, or NULL where an outside edit left the cell invalid JSON: a tag filter cast
# every cell (``tags::jsonb``), so one such row failed every tag-filtered read of the pool, where
# SQLite reads that cell as holding no tag (memory/sqlite/admission.py's has_tag). pg_input_is_valid
# (PostgreSQL 16) costs nothing measurable; before it, a cast in an exception block (about 2 us a row,
# and parallel unsafe, see _DATES_APART).
_TAGS_GUARD = (
    r"""
    DO $$
    BEGIN
        IF current_setting('server_version_num')::int >= 160000 THEN
            EXECUTE $f$CREATE FUNCTION arcana_tags(t text) RETURNS jsonb LANGUAGE sql STABLE STRICT PARALLEL SAFE
                AS 'SELECT CASE WHEN pg_input_is_valid(t, ''jsonb'') THEN t::jsonb END'$f$;
        ELSE
            EXECUTE $f$CREATE FUNCTION arcana_tags(t text) RETURNS jsonb LANGUAGE plpgsql STABLE STRICT PARALLEL UNSAFE
                AS 'BEGIN RETURN t::jsonb; EXCEPTION WHEN invalid_text_representation THEN RETURN NULL; END'$f$;
        END IF;
    END $$
    """,
)

# A purge takes the purged memory's words (``content`` and ``tags``) out of its ledger images, as SQLite's
# v11 lets it (memory/migrations/versions/v011_purge_erases.py): the ledger refuses every other update,
# and any update of a memory that is not purged or is held again. The images are JSON text, read as jsonb.
_PURGE_ERASES = (
    """
    CREATE OR REPLACE FUNCTION arcana_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE'
            AND (NEW.seq, NEW.memory_id, NEW.op, NEW.actor, NEW.at)
                IS NOT DISTINCT FROM (OLD.seq, OLD.memory_id, OLD.op, OLD.actor, OLD.at)
            AND (NEW.before::jsonb - 'content' - 'tags') IS NOT DISTINCT FROM (OLD.before::jsonb - 'content' - 'tags')
            AND (NEW.after::jsonb - 'content' - 'tags') IS NOT DISTINCT FROM (OLD.after::jsonb - 'content' - 'tags')
            AND NOT EXISTS (SELECT 1 FROM memories WHERE id = OLD.memory_id)
            AND EXISTS (SELECT 1 FROM memory_ledger p WHERE p.memory_id = OLD.memory_id AND p.op = 'purge')
        THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'memory_ledger is append-only';
    END $$
    """,
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "core", _CORE),
    Migration(2, "fact_versions", _FACT_VERSIONS),
    Migration(3, "recall_activity", _RECALL_ACTIVITY),
    Migration(4, "wide_access_count", _WIDE_ACCESS_COUNT),
    Migration(5, "search_text", _SEARCH_TEXT),
    Migration(6, "date_words", _DATE_WORDS),
    Migration(7, "stopword_stems", _STOPWORD_STEMS),
    Migration(8, "id_prefix", _ID_PREFIX),
    Migration(9, "dates_apart", _DATES_APART),
    Migration(10, "tags_guard", _TAGS_GUARD),
    Migration(11, "purge_erases", _PURGE_ERASES),
)

_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS arcana_schema (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at double precision NOT NULL
)
"""


def head_version(migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    return migrations[-1].version if migrations else 0


async def current_version(conn) -> int:
    """The applied version; 0 for a database Arcana has not touched yet."""
    exists = await conn.fetchval("SELECT to_regclass('arcana_schema') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM arcana_schema"))


def refuse_newer(version: int, where: str, migrations: tuple[Migration, ...] = MIGRATIONS) -> None:
    head = head_version(migrations)
    if version > head:
        raise SchemaTooNewError(
            f"{where}: schema version {version} is newer than this Arcana understands "
            f"({head}); upgrade Arcana — the database was left untouched"
        )


OLDEST_SERVER = 130000  # server_version_num: v5's normalize() came with PostgreSQL 13


def refuse_older_server(version_num: int, where: str) -> None:
    """A server too old for the schema is named before anything is applied, not left to fail
    half-way with "function normalize(text) does not exist"."""
    if version_num < OLDEST_SERVER:
        major = version_num // 10000 if version_num >= 100000 else f"{version_num // 10000}.{version_num // 100 % 100}"
        raise ConfigError(
            f"{where}: PostgreSQL {major} is too old for Arcana's schema; point it at PostgreSQL "
            f"{OLDEST_SERVER // 10000} or later (with pgvector) — nothing was changed"
        )


async def migrate(conn, where: str, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Apply every pending migration under the advisory lock; return the resulting version."""
    refuse_newer(await current_version(conn), where, migrations)
    if await current_version(conn) >= head_version(migrations):
        return head_version(migrations)
    refuse_older_server(int(await conn.fetchval("SHOW server_version_num")), where)
    async with conn.transaction():
        await conn.execute(f"SET LOCAL statement_timeout = {UPGRADE_TIMEOUT_S * 1000}")
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK_KEY, timeout=UPGRADE_TIMEOUT_S)
        await conn.execute(_BOOKKEEPING)
        version = await current_version(conn)  # another machine may have upgraded while we waited
        refuse_newer(version, where, migrations)
        for migration in migrations:
            if migration.version <= version:
                continue
            for statement in migration.statements:
                await conn.execute(statement, timeout=UPGRADE_TIMEOUT_S)
            await conn.execute(
                "INSERT INTO arcana_schema (version, name, applied_at) VALUES ($1, $2, $3)",
                migration.version, migration.name, time.time(),
            )
    return head_version(migrations)
