"""Which store an operator command targets, decided once in the core (issue 10, item 3)."""

from __future__ import annotations

import pytest
from factories import entry

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.config import ArcanaConfig
from memory.errors import InvalidRequestError, NotFoundError
from memory.federation.pools import PoolRegistry
from memory.operator.edits import OperatorTarget, open_editor
from memory.types import MemoryScope, pool_scope

CONFIG = ArcanaConfig.model_validate({"embedding": {"providers": []}})


def test_a_pool_implies_shared_and_refuses_another_scope():
    assert pool_scope(None, "team", MemoryScope.PRIVATE) is MemoryScope.SHARED
    assert pool_scope("shared", "team", None) is MemoryScope.SHARED
    assert pool_scope(None, None, MemoryScope.PRIVATE) is MemoryScope.PRIVATE  # a write's default
    assert pool_scope(None, None, None) is None  # a read's: every tier
    assert pool_scope(MemoryScope.GLOBAL, None, MemoryScope.PRIVATE) is MemoryScope.GLOBAL
    with pytest.raises(InvalidRequestError, match="cannot be combined with scope private"):
        pool_scope("private", "team", MemoryScope.PRIVATE)


async def test_a_pool_or_the_global_tier_wins_over_the_agent(arcana_home):
    card = AgentRegistry(arcana_home).create("ada")
    await PoolRegistry(arcana_home).create("team")
    mine, shared = entry("ada's own", agent_id=card.id), entry("the team's", agent_id=card.id, scope=MemoryScope.SHARED, pool_name="team")
    for path, item in ((arcana_home.agent_db(card.id), mine), (arcana_home.pool_db("team"), shared)):
        store = SQLiteAdapter(path)
        await store.write(item)
        await store.aclose()

    async with open_editor(arcana_home, CONFIG, OperatorTarget(agent="ada")) as editor:
        assert editor.store.path == arcana_home.agent_db(card.id) and editor.copies is not None
        assert (await editor.resolve(mine.id[:8])).content == "ada's own"
    async with open_editor(arcana_home, CONFIG, OperatorTarget(agent="ada", pool="team")) as editor:
        assert editor.store.path == arcana_home.pool_db("team") and editor.copies is None
        assert (await editor.resolve(shared.id)).content == "the team's"
        with pytest.raises(NotFoundError):
            await editor.resolve(mine.id)  # the agent's memory is not in the pool


@pytest.mark.parametrize(
    "target, error",
    [
        (OperatorTarget(), InvalidRequestError),
        (OperatorTarget(pool="team", global_=True), InvalidRequestError),
        (OperatorTarget(agent="nobody"), NotFoundError),
        (OperatorTarget(pool="nope"), NotFoundError),
        (OperatorTarget(global_=True), NotFoundError),  # no global tier yet
    ],
)
async def test_what_cannot_be_targeted_is_refused(arcana_home, target, error):
    AgentRegistry(arcana_home).create("ada")
    await PoolRegistry(arcana_home).create("team")
    with pytest.raises(error):
        async with open_editor(arcana_home, CONFIG, target):
            pass
    assert not arcana_home.global_db.exists()  # refusing created nothing
