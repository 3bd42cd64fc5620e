"""``~/.arcana/config.json``: pydantic models, loading, dotted-key edits.

A malformed file is a :class:`ConfigError` naming the file and the field; a
missing file means defaults. Writes validate first and replace atomically, so a
bad ``config set`` never leaves a half-written file.
"""

from __future__ import annotations

import difflib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory.embedding.fusion import DEFAULT_KEYWORD_WEIGHT, DEFAULT_VECTOR_WEIGHT
from memory.errors import ConfigError
from memory.types import PruneMode, RetrievalMode


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)


class ExtractionConfig(_Section):
    strategy: str = "heuristic"
    agent_confidence_cap: float = Field(default=0.7, ge=0.0, lt=1.0)
    summarise_on_close: bool = True
    min_confidence_to_store: float = Field(default=0.3, ge=0.0, le=1.0)

    @field_validator("strategy")
    @classmethod
    def _strategy(cls, value: str) -> str:
        if value not in ("heuristic", "llm"):
            raise ValueError("strategy must be 'heuristic' or 'llm'")
        return value


class MemoryConfig(_Section):
    enabled: bool = True
    private: str = "sqlite"
    global_: str = Field(default="vector", alias="global")
    pools: list[str] = Field(default_factory=list)
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)


class RecallConfig(_Section):
    mode: RetrievalMode | None = None  # None: hybrid when an embedder is healthy, else keyword
    limit: int = Field(default=10, ge=1, le=1000)


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

    @field_validator("providers")
    @classmethod
    def _providers(cls, value: list[str]) -> list[str]:
        unknown = [p for p in value if p not in ("fastembed", "ollama")]
        if unknown:
            raise ValueError(f"unknown provider {unknown[0]!r}; use 'fastembed' and/or 'ollama'")
        return value


class PruneConfig(_Section):
    min_importance: float | None = Field(default=None, ge=0.0, le=1.0)
    max_entries: int | None = Field(default=None, ge=0)
    mode: PruneMode = PruneMode.ARCHIVE


class VaultConfig(_Section):
    path: str
    agent: str | None = None
    pool: str | None = None
    ignore: list[str] = Field(default_factory=list)
    max_file_bytes: int = Field(default=1024 * 1024, ge=1)


class PoolSettings(_Section):
    members: list[str] = Field(default_factory=list)


class ModelConfig(_Section):
    provider: str
    base_url: str
    model: str
    api_key_env: str | None = None


class ArcanaConfig(_Section):
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    prune: PruneConfig = Field(default_factory=PruneConfig)
    vaults: dict[str, VaultConfig] = Field(default_factory=dict)
    pools: dict[str, PoolSettings] = Field(default_factory=dict)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    default_model: str | None = None


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    location = ".".join(str(part) for part in first["loc"]) or "(root)"
    return f"{location}: {first['msg']}"


def load_config(path: Path) -> ArcanaConfig:
    if not path.exists():
        return ArcanaConfig()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; fix the file "
            "(arcana config validate) — it was not changed"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    return parse_config(raw, path)


def parse_config(raw: Any, path: Path | str = "config.json") -> ArcanaConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    try:
        return ArcanaConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_describe(exc)}") from exc


def dump_config(config: ArcanaConfig) -> dict[str, Any]:
    return config.model_dump(mode="json", by_alias=True, exclude_none=False)


def save_config(path: Path, config: ArcanaConfig) -> None:
    """Atomically replace ``path`` (0600) with ``config``."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = json.dumps(dump_config(config), indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    raise ConfigError(f"unknown config key '{key}'{hint}")


def get_key(config: ArcanaConfig, key: str) -> Any:
    check_key(key)
    node: Any = dump_config(config)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"config key '{key}' is not set")
        node = node[part]
    return node


def parse_value(text: str) -> Any:
    """JSON when it parses (numbers, booleans, null, lists), otherwise the raw string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def set_key(config: ArcanaConfig, key: str, value: Any) -> ArcanaConfig:
    """A new, validated config with ``key`` set; the original is untouched."""
    check_key(key)
    data = dump_config(config)
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"config key '{key}': '{part}' is not a section")
    node[parts[-1]] = value
    return parse_config(data, "config")
