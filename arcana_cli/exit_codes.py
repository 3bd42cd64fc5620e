"""The exit-code table. man/exit-codes.md documents it (generated); tests run real subprocesses against it."""

from __future__ import annotations

from memory import errors

OK = 0
FAILURE = 1  # unexpected error, `doctor` found problems, a backup fails verification, a killed restore's journal unreadable, a prompt declined, or `host save` refused (2 blocks a compaction)
USAGE = 2  # bad arguments, option values or input; an environment variable the config names is unset
NOT_FOUND = 3  # agent, memory, pool or vault does not exist
CONFIG = 4  # malformed config or agent card (what is stored; a bad argument is USAGE)
STORAGE = 5  # corrupt database, schema newer than this Arcana, database busy, full disk, a store not writable, a restore's server copies unchecked
MODEL_UNAVAILABLE = 69  # the chat model endpoint is down or failed (EX_UNAVAILABLE)
BUSY = 75  # another prune/reindex/consolidate holds the lock, a vault's or agent's lock stayed held, or another export writes the same file (EX_TEMPFAIL)
INTERRUPTED = 130  # Ctrl-C
PIPE_CLOSED = 141  # stdout's reader left early (128 + SIGPIPE)

TABLE = [
    (OK, "success (also: nothing to do)"),
    (FAILURE, "unexpected error, `arcana doctor` found problems, a backup fails `--verify`, a killed restore cannot be finished (its journal is unreadable: nothing is touched), a destructive action was declined at the prompt (nothing changed), or `arcana host save` refused its input, transcript or options (never 2: from a `PreCompact` hook that blocks Claude Code's compaction)"),
    (USAGE, "invalid arguments, options or input (including `config set` values), or an environment variable the config names is not set"),
    (NOT_FOUND, "the agent, memory, pool or vault does not exist"),
    (CONFIG, "malformed config.json, agent card or `ARCANA_EXTRACTION_*` variable (the file is left unchanged)"),
    (STORAGE, "storage problem: corrupt database, schema newer than this Arcana, database busy (another process held its lock past `--lock-wait`), a full disk, or a store the system will not let Arcana write (immutable, read-only); after `restore`, the home is restored but a server's copies of its agents' memories were not checked (run `arcana restore --copies`)"),
    (MODEL_UNAVAILABLE, "the chat model endpoint is unreachable, timed out, or answered with an error"),
    (BUSY, "another prune, reindex or consolidate is running (lock held), a vault's index lock or an agent's lock stayed held (past `--lock-wait`, when given), or another export is writing the same file; retry later"),
    (INTERRUPTED, "interrupted (Ctrl-C)"),
    (PIPE_CLOSED, "standard output was closed early (e.g. `| head`); nothing else went wrong"),
]


def for_error(exc: BaseException) -> int:
    if isinstance(exc, errors.NotFoundError):
        return NOT_FOUND
    if isinstance(exc, errors.ConfigError):
        return CONFIG
    if isinstance(exc, errors.ModelUnavailableError):
        return MODEL_UNAVAILABLE
    if isinstance(exc, errors.LockHeldError):
        return BUSY
    if isinstance(exc, (errors.MemoryStorageError, errors.MemoryWriteError)):
        return STORAGE
    if isinstance(exc, (errors.MemoryRoutingError, errors.InvalidRequestError)):
        return USAGE
    return FAILURE
