"""Agent cards at ``~/.arcana/agents/{id}/agent.json`` and lookup by name or id."""

from __future__ import annotations

import contextlib
import difflib
import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memory.agent_links import relink
from memory.config import ExtractionConfig, parse_json_file
from memory.errors import ConfigError, InvalidRequestError, NotFoundError
from memory.home import Home, check_name, is_safe_name, loaded_name, private_dir, replace_file, shown_name, unusable_name
from memory.locks import waiting
from memory.types import MemoryType, now_utc

class AgentCard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    name: str
    created_at: datetime = Field(default_factory=now_utc)
    model: str | None = None
    system_prompt: str | None = None
    # 0..1 as `agent set --weight` takes them, whoever wrote the card: a hand-edited NaN put `NaN`
    # (not JSON) in every `recall --json`, and a negative weight ranked the type below everything.
    memory_weights: dict[MemoryType, Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]] = Field(
        default_factory=dict)
    decay: dict[str, dict] = Field(default_factory=dict)
    extraction: dict = Field(default_factory=dict)

    def as_dict(self) -> dict:
        return json.loads(self.model_dump_json())

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return loaded_name("agent id", value)  # the id is the agent's folder name

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return loaded_name("agent", value)  # the name becomes part of the trash folder's name

    @field_validator("extraction")
    @classmethod
    def _extraction(cls, value: dict) -> dict:
        """Checked as `agent set --extraction` checks it: a hand-edited ``"max_content": "lots"`` was read,
        and every recall and remember of the agent then failed as a usage error naming no file."""
        ExtractionConfig.check_override(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _drop_retired_keys(cls, data: Any) -> Any:
        """Cards written before pool membership moved to config.json carry ``pools``; it is ignored."""
        if isinstance(data, dict) and "pools" in data:
            data = {k: v for k, v in data.items() if k != "pools"}
        return data


def validate_name(name: str) -> str:
    return check_name("agent", name)


# What ``resolve`` could take for an id: a hex prefix (6-32 digits) or a dashed UUID.
_ID_LIKE = re.compile(r"^(?:[0-9a-f]{6,32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)


def refuse_id_like(name: str) -> None:
    """An agent name that reads as an id would shadow (or later be shadowed by) an agent's id in ``--agent``."""
    if _ID_LIKE.match(name):
        raise InvalidRequestError(
            f"agent name '{name}' looks like an agent id (6-32 hex digits or a UUID), so `--agent {name}` "
            "would be ambiguous; choose a name with a non-hex letter, e.g. 'agent-" + name[:8] + "'"
        )


class AmbiguousAgentError(NotFoundError):
    """An id prefix that more than one agent's id starts with (exit 3, as for a memory id prefix)."""


@dataclass(frozen=True)
class UnreadableCard:
    """An ``agents/<id>/agent.json`` that cannot be read, and the ConfigError saying why and how to fix it."""

    path: Path
    error: ConfigError

    @property
    def agent_id(self) -> str:
        return self.path.parent.name  # a card is only valid in the folder named after its id

    def __str__(self) -> str:
        return str(self.error)


@dataclass
class Roster:
    """The agents a home has: ``cards`` readable (by name), ``unreadable`` named for the operator."""

    cards: list[AgentCard] = field(default_factory=list)
    unreadable: list[UnreadableCard] = field(default_factory=list)

    def shared_names(self) -> dict[str, list[str]]:
        """Each name more than one readable card holds, with those cards' ids. `agent create` and
        `rename` never give a name twice; an edit or a copy outside Arcana can."""
        ids: dict[str, list[str]] = {}
        for card in self.cards:
            ids.setdefault(card.name, []).append(card.id)
        return {name: held for name, held in ids.items() if len(held) > 1}

    def complete(self) -> list[AgentCard]:
        """The cards when every one is readable, else the first unreadable one's ConfigError."""
        if self.unreadable:
            more = len(self.unreadable) - 1
            if not more:
                raise self.unreadable[0].error
            raise ConfigError(f"{self.unreadable[0]} (and {more} more unreadable agent card(s); see `arcana doctor`)")
        return self.cards


class AgentRegistry:
    def __init__(self, home: Home):
        self.home = home

    def _card_path(self, agent_id: str) -> Path:
        return self.home.agent_dir(agent_id) / "agent.json"

    def scan(self) -> Roster:
        """Every agent card: the readable ones by name, and each unreadable one with why.

        One bad card must not stop the others: lookups and --all runs work on
        the readable cards and name the unreadable ones.
        """
        roster = Roster()
        if self.home.agents_dir.exists():
            for path in sorted(self.home.agents_dir.glob("*/agent.json")):
                try:
                    roster.cards.append(self._load(path))
                except ConfigError as exc:
                    roster.unreadable.append(UnreadableCard(path, exc))
        roster.cards.sort(key=lambda c: c.name)
        return roster

    def list(self) -> list[AgentCard]:
        """Every agent, or the first unreadable card's ConfigError: for callers that need all or nothing."""
        return self.scan().complete()

    def get(self, agent_id: str) -> AgentCard | None:
        """The agent whose id is exactly ``agent_id`` (its folder), None if none; its ConfigError if unreadable."""
        if not is_safe_name(agent_id):  # no agent's folder has such a name (an import's id is unchecked input)
            return None
        path = self._card_path(agent_id)
        return self._load(path) if path.is_file() else None

    def _load(self, path: Path) -> AgentCard:
        """A card as read; its id must be its folder's name, or a copied card could take over another agent."""
        fix = (f"; repair the JSON by hand, or move {path.parent} into {self.home.trash_dir} "
               "to set the agent aside")
        try:
            text = path.read_text(encoding="utf-8")
        except (ValueError, OSError) as exc:
            raise ConfigError(f"{path}: invalid agent card: {exc}".splitlines()[0] + fix) from None
        raw = parse_json_file(path, text, fix.removeprefix("; "), what="invalid agent card: ")
        try:
            card = AgentCard.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "card"
            why = first["msg"].removeprefix("Value error, ")
            raise ConfigError(f"{path}: invalid agent card: {where}: {why}".splitlines()[0] + fix) from None
        if card.id != path.parent.name:
            raise ConfigError(f"{path}: the card's id {card.id!r} is not its folder's name {path.parent.name!r}; "
                              "a card is only valid in agents/<its id>/ (restore the folder as it was backed up)")
        return card

    def resolve(self, name_or_id: str, roster: Roster | None = None) -> AgentCard:
        """Find an agent by exact id, then exact name, then a unique id prefix (6+ chars), in
        ``roster`` when given (a scan already made), else in a scan of the cards.

        An id outranks a name, so no name (even one made before names that look
        like ids were refused) can take over ``--agent <id>``. An unreadable
        card's id is its folder's name: asked for by it (or a prefix of it), it
        is its ConfigError. A name no readable card has, beside an unreadable
        card, is that card's ConfigError, never NotFoundError: the unreadable
        card may be the one asked for, and ``resolve_or_create`` must not make its twin.
        """
        roster = roster if roster is not None else self.scan()
        cards, broken = roster.cards, {u.agent_id: u for u in roster.unreadable}
        for card in cards:
            if card.id == name_or_id:
                return card
        if name_or_id in broken:
            raise broken[name_or_id].error
        named = [card.id for card in cards if card.name == name_or_id]
        if len(named) > 1:  # taking the first would write one agent's memories into another's store
            raise shared_name(name_or_id, named)
        if named:
            return next(card for card in cards if card.id == named[0])
        if len(name_or_id) >= 6:
            matches = [c.id for c in cards if c.id.startswith(name_or_id)]
            matches += [i for i in broken if i.startswith(name_or_id)]
            if len(matches) == 1:
                if matches[0] in broken:
                    raise broken[matches[0]].error
                return next(c for c in cards if c.id == matches[0])
            if matches:  # as a memory id prefix is: said, never taken for a missing name
                named = {c.id: repr(c.name) for c in cards}
                raise AmbiguousAgentError(
                    f"agent id prefix {shown_name(name_or_id)} is ambiguous ({len(matches)} agents: "
                    f"{', '.join(named.get(i, f'unreadable {i}') for i in matches)}); "
                    "give more characters of the id, or the name"
                )
        roster.complete()  # the name may be an unreadable card's
        if _ID_LIKE.match(name_or_id):  # `agent create` refuses such a name: do not send the user there
            raise NotFoundError(f"no agent has the name or id {shown_name(name_or_id)} (nor can one be named like an id); "
                                "see `arcana agent list`")
        if why := unusable_name("agent", name_or_id):  # nor there, for an empty or malformed name
            raise NotFoundError(f"no agent named {shown_name(name_or_id)} ({why}); see `arcana agent list`")
        raise NotFoundError(
            f"no agent named {shown_name(name_or_id)}{did_you_mean(name_or_id, cards)}; "
            f"create it with `arcana agent create {name_or_id}`"
        )

    def near(self, name: str) -> str:
        """`` (did you mean 'ada'?)`` when a readable agent's name is close to ``name`` (a typo), else ''."""
        return did_you_mean(name, self.scan().cards)

    def exists(self, name: str) -> bool:
        """Whether an agent has ``name``; an unreadable card's ConfigError when no readable one has it
        (that card may have it: a rename to it would make a twin)."""
        roster = self.scan()
        if any(c.name == name for c in roster.cards):
            return True
        roster.complete()
        return False

    @contextmanager
    def _naming(self) -> Iterator[None]:
        """One process at a time decides whether a name is free and takes it (creation, rename),
        so racing first writes to a new name never make twin agents."""
        self.home.ensure()
        with waiting(self.home.locks_dir / "agents.lock", "naming of an agent"):
            yield

    def create(self, name: str) -> AgentCard:
        card, made = self._take(name)
        if not made:
            raise InvalidRequestError(f"an agent named {shown_name(name)} already exists; pick another name, or use it as it is")
        return card

    def resolve_or_create(self, name_or_id: str) -> tuple[AgentCard, bool]:
        """The agent ``name_or_id`` names, made (as name) when there is none; True when made here."""
        try:
            return self.resolve(name_or_id), False
        except AmbiguousAgentError:
            raise  # it names agents that exist; a new one would be a third
        except NotFoundError:
            if _ID_LIKE.match(name_or_id):
                # Trigger: an id no agent has (a host's hook after `agent delete`). Why: it was taken as a
                # name and refused, exit 2 ("choose a name"), which blocks a PreCompact hook's compaction.
                # Outcome: not found, exit 3, nothing made.
                raise
            return self._take(name_or_id)

    def restore(self, wanted: list[tuple[AgentCard | None, str]]) -> list[tuple[AgentCard, bool]]:
        """The agents an import restores, each given as (its card as the file describes it, or None; its
        name): the agent of that card's exact id, else the one of that name, else that card made (with
        no card: :meth:`resolve_or_create`'s). True when made here. All are looked up in one scan, under
        the naming lock: a scan per agent made a header of 2,000 agents quadratic."""
        with self._naming():
            roster = self.scan()
            return [self._restored(roster, card, name) for card, name in wanted]

    def _restored(self, roster: Roster, card: AgentCard | None, name: str) -> tuple[AgentCard, bool]:
        if card is not None:
            same = next((c for c in roster.cards if c.id == card.id), None)
            if same is not None:
                return same, False
            for unreadable in roster.unreadable:  # that agent's own card is unreadable: its ConfigError
                if unreadable.agent_id == card.id:
                    raise unreadable.error
            if not any(c.name == name for c in roster.cards):
                roster.complete()  # an unreadable card may have the name: never its twin
                return self._made(roster, card)
        try:
            return self.resolve(name, roster), False
        except AmbiguousAgentError:
            raise  # it names agents that exist; a new one would be a third
        except NotFoundError:
            validate_name(name)
            refuse_id_like(name)
            return self._made(roster, AgentCard(name=name))

    def _made(self, roster: Roster, card: AgentCard) -> tuple[AgentCard, bool]:
        self.save(card)
        roster.cards.append(card)
        return card, True

    def _take(self, name: str) -> tuple[AgentCard, bool]:
        """(the agent that has ``name`` or ``name`` as id, False) or (a new agent named ``name``, True)."""
        validate_name(name)
        refuse_id_like(name)
        with self._naming():
            try:
                return self.resolve(name), False  # another process made it while we waited
            except NotFoundError:
                card = AgentCard(name=name)
                self.save(card)
                return card, True

    def save(self, card: AgentCard) -> None:
        self.home.ensure()
        path = self._card_path(card.id)
        private_dir(path.parent)
        try:
            replace_file(path, card.model_dump_json(indent=2) + "\n")  # a crash never leaves an empty card
        except BaseException:  # a full disk: no temp file left, nor the empty folder of an agent never made
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only when empty: an existing agent's folder holds its card and store
            raise

    def rename(self, name_or_id: str, new_name: str) -> AgentCard:
        validate_name(new_name)
        refuse_id_like(new_name)
        with self._naming():
            card = self.resolve(name_or_id)
            if new_name != card.name and self.exists(new_name):
                raise InvalidRequestError(f"an agent named {shown_name(new_name)} already exists; pick another name")
            old_name, card.name = card.name, new_name
            self.save(card)
            relink(self.home, card.id, old_name, deleted=False)  # a hand-written name becomes the id
        return card

    @contextmanager
    def editing(self, name_or_id: str) -> Iterator[AgentCard]:
        """The agent's card as it is now, saved when the block ends without an error.

        Held under the lock creation and rename take, so a change made
        meanwhile by another process (a rename, another `agent set`) is in the
        card this one changes and is never written back over; an agent deleted
        meanwhile is NotFoundError, never a card left behind in an empty folder.
        """
        with self._naming():
            card = self.resolve(name_or_id)
            yield card
            self.save(card)

    def delete(self, name_or_id: str) -> Path:
        """Move the agent's folder (card, memory, sessions) to the trash; return where.

        Its pool memberships and vault attachments go with it, so an agent
        created later under the same name starts with none of them.
        """
        with self._naming():  # a card being changed is saved first, or finds the agent gone
            card = self.resolve(name_or_id)
            dest = self.home.trash_place(f"agent-{card.name}-{card.id}")
            self.home.agent_dir(card.id).replace(dest)
            # After the move: a move that fails leaves the agent with its pools and vaults, and a
            # relink that fails leaves only references to an id no agent will have again.
            relink(self.home, card.id, card.name, deleted=True)
        return dest


def shared_name(name: str, ids: list[str]) -> ConfigError:
    """The error for a name on several agents' cards: which one is meant only an id can say."""
    return ConfigError(f"the agent name '{name}' is on {len(ids)} agents' cards (ids {', '.join(ids)}); "
                       f"give the id, and rename all but one (`arcana agent rename {ids[-1]} NEW-NAME`)")


def did_you_mean(name: str, cards: list[AgentCard]) -> str:
    """`` (did you mean 'ada'?)`` for the agent names closest to ``name`` (case ignored), else ''."""
    names = {card.name.lower(): card.name for card in cards}
    close = difflib.get_close_matches(name.lower(), list(names), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(names[c]) for c in close)}?)" if close else ""
