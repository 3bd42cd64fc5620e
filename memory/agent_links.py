"""Where ``config.json`` names an agent: pool members and vault attachments.

Both name the agent by id, so a rename keeps them and a new agent that
reuses a deleted one's name inherits nothing. A config written by hand (or
before vaults were attached by id) may name an agent instead; such a name
still matches, is turned into the id when the agent is renamed, and every
reference is dropped when the agent is deleted.
"""

from __future__ import annotations

from memory.config import ArcanaConfig, editing_config
from memory.home import Home


def names_agent(reference: str | None, agent_id: str, agent_name: str) -> bool:
    """True when a pool member or a vault's ``agent`` means this agent (its id, or a legacy name)."""
    return reference is not None and reference in (agent_id, agent_name)


def relink(home: Home, agent_id: str, agent_name: str, *, deleted: bool) -> int:
    """Rewrite every reference to the agent as its id, or drop them when ``deleted``; how many changed."""
    path = home.config_path
    if not path.exists():
        return 0
    with editing_config(path) as edit:  # another command's change made meanwhile is kept
        return _relink(edit.config, agent_id, agent_name, deleted=deleted)


def _relink(config: ArcanaConfig, agent_id: str, agent_name: str, *, deleted: bool) -> int:
    changed = 0
    pools = {}
    for name, pool in config.pools.items():
        refs = [m for m in pool.members if names_agent(m, agent_id, agent_name)]
        if refs and (deleted or refs != [agent_id]):
            changed += 1
            others = [m for m in pool.members if m not in refs]
            pool = pool.model_copy(update={"members": others if deleted else [*others, agent_id]})
        pools[name] = pool
    vaults = {}
    for name, vault in config.vaults.items():
        if names_agent(vault.agent, agent_id, agent_name) and (deleted or vault.agent != agent_id):
            changed += 1
            vault = vault.model_copy(update={"agent": None if deleted else agent_id})
        vaults[name] = vault
    config.pools, config.vaults = pools, vaults
    return changed
