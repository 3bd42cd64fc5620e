"""``~/.arcana/config.json``: pydantic models, loading, dotted-key edits.

A malformed file is a :class:`ConfigError` naming the file and the field; a
missing file means defaults. Writes validate first and replace atomically, so a
bad ``config set`` never leaves a half-written file.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from memory import strict_json
from memory.errors import ConfigError, InvalidRequestError, NotFoundError, UnsetVariableError
from memory.home import is_safe_name, loaded_name, private_dir, replace_file, shown_name
from memory.limits import MAX_CONTENT_BYTES
from memory.server_urls import check_url, password_of
from memory.types import DEFAULT_RETRIEVAL_MODE, PruneMode, RetrievalMode

# Hybrid fusion (memory/ranking/fusion.py): the default weights chosen on LoCoMo and our
# retrieval eval (the seed's 0.7 / 0.3 is available by setting them), and the cosine floor
# under which a semantic hit is not a match.
DEFAULT_VECTOR_WEIGHT = 0.5
DEFAULT_KEYWORD_WEIGHT = 0.5
DEFAULT_MIN_SIMILARITY = 0.2

# Reconciliation (memory/reconcile/), measured on tests/eval/knowledge_update_eval.py
# (man/benchmarks.md, "Facts that evolve").
RECONCILE_MIN_SIMILARITY = 0.1
DUPLICATE_SIMILARITY = 0.95
RECONCILE_CANDIDATES = 6
RECONCILE_TIMEOUT = 10.0


@dataclass(frozen=True)
class ReconcileSettings:
    strategy: str = "heuristic"  # heuristic | llm | off
    min_similarity: float = RECONCILE_MIN_SIMILARITY
    duplicate_similarity: float = DUPLICATE_SIMILARITY
    candidates: int = RECONCILE_CANDIDATES
    language: str = "en"
    timeout_seconds: float = RECONCILE_TIMEOUT


class _Section(BaseModel):
    # allow_inf_nan=False: config.json is JSON, which has no Infinity or NaN (a weight of 1e999 was
    # written as the bare word Infinity, and `config get --json` printed it).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True, allow_inf_nan=False)


ENV_PREFIX = "ARCANA_EXTRACTION_"


@dataclass(frozen=True)
class ExtractionSettings:
    """The effective extraction tunables: config.json, else ARCANA_EXTRACTION_*, else default."""

    strategy: str = "heuristic"
    language: str = "en"
    agent_confidence_cap: float = 0.7
    user_confidence: float = 0.9
    min_confidence_to_store: float = 0.3
    max_content: int = 2000
    base_importance: float = 0.3
    durable_importance: float = 0.6
    signal_boost: float = 0.2
    summary_importance: float = 0.4  # below a user-stated fact (0.5 remembered, 0.6 extracted)
    summarise_on_close: bool = True
    # Not a key of memory.extraction: memory.max_content_bytes, which no extracted text may pass.
    max_content_bytes: int = MAX_CONTENT_BYTES


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


class ExtractionConfig(_Section):
    """The ``memory.extraction`` block. ``None`` means "not set in config.json".

    Unset fields fall back to ``ARCANA_EXTRACTION_<FIELD>`` and then to the
    built-in default, resolved when the config is loaded; the environment is
    never written back into the file. Bounds hold for both sources, so an
    ``agent_confidence_cap`` of 1.0 (agent text no evidence could override) is
    rejected at load wherever it came from.
    """

    strategy: Literal["heuristic", "llm"] | None = None
    language: str | None = Field(default=None, pattern=r"^[a-z]{2,3}$")
    agent_confidence_cap: float | None = Field(default=None, ge=0.0, lt=1.0)
    user_confidence: float | None = Field(default=None, gt=0.0, le=1.0)
    min_confidence_to_store: float | None = Field(default=None, ge=0.0, le=1.0)
    max_content: int | None = Field(default=None, ge=64, le=100_000)
    base_importance: float | None = Field(default=None, ge=0.0, le=1.0)
    durable_importance: float | None = Field(default=None, ge=0.0, le=1.0)
    signal_boost: float | None = Field(default=None, ge=0.0, le=1.0)
    summary_importance: float | None = Field(default=None, ge=0.0, le=1.0)
    summarise_on_close: bool | None = None

    @model_validator(mode="after")
    def _resolvable(self) -> ExtractionConfig:
        try:
            self.effective()
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return self

    @classmethod
    def check_override(cls, values: Mapping[str, Any]) -> None:
        """Each key of ``values`` (an agent card's ``extraction``) a tunable of its type and bounds, else
        a ValueError naming it. Whether the whole resolves (user_confidence above the cap) depends on
        config.json's block too, and is judged when the agent's settings are assembled."""
        for key, value in values.items():
            if key not in cls.model_fields:
                raise ValueError(f"unknown key {key!r} (keys: {', '.join(cls.model_fields)})")
            try:
                _tunable(key).validate_python(value)
            except ValidationError as exc:
                raise ValueError(f"{key}: {exc.errors()[0]['msg']}") from None

    def effective(self, environ: Mapping[str, str] | None = None) -> ExtractionSettings:
        """Resolve every tunable (config.json → env → default) and check the bounds."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for item in fields(ExtractionSettings):
            if item.name not in ExtractionConfig.model_fields:
                continue  # set from outside the block (extraction_settings)
            chosen = getattr(self, item.name)
            var = ENV_PREFIX + item.name.upper()
            if chosen is None and var in environ:
                caster = {bool: _bool, int: int, float: float}.get(type(item.default), str)
                try:
                    # The env obeys the same bounds as the file.
                    chosen = _tunable(item.name).validate_python(caster(environ[var]))
                except ValidationError as exc:
                    raise ConfigError(f"{var}={environ[var]!r}: {exc.errors()[0]['msg']}; fix or unset {var}") from None
                except ValueError as exc:
                    raise ConfigError(f"{var}={environ[var]!r}: {exc}; fix or unset {var}") from None
            values[item.name] = item.default if chosen is None else chosen
        settings = ExtractionSettings(**values)
        if settings.user_confidence <= settings.agent_confidence_cap:
            raise ConfigError(
                "memory.extraction: user_confidence must be above agent_confidence_cap, or a "
                "user's own statement could not outrank what the agent asserted"
            )
        return settings


def _tunable(name: str) -> TypeAdapter:
    """The validator of one ``memory.extraction`` field alone, its bounds included."""
    field = ExtractionConfig.model_fields[name]
    return TypeAdapter(Annotated[field.annotation, field])


class ReconcileConfig(_Section):
    """The ``memory.reconcile`` block: how a new memory is reconciled with what the agent knows.

    ``heuristic`` (default) is offline and deterministic; ``llm`` asks the
    agent's configured model (falling back to add on any failure); ``off``
    stores every memory as given. ``min_similarity`` is the cosine floor for a
    vector neighbour to be a candidate at all.
    """

    strategy: Literal["heuristic", "llm", "off"] = "heuristic"
    min_similarity: float = Field(default=RECONCILE_MIN_SIMILARITY, ge=-1.0, le=1.0)
    timeout_seconds: float = Field(default=RECONCILE_TIMEOUT, gt=0.0, le=600.0)


class MemoryConfig(_Section):
    """The ``memory`` block: an absent block means these defaults.

    ``enabled = false`` stops ``arcana run`` from recalling, extracting or
    writing (explicit ``remember``/``recall`` still work); ``global = "none"``
    switches the global tier off even with an embedder; ``pools`` are pools
    every agent belongs to (on top of ``pools.<name>.members``).
    """

    enabled: bool = True
    private: Literal["sqlite"] = "sqlite"
    global_: Literal["vector", "none"] = Field(default="vector", alias="global")
    # The global tier on a PostgreSQL server instead of vector/global.db.
    global_url: str | None = None
    global_url_env: str | None = None
    pools: list[str] = Field(default_factory=list)
    # Writers refuse a memory larger than this (UTF-8 bytes); the core never stores more than 1 MiB.
    max_content_bytes: int = Field(default=MAX_CONTENT_BYTES, ge=1024, le=MAX_CONTENT_BYTES)
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    reconcile: ReconcileConfig = Field(default_factory=ReconcileConfig)
    # `arcana run` consolidates an agent's store each time it grows past another multiple (0: never).
    consolidate_every: int = Field(default=500, ge=0)

    @field_validator("global_url")
    @classmethod
    def _global_url(cls, value: str | None) -> str | None:
        return _server_url(value)

    @field_validator("global_url_env")
    @classmethod
    def _global_url_env(cls, value: str | None) -> str | None:
        return _env_name(value)

    @model_validator(mode="after")
    def _one_global_source(self) -> MemoryConfig:
        if self.global_url is not None and self.global_url_env is not None:
            raise ValueError("set global_url or global_url_env, not both")
        return self

    def global_server_url(self) -> str | None:
        return resolve_server_url(self.global_url, self.global_url_env, "memory.global")

    @field_validator("pools")
    @classmethod
    def _pool_names(cls, value: list[str]) -> list[str]:
        return [loaded_name("pool", name) for name in value]


class RecallConfig(_Section):
    mode: RetrievalMode | None = None  # None: DEFAULT_RETRIEVAL_MODE
    limit: int = Field(default=10, ge=1, le=1000)
    # Session-neighbour expansion (memory.ranking.neighbours): the turns before and after each of
    # the best ``neighbour_depth`` results join at ``neighbour_share`` of their score, those up to
    # ``neighbour_reach`` turns away at less; depth 0 turns it off. 1 / 0.4 / 2: what LoCoMo's
    # cross-validation folds chose (man/benchmarks.md).
    neighbour_depth: int = Field(default=1, ge=0, le=50)
    neighbour_share: float = Field(default=0.4, gt=0, le=1)
    neighbour_reach: int = Field(default=2, ge=1, le=5)

    def mode_for(self, requested: RetrievalMode | None = None) -> RetrievalMode:
        """The mode a recall runs in: the one asked for, else this config's, else the library default."""
        return requested or self.mode or DEFAULT_RETRIEVAL_MODE


class EmbeddingConfig(_Section):
    """Embedders in priority order, and how hybrid recall weighs its two legs."""

    providers: list[str] = Field(default_factory=lambda: ["fastembed"])
    fastembed_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    ollama_url: str = "http://127.0.0.1:11434"
    ollama_model: str | None = None
    batch_size: int = Field(default=32, ge=1, le=1024)
    # Hybrid fusion weights (normalised to sum 1); defaults from our retrieval eval.
    vector_weight: float = Field(default=DEFAULT_VECTOR_WEIGHT, ge=0.0)
    keyword_weight: float = Field(default=DEFAULT_KEYWORD_WEIGHT, ge=0.0)
    # Semantic neighbours less similar than this are not recalled at all: KNN always
    # returns *something*, and unrelated notes should not reach a prompt. 0.2 suits the
    # default MiniLM (paraphrase targets in our eval scored >= 0.24, unrelated text < 0.1).
    min_similarity: float = Field(default=DEFAULT_MIN_SIMILARITY, ge=-1.0, le=1.0)

    @field_validator("fastembed_model")
    @classmethod
    def _model_name(cls, value: str) -> str:
        """A model name becomes a folder under the model cache: ``org/name`` of safe names, no ``..``."""
        parts = value.split("/")
        if len(parts) > 2 or not all(is_safe_name(part) for part in parts):
            raise ValueError(f"invalid model name {value!r}: give a fastembed model name such as "
                             "'sentence-transformers/all-MiniLM-L6-v2' (no '..', no absolute path)")
        return value

    @field_validator("ollama_url")
    @classmethod
    def _ollama_url(cls, value: str) -> str:
        """As a model's base_url: 'notaurl' was stored and every embed failed, and a password in it
        was printed by `arcana doctor`."""
        return http_url(value, "ollama_url", "config.json holds no passwords")

    @field_validator("providers")
    @classmethod
    def _providers(cls, value: list[str]) -> list[str]:
        unknown = [p for p in value if p not in ("fastembed", "ollama")]
        if unknown:
            raise ValueError(f"unknown provider {unknown[0]!r}; use 'fastembed' and/or 'ollama'")
        return value

    @model_validator(mode="after")
    def _some_weight(self) -> EmbeddingConfig:
        """Hybrid fusion normalises the two weights to sum 1: both 0 weigh nothing (every recall failed)."""
        if self.vector_weight + self.keyword_weight <= 0:
            raise ValueError("keyword_weight and vector_weight are both 0; give one of them a weight above 0")
        return self


# The policy a bare `arcana prune` (e.g. the cron line in man/memory.md) applies: archive — restorable
# with `memory restore` — the unpinned memories nobody rated above 0.1; nothing is purged.
DEFAULT_PRUNE_MIN_IMPORTANCE = 0.1


class PruneConfig(_Section):
    """The policy used when ``prune`` gets no rule flags; set ``min_importance`` to null to require flags."""

    min_importance: float | None = Field(default=DEFAULT_PRUNE_MIN_IMPORTANCE, ge=0.0, le=1.0)
    max_entries: int | None = Field(default=None, ge=0)
    mode: PruneMode = PruneMode.ARCHIVE


class VaultConfig(_Section):
    path: str
    agent: str | None = None
    pool: str | None = None
    ignore: list[str] = Field(default_factory=list)
    max_file_bytes: int = Field(default=1024 * 1024, ge=1)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        """`vault add` stores the folder resolved; a relative (or ``~``) path set by hand meant another
        folder from each working directory, and an index run elsewhere dropped the first folder's notes."""
        if not Path(value).is_absolute():
            raise ValueError(f"{value!r} is not an absolute path; give the folder's full path "
                             "(e.g. /home/me/Notes), or register it with `arcana vault add FOLDER`")
        return value

    @field_validator("pool")
    @classmethod
    def _pool(cls, value: str | None) -> str | None:
        return None if value is None else loaded_name("pool", value)

    @field_validator("agent")
    @classmethod
    def _agent(cls, value: str | None) -> str | None:
        return None if value is None else loaded_name("agent", value)


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _server_url(value: str | None) -> str | None:
    """A postgresql:// URL without a password: a password lives only in the environment."""
    if value is None:
        return None
    try:
        check_url(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    if password_of(value):
        raise ValueError("a URL with a password is never stored; put it in an environment variable and use url_env")
    return value


def _env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError("must be an environment variable name (the URL itself is read from it at run time)")
    return value


def resolve_server_url(url: str | None, url_env: str | None, what: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The server URL for ``what`` (``url``, else ``$url_env`` read now), or None for a local store."""
    if url is not None:
        return url
    if url_env is None:
        return None
    environ = os.environ if environ is None else environ
    value = environ.get(url_env)
    if not value:
        raise UnsetVariableError(
            f"{what}: environment variable {url_env} is not set; export it with the server's postgresql:// URL"
        )
    return check_url(value)


class PoolSettings(_Section):
    """One shared pool; ``members`` are agent ids (names also match), edited by ``arcana agent join``.

    ``url`` (no password) or ``url_env`` (an environment variable holding the
    URL) put the pool on a PostgreSQL server instead of ``pools/<name>.db``.
    """

    members: list[str] = Field(default_factory=list)
    url: str | None = None
    url_env: str | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return _server_url(value)

    @field_validator("url_env")
    @classmethod
    def _url_env(cls, value: str | None) -> str | None:
        return _env_name(value)

    @model_validator(mode="after")
    def _one_source(self) -> PoolSettings:
        if self.url is not None and self.url_env is not None:
            raise ValueError("set url or url_env, not both")
        return self

    def server_url(self, name: str) -> str | None:
        return resolve_server_url(self.url, self.url_env, f"pool '{name}'")


def http_url(value: str, key: str, secrets: str) -> str:
    """``value`` as an http(s) endpoint every request can use, without a trailing ``/``.

    Refused at load and at ``config set``, not at the first request: a bad
    [IPv6] host or a port that is no port, and a user or password in it
    (never stored: ``secrets`` says where they go instead).
    """
    if not re.match(r"^https?://[^/\s]+", value):
        raise ValueError(f"{key} must start with http:// or https:// and name a host")
    try:  # what every request would trip over later: a bad [IPv6] host, a port that is no port
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for one out of range or not a number
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a usable URL ({exc}); use http(s)://HOST[:PORT][/PATH]") from None
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise ValueError(f"{key} must be http(s)://HOST[:PORT][/PATH], with no user or password in it ({secrets})")
    if "?" in value or "#" in value:  # the API's path is appended: it went into the query, the request to "/"
        raise ValueError(f"{key} must be http(s)://HOST[:PORT][/PATH], with no ?query or #fragment (the API's path goes after it)")
    return value.rstrip("/")


class ModelConfig(_Section):
    """One chat model endpoint. The API key is read from ``api_key_env`` at call time, never stored."""

    provider: str
    base_url: str
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    timeout_seconds: float = Field(default=120.0, gt=0.0, le=3600.0)

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str) -> str:
        if value not in ("ollama", "openai"):
            raise ValueError("provider must be 'ollama' or 'openai'")
        return value

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        return http_url(value, "base_url", "name the key's environment variable with api_key_env")

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("api_key_env must be an environment variable name (the key itself is never stored)")
        return value


class ArcanaConfig(_Section):
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    prune: PruneConfig = Field(default_factory=PruneConfig)
    vaults: dict[str, VaultConfig] = Field(default_factory=dict)
    pools: dict[str, PoolSettings] = Field(default_factory=dict)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    default_model: str | None = None

    @field_validator("vaults", "pools")
    @classmethod
    def _map_names(cls, value: dict, info) -> dict:
        """A vault's or pool's name becomes a database file name, whoever wrote config.json."""
        for name in value:
            loaded_name(info.field_name.rstrip("s"), name)
        return value

    @model_validator(mode="after")
    def _default_model_is_registered(self) -> ArcanaConfig:
        """``default_model`` names a ``models`` entry, in a hand-edited file as through `config set` (which
        refuses the name first, exit 3): else every run without --model failed later on a name nothing
        registers, and `config validate` said ok. In the file it is the file's error (exit 4)."""
        if self.default_model and self.default_model not in self.models:
            known = ", ".join(sorted(self.models)) or "none"
            raise ValueError(f"default_model: no model named {shown_name(self.default_model)} (models: {known}); "
                             "add it under \"models\" or remove default_model, then `arcana config validate`")
        return self


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    return f"{location}: {message}" if location else message


def parse_json_file(path: Path, text: str, fix: str = "fix the file (arcana config validate)", what: str = "") -> Any:
    """``text`` (the file at ``path``) as JSON, or a one-line ConfigError naming the file (and ``what``
    it is: "invalid agent card: invalid JSON …").

    Read by :func:`memory.strict_json.loads`: a key given twice (a hand-added second
    ``"pools"`` block hid the first, and the next write dropped it for good), NaN,
    1e400 and a number of 5,000 digits (a traceback from every command) are refused.
    """
    try:
        return strict_json.loads(text)
    except strict_json.JSONRefused as exc:
        raise ConfigError(f"{path}: {what}{exc}; {exc.fix or fix} — it was not changed") from None


def load_config(path: Path) -> ArcanaConfig:
    if not path.exists() and not path.is_symlink():  # defaults, but ARCANA_EXTRACTION_* still validate
        return parse_config({}, f"{path} (missing: defaults)")
    try:
        text = read_utf8(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    return parse_config(parse_json_file(path, text), path)


def read_utf8(path: Path) -> str:
    """A config file's text; bytes that are not UTF-8 (a UTF-16 save) are a ConfigError naming the file,
    and so is a link to a file that is gone (read as "missing", it silently dropped every setting)."""
    if path.is_symlink() and not path.exists():
        raise ConfigError(f"{path}: it links to {os.readlink(path)}, which does not exist; "
                          "restore that file or remove the link")
    try:
        return strict_json.decode(path.read_bytes())
    except strict_json.JSONRefused as exc:
        raise ConfigError(f"{path}: {exc}; re-save the file as UTF-8 — it was not changed") from None


def parse_config(raw: Any, path: Path | str = "config.json") -> ArcanaConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    try:
        return ArcanaConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_describe(exc)}") from exc


def dump_config(config: ArcanaConfig) -> dict[str, Any]:
    """Every effective value, defaults filled in (`config show`)."""
    return config.model_dump(mode="json", by_alias=True, exclude_none=False)


def set_part(config: BaseModel, before: Mapping[str, Any] | None = None, file: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What config.json holds of ``config``: the keys the file held (``file``) and those whose value
    differs from ``before`` (the effective values when it was loaded); every other key stays a default.

    A rewrite that wrote every default turned a two-key file into ~70 lines and
    pinned each default, so a better one in a later version never reached that
    user. Without ``before``/``file``, ``config`` is as loaded: its set part is
    what its file set. A map entry new since ``before`` (`pool create`) keeps
    the fields that are not their default.
    """
    if before is None or file is None:
        before, file = dump_config(config), config.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return _set_part(config, before, file)


def _set_part(model: BaseModel, before: Mapping[str, Any] | None, file: Mapping[str, Any]) -> dict[str, Any]:
    after = model.model_dump(mode="json", by_alias=True)
    kept: dict[str, Any] = {}
    for name, spec in type(model).model_fields.items():
        key, value = spec.alias or name, getattr(model, name)
        if before is None:  # a new map entry
            if not spec.is_required() and value == spec.get_default(call_default_factory=True):
                continue
        elif key not in file and before.get(key) == after[key]:
            continue
        old, held = (None if before is None else before.get(key)), file.get(key)
        held = held if isinstance(held, dict) else {}
        if isinstance(value, BaseModel):
            kept[key] = _set_part(value, old, held)
        elif isinstance(value, dict) and all(isinstance(item, BaseModel) for item in value.values()):
            kept[key] = {entry: _set_part(item, (old or {}).get(entry), held.get(entry) or {}) for entry, item in value.items()}
        else:
            kept[key] = after[key]
    return kept


@dataclass
class ConfigEdit:
    """The config being changed inside :func:`editing_config`: change ``config`` in place, or replace it.

    ``pinned`` dotted keys are written even at their default value: `config set` named them.
    """

    config: ArcanaConfig
    pinned: set[str] = field(default_factory=set)


@contextmanager
def editing_config(path: Path) -> Iterator[ConfigEdit]:
    """``path`` loaded under the home's config lock (``<home>/locks/config.lock``), saved on leaving if changed.

    Every command that changes config.json loads it, changes one thing and
    saves it; two at once (`agent join` and `config set` from one script's
    ``&`` jobs) would each write back the file as they read it, and the
    first change would be lost without a word. Under this lock the second
    waits, then loads the file with the first change in it. A block that
    raises saves nothing; one that changes nothing leaves the file untouched
    (a missing file is written as ``{}``). What is saved is the file's keys
    plus the changed ones (:func:`set_part`). Held for milliseconds: never put
    a network call inside.
    """
    from memory.locks import waiting

    with waiting(path.parent / "locks" / "config.lock", f"change of {path.name}"):
        edit = ConfigEdit(load_config(path))
        before, file = dump_config(edit.config), set_part(edit.config)
        yield edit
        pinned = [key for key in sorted(edit.pinned) if _hold(file, key.split("."))]
        if not path.exists() or pinned or dump_config(edit.config) != before:
            _write(path, set_part(edit.config, before, file))


def _hold(file: dict[str, Any], parts: list[str]) -> bool:
    """Mark a dotted key as one the file holds; False when it already did."""
    for part in parts[:-1]:
        file = file.setdefault(part, {})
    held = parts[-1] in file
    file.setdefault(parts[-1], None)
    return not held


def save_config(path: Path, config: ArcanaConfig) -> None:
    """Atomically replace ``path`` with the keys ``config`` was given (:func:`set_part`).

    A caller that loaded ``config`` to change it uses :func:`editing_config` instead.
    """
    _write(path, set_part(config))


def _write(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` atomically (0600); a symlinked config (dotfiles) stays linked."""
    target = path.resolve() if path.is_symlink() else path
    private_dir(target.parent)
    replace_file(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# -- dotted keys ----------------------------------------------------------------


def valid_keys(model: type[BaseModel] = ArcanaConfig, prefix: str = "") -> list[str]:
    """Every settable dotted key; ``<name>`` stands for a user-chosen map key."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        annotation = field.annotation
        origin = getattr(annotation, "__origin__", None)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys += valid_keys(annotation, key + ".")
        elif origin is dict:
            value_type = annotation.__args__[1]
            keys += valid_keys(value_type, key + ".<name>.")
        else:
            keys.append(key)
    return keys


def _pattern(key: str) -> list[str]:
    parts = key.split(".")
    maps = {k.split(".<name>")[0] for k in valid_keys() if "<name>" in k}
    if len(parts) >= 2 and parts[0] in maps:
        parts[1] = "<name>"
    return parts


def check_key(key: str) -> None:
    pattern = ".".join(_pattern(key))
    if pattern in valid_keys():
        return
    suggestion = difflib.get_close_matches(pattern, valid_keys(), n=1, cutoff=0.5)
    hint = f"; did you mean '{suggestion[0]}'?" if suggestion else "; see `arcana config show`"
    raise InvalidRequestError(f"unknown config key '{key}'{hint}")


def get_key(config: ArcanaConfig, key: str) -> Any:
    check_key(key)
    node: Any = dump_config(config)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise NotFoundError(f"config key '{key}' is not set; see `arcana config show`")
        node = node[part]
    return node


def parse_value(text: str, key: str) -> Any:
    """``key``'s value: JSON when it parses (numbers, booleans, null, lists), otherwise the raw string."""
    try:
        return strict_json.loads(text)
    except strict_json.NotJSON:
        return text
    except strict_json.JSONRefused as exc:  # 5,000 digits was a traceback; NaN was read as a float
        raise InvalidRequestError(f"{key}: the value cannot be a config value: {exc}") from None


def set_key(config: ArcanaConfig, key: str, value: Any) -> ArcanaConfig:
    """A new, validated config with ``key`` set; the original is untouched.

    The key and value are the caller's input, not the file's, so a bad one is an
    :class:`InvalidRequestError` (the CLI's exit 2). A plain string for a list-valued
    key is read as comma-separated (``fastembed,ollama``).
    """
    check_key(key)
    if isinstance(value, str) and _is_list_key(key):
        value = [item.strip() for item in value.split(",") if item.strip()]
    data = set_part(config)  # the new config's set keys: the file's and this one
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise InvalidRequestError(f"config key '{key}': '{part}' is not a section")
    node[parts[-1]] = value
    if key == "default_model" and value and isinstance(value, str) and value not in config.models:
        raise unknown_model(value)  # as `agent set --model` refuses it (exit 3), before the file's own check
    try:
        return parse_config(data, "config")
    except ConfigError as exc:
        raise InvalidRequestError(f"{exc}; see `arcana config keys` and man/configuration.md") from None


def unknown_model(name: str) -> NotFoundError:
    """The error for a model name no ``models.<name>`` entry registers (exit 3)."""
    return NotFoundError(f"no model named {shown_name(name)}; see `arcana model list`, or add it with `arcana model add {shown_name(name)} ...`")


def _is_list_key(key: str) -> bool:
    """Whether the (checked) dotted ``key`` holds a list, e.g. ``embedding.providers``."""
    model: Any = ArcanaConfig
    parts = _pattern(key)
    for position, part in enumerate(parts):
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return False
        annotation = field.annotation
        if getattr(annotation, "__origin__", None) is dict:
            model = annotation.__args__[1]
            parts[position + 1 : position + 2] = []  # the <name> part
            continue
        if position == len(parts) - 1:
            return getattr(annotation, "__origin__", None) is list
        model = annotation
    return False
