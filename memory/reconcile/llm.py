"""The opt-in ``llm`` strategy: one low-temperature call with the candidates, a JSON decision back.

The model only chooses among the candidates it was shown; any error,
timeout, malformed or out-of-range answer raises :class:`LLMDecisionError`,
and the reconciler then adds — never updates or deletes — on a failure.
"""

from __future__ import annotations

import asyncio
import re

from memory import strict_json
from memory.federation.decisions import Decision, DecisionKind
from memory.models.base import ChatMessage, ChatProvider, astream
from memory.types import MemoryEntry

INSTRUCTIONS = """You keep one person's memory consistent. You get a NEW statement and numbered EXISTING
memories. Answer with one JSON object only: {"decision": "add" | "noop" | "update" | "delete", "target": <number or null>}.
- noop: NEW says the same thing as the target memory.
- update: NEW gives a new value for the same subject and attribute as the target (where someone lives, works, ...).
- delete: NEW says the target is no longer true.
- add: anything else, including related but different facts (another person, another project, another pet)."""

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class LLMDecisionError(Exception):
    """The model's decision could not be used."""


def _prompt(entry: MemoryEntry, candidates: list[MemoryEntry]) -> str:
    lines = [f"NEW: {' '.join(entry.content.split())}", "EXISTING:"]
    lines += [f"{i}. {' '.join(c.content.split())}" for i, c in enumerate(candidates, 1)]
    return "\n".join(lines)


def parse_decision(raw: str, candidates: list[MemoryEntry]) -> Decision:
    try:
        data = strict_json.loads(_FENCE.sub("", raw.strip()))
    except strict_json.JSONRefused as exc:
        raise LLMDecisionError(f"malformed JSON from the model: {exc}") from None
    if not isinstance(data, dict):
        raise LLMDecisionError("the model did not answer with an object")
    try:
        kind = DecisionKind(str(data.get("decision", "")).lower())
    except ValueError:
        raise LLMDecisionError(f"unknown decision {data.get('decision')!r}") from None
    if kind is DecisionKind.ADD:
        return Decision(kind, [], "the model: a new fact")
    target = data.get("target")
    if isinstance(target, bool) or not isinstance(target, int) or not 1 <= target <= len(candidates):
        raise LLMDecisionError(f"decision {kind.value} with no valid target ({target!r})")
    return Decision(kind, [candidates[target - 1].id], "the model")


async def llm_decide(
    provider: ChatProvider, entry: MemoryEntry, candidates: list[MemoryEntry], *, timeout: float
) -> Decision:
    messages = [ChatMessage("system", INSTRUCTIONS), ChatMessage("user", _prompt(entry, candidates))]

    async def ask() -> str:
        return "".join([chunk async for chunk in astream(provider, messages, temperature=0.0)])

    try:
        raw = await asyncio.wait_for(ask(), timeout)
    except TimeoutError:
        raise LLMDecisionError(f"the model did not answer within {timeout:g}s") from None
    except Exception as exc:
        raise LLMDecisionError(f"the model failed: {exc}") from exc
    return parse_decision(raw, candidates)
