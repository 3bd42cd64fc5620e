"""Rules with one home: the name rule for agents, pools and vaults, and the default retrieval mode."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory.agents import AgentRegistry
from memory.config import RecallConfig
from memory.errors import InvalidRequestError
from memory.federation.pools import PoolRegistry
from memory.types import DEFAULT_RETRIEVAL_MODE, MemoryQuery, RetrievalMode
from memory.vaults.registry import VaultRegistry

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("bad", ["bad name!", "-dash", "", "x" * 65, "trailing\n", "dot/slash"])
async def test_agents_pools_and_vaults_refuse_the_same_names(arcana_home, tmp_path, bad):
    arcana_home.ensure()
    folder = tmp_path / "notes"
    folder.mkdir()
    with pytest.raises(InvalidRequestError, match="invalid agent name"):
        AgentRegistry(arcana_home).create(bad)
    with pytest.raises(InvalidRequestError, match="invalid pool name"):
        await PoolRegistry(arcana_home).create(bad)
    with pytest.raises(InvalidRequestError, match="invalid vault name"):
        VaultRegistry(arcana_home).add(folder, bad)
    # control: the same registries take a good name
    assert AgentRegistry(arcana_home).create("ok.name-1").name == "ok.name-1"
    assert (await PoolRegistry(arcana_home).create("ok.name-1")).name == "ok.name-1"
    assert VaultRegistry(arcana_home).add(folder, "ok.name-1").name == "ok.name-1"


def test_the_default_retrieval_mode_is_one_constant():
    assert DEFAULT_RETRIEVAL_MODE is RetrievalMode.hybrid  # measured best (man/benchmarks.md, "Recall quality")
    assert MemoryQuery().retrieval_mode is DEFAULT_RETRIEVAL_MODE
    assert RecallConfig().mode_for() is DEFAULT_RETRIEVAL_MODE
    assert RecallConfig(mode=RetrievalMode.keyword).mode_for() is RetrievalMode.keyword
    assert RecallConfig(mode=RetrievalMode.keyword).mode_for(RetrievalMode.semantic) is RetrievalMode.semantic
    # no caller decides its own fallback
    own_default = re.compile(r"or RetrievalMode\.\w+|retrieval_mode=RetrievalMode\.(hybrid|semantic)\b")
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in [*ROOT.joinpath("memory").rglob("*.py"), *ROOT.joinpath("arcana_cli").rglob("*.py")]
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if own_default.search(line)
    ]
    assert offenders == []
    assert own_default.search("mode or RetrievalMode.hybrid")  # control
