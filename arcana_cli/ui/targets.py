"""Which store a page is about: an agent's private memory, a pool, or the global tier — the
CLI's ``--agent`` / ``--pool`` / ``--global``, as query parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from arcana_cli.ui.params import bad
from memory.operator.edits import OperatorTarget


@dataclass(frozen=True)
class Target:
    kind: str  # agent, pool or global
    name: str | None = None  # the agent (name or id) or the pool

    @classmethod
    def of(cls, params: Mapping) -> Target:
        given = [k for k in ("agent", "pool", "global") if params.get(k)]
        if len(given) != 1:
            raise bad("say whose memory: give exactly one of agent=NAME, pool=NAME or global=1")
        kind = given[0]
        if kind == "global":
            if params["global"] != "1":
                raise bad("global: 1")
            return cls("global")
        name = params[kind]
        if len(name) > 100:
            raise bad(f"{kind}: at most 100 characters")
        return cls(kind, name)

    @classmethod
    def of_tier(cls, tier: str, agent_id: str) -> Target | None:
        """Where a recalled memory lives, from its tier label; None for a vault note."""
        if tier == "private":
            return cls("agent", agent_id)
        if tier == "global":
            return cls("global")
        if tier.startswith("pool:"):
            return cls("pool", tier.removeprefix("pool:"))
        return None

    @property
    def operator(self) -> OperatorTarget:
        return OperatorTarget(
            self.name if self.kind == "agent" else None, self.name if self.kind == "pool" else None, self.kind == "global"
        )

    @property
    def params(self) -> dict[str, str]:
        return {"global": "1"} if self.kind == "global" else {self.kind: self.name or ""}

    def query(self, **more) -> str:
        return urlencode({**self.params, **{k: v for k, v in more.items() if v not in (None, "", False)}}, doseq=True)

    @property
    def label(self) -> str:
        return "the global tier" if self.kind == "global" else f"{self.kind} {self.name}"
