"""Changing settings as one core call per way in: `config set` and an agent card's extraction block.

Each holds a value to the rules the file's own load cannot (a language
needs a cue set registered, which the kernel's config model cannot see), so
a library caller is refused what the CLI is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memory.config import ExtractionConfig, editing_config, get_key, load_config, set_key
from memory.errors import InvalidRequestError
from memory.extraction.signals import check_language
from memory.home import Home
from memory.vaults.registry import VaultRegistry


def set_config_key(home: Home, key: str, value: Any) -> Any:
    """Set ``key`` to ``value`` in the home's config.json and return it as stored.

    A bad key or value is refused (:class:`InvalidRequestError`, exit 2) before
    the home is made; a vault's fields are held to `vault add`'s rules (its agent
    stored by id); another command's change made meanwhile is kept.
    """
    vaults = VaultRegistry(home)
    parts = key.split(".")

    def changed(config):
        config = set_key(config, key, value)
        if key == "memory.extraction.language" and isinstance(value, str):
            check_language(value)
        return vaults.settled(config, parts[1], parts[2]) if parts[0] == "vaults" and len(parts) == 3 else config

    changed(load_config(home.config_path))
    home.ensure()
    with editing_config(home.config_path) as edit:
        edit.config = changed(edit.config)
        edit.pinned.add(key)
    return get_key(edit.config, key)


async def apply_config_key(home: Home, key: str, value: Any, *, notify: Callable[[str], None] | None = None) -> Any:
    """:func:`set_config_key`, then what the change means for data already stored: a vault whose
    ``ignore`` changed drops the indexed notes it now excludes, so they leave every read at once."""
    from memory.vaults.indexer import drop_excluded

    before = load_config(home.config_path).vaults if key.split(".")[0] == "vaults" else {}
    stored = set_config_key(home, key, value)
    for vault in VaultRegistry(home).list() if before else ():
        if vault.name in before and before[vault.name].ignore != vault.config.ignore:
            await drop_excluded(vault, notify=notify)
    return stored


def extraction_with(block: Mapping[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """An agent card's ``extraction`` block with ``updates`` laid over it (`agent set --extraction`),
    checked as `config set memory.extraction.*` checks it: the options are wrong, not the card."""
    from pydantic import ValidationError

    merged = {**block, **updates}
    try:
        ExtractionConfig.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        why = first["msg"].removeprefix("Value error, ")
        raise InvalidRequestError(
            f"--extraction {where + ': ' if where else ''}{why}; see `arcana config keys` (memory.extraction.*)"
        ) from None
    if isinstance(updates.get("language"), str):
        try:
            check_language(updates["language"])
        except InvalidRequestError as exc:
            raise InvalidRequestError(str(exc).replace("memory.extraction.language", "--extraction language", 1)) from None
    return merged
