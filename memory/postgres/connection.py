"""Connection pools to a PostgreSQL server, with the password kept out of every message.

A pool opens no connection until first use, so a command that never touches
the server never connects. Connect and statement timeouts come from the
caller (the tier's budget); a server that is down, slow or refuses the login
surfaces as :class:`MemoryStorageError` whose text carries the masked URL only.
"""

from __future__ import annotations

from memory.deadline import LOCK_WAIT, WAIT_LONGER
from memory.errors import MemoryBusyError, MemoryStorageError
from memory.server_urls import mask_url, scrub

CONNECT_TIMEOUT_S = 5.0
STATEMENT_TIMEOUT_MS = 10_000
MAX_CONNECTIONS = 4


def storage_error(url: str, exc: BaseException) -> MemoryStorageError:
    """A one-line storage error naming the masked URL, never the password.

    A transaction whose connection died under it fails twice: the statement (the server's reason),
    then the rollback on the closed connection ("cannot call Transaction.__aexit__()"), which
    carries the first as its context; the reason named is the first's. A server that answered and
    cancelled the statement (a lock wait past the statement timeout, or a slow statement) is not a server
    that is down: the line says which, and how to fix it.
    """
    if type(exc).__name__ == "InterfaceError" and isinstance(exc.__context__, Exception):
        exc = exc.__context__
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if type(exc).__name__ == "LockNotAvailableError":  # SQLSTATE 55P03: the session's lock_timeout ran out
        return MemoryBusyError(scrub(f"{mask_url(url)}: memories stayed locked by another session ({detail}); "
                                     f"run again once its transaction ends, or {WAIT_LONGER}", url))
    if type(exc).__name__ == "QueryCanceledError":  # SQLSTATE 57014: the server answered, then cut the statement off
        return MemoryStorageError(scrub(
            f"{mask_url(url)}: {detail}: another session held a lock on these memories, or the statement took "
            "too long; run again once that session's transaction ends (--lock-wait SECONDS stops waiting sooner), "
            "or raise the tier's timeouts in connections/memory-adapters.json (they bound every command on it)", url))
    return MemoryStorageError(scrub(f"{mask_url(url)}: {detail}; check that the server is up and the URL is right", url))


async def open_pool(
    url: str, *, connect_timeout: float, statement_timeout_ms: int, ef_search: int = 200, max_size: int = MAX_CONNECTIONS
):
    """An asyncpg pool that connects lazily (min_size 0), with both timeouts set, and the command's lock
    wait (:data:`memory.deadline.LOCK_WAIT`, when given) as each session's ``lock_timeout``: a write
    behind another session's row lock waits that long, not the whole statement timeout.

    The HNSW settings travel in the startup packet rather than as ``SET LOCAL``
    per query: a KNN is then one round trip instead of five (BEGIN, two SETs,
    SELECT, COMMIT), which is most of its cost on a busy machine. pgvector's
    iterative scan keeps walking the graph while filters reject rows. Custom
    plans always: asyncpg prepares every statement, and the generic plan the
    server switches to after five runs made a keyword search 2.4x slower
    (7.0 -> 2.9 ms on 5,000 rows) for 0.4 ms of planning saved.
    """
    import asyncpg  # only a server tier pays for the import

    settings = {
        "statement_timeout": str(int(statement_timeout_ms)),
        "application_name": "arcana",
        "hnsw.ef_search": str(int(ef_search)),
        "hnsw.iterative_scan": "relaxed_order",
        "plan_cache_mode": "force_custom_plan",
    }
    if (given := LOCK_WAIT.get()) is not None:  # the command's --lock-wait; 0 is "no limit" to PostgreSQL
        settings["lock_timeout"] = str(max(1, round(given * 1000)))
    return await asyncpg.create_pool(
        url,
        min_size=0,
        max_size=max_size,
        timeout=connect_timeout,
        command_timeout=statement_timeout_ms / 1000 + 1,
        server_settings=settings,
    )
