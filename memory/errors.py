"""One exception taxonomy for the memory core.

The base is deliberately not called ``MemoryError``: shadowing Python's builtin
would hide real out-of-memory errors from every ``except MemoryError``.
"""

from __future__ import annotations


class ArcanaMemoryError(Exception):
    """Base class for every error the memory core raises."""


class MemoryStorageError(ArcanaMemoryError):
    """A read or write against a backend failed (I/O, constraint, missing feature)."""


class VectorIndexDamagedError(MemoryStorageError):
    """A store's pinned vector index cannot be read whole; its rows are intact.

    Not corruption of the store (nothing is quarantined): the index is rebuilt
    from the rows by a re-embed with ``model``, the pinned model.
    """

    def __init__(self, message: str, *, model: str) -> None:
        super().__init__(message)
        self.model = model


class MemoryCorruptError(MemoryStorageError):
    """The backend reported a malformed or unreadable database image.

    Distinct from its parent so callers can treat corruption as session-long:
    the store is quarantined rather than retried.
    """


class UnreadableRowError(MemoryStorageError):
    """One stored row an outside edit left unreadable (an unknown type, tags that are not a JSON list, a
    timestamp no datetime holds): listings and searches leave it out, ``arcana doctor`` names it, and the
    file keeps it as it is. Never corruption of the store."""


class SchemaTooNewError(MemoryStorageError):
    """The database was written by a newer Arcana; this code refuses to touch it."""


class MemoryBusyError(MemoryStorageError):
    """Another writer held the database longer than the busy timeout allows."""


class MemoryTimeoutError(MemoryStorageError, TimeoutError):
    """A call ran past the deadline its caller set and was stopped inside the backend."""


class InvalidRequestError(ArcanaMemoryError, ValueError):
    """The request cannot be carried out as asked (the CLI's usage error, exit 2)."""


class UnsetVariableError(InvalidRequestError):
    """The config names an environment variable (a server's ``url_env``, a model's ``api_key_env``)
    that this process does not have: the file is fine, the invocation lacks it (a usage error, exit 2).
    A federation degrades a tier whose URL variable is unset, as it does a server that is down."""


class StaleEditError(InvalidRequestError):
    """An operator edit named the memory as it was (its newest ledger seq), and it has changed since:
    refused, nothing written, so an edit is never applied to data its author did not see."""


class MemoryRoutingError(ArcanaMemoryError):
    """A write targets a tier that is missing or under-specified."""


class MemoryWriteError(ArcanaMemoryError):
    """A write that must succeed (the private tier, or a read-only tier) did not."""


class TierWriteFailed(ArcanaMemoryError):
    """One tier's write failed inside the resilience wrapper.

    Carries the tier's scope and a reason (timeout, breaker_open, backend_error,
    corruption) so the federation can decide the blast radius.
    """

    def __init__(self, scope: str, reason: str, cause: BaseException | None = None):
        super().__init__(f"{scope} tier write failed ({reason}): {cause}")
        self.scope = scope
        self.reason = reason
        self.cause = cause


class ImportFormatError(InvalidRequestError):
    """An export file is not one, or is in a format version newer than this Arcana reads (a usage error)."""


class BackupError(ArcanaMemoryError):
    """A backup is incomplete or does not match its manifest (files, sizes, checksums)."""


class RestoreRefusedError(InvalidRequestError):
    """A restore would overwrite a live home without ``--force`` (a usage error)."""


class ConfigError(ArcanaMemoryError):
    """A configuration file is malformed; the message names the file and field."""


class NotFoundError(ArcanaMemoryError):
    """An agent, memory, pool or vault that was asked for does not exist."""


class LockHeldError(ArcanaMemoryError):
    """A maintenance lock (prune, reindex) is held by another process."""


class ModelUnavailableError(ArcanaMemoryError):
    """The model endpoint is down, timed out, or answered with something other than a chat stream."""
