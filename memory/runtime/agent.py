"""An agent with its memory, and one turn: recall → render → answer → extract → record.

:func:`build_runtime_with_memory` gives a library caller an agent and its
memory, assembled by :func:`memory.runtime.assembly.federation_for_agent` (which
the CLI calls too); the caller owns teardown (``await memory.aclose()``). Extraction and
the session summary run as background jobs after the answer has been handed
to the caller, bounded by a time budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory.agents import AgentCard, AgentRegistry
from memory.audit import AuditLog
from memory.config import ArcanaConfig, load_config
from memory.errors import MemoryStorageError, MemoryWriteError
from memory.extraction.extractors import MemoryExtractor, build_extractor
from memory.extraction.scoring import storable
from memory.federation.federation import MemoryFederation
from memory.home import Home
from memory.jobs import BackgroundJobQueue, JobKind, MemoryJob, drain
from memory.models.base import ChatMessage, ChatProvider, astream
from memory.models.context import RenderedContext, recall_context
from memory.protocols import MemoryAdapter
from memory.redaction import redact
from memory.runtime.assembly import extraction_settings, federation_for_agent
from memory.runtime.sessions import SessionClosedError, SessionManager, held_id, link_carried, replayable, within
from memory.runtime.upkeep import consolidate_if_grown
from memory.types import DERIVED_TAG, Session, Turn

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
CONTEXT_BUDGET_TOKENS = 1000
HISTORY_TURNS = 6
HISTORY_CHARS = 24_000  # of the turns replayed (about 6,000 tokens): a budget, not only a count
JOB_BUDGET_SECONDS = 10.0
MODEL_EXTRACTION_SHARE = 0.5
"""Of the job budget, what a model's extraction may take before the heuristic extracts the turn
instead: past the budget the job was abandoned, so with a slow model "I prefer tea." was never stored."""
MODEL_SUMMARY_SHARE = 0.25
"""Of the job budget, what a model's session summary may take before the heuristic summarises instead:
a hung summary call had the summary and the consolidation after it abandoned (no summary stored)."""
_UNSAVED = (MemoryStorageError, MemoryWriteError)


async def build_runtime_with_memory(
    home: Home,
    agent: str | AgentCard,
    *,
    config: ArcanaConfig | None = None,
    embedding: Any | None = None,
    notify: Callable[[str], None] | None = None,
    actor: str = "library",
) -> tuple[AgentCard, MemoryFederation]:
    """The agent's card and its federation (private tier opened; pools, vaults, global per config).

    With an ``embedding`` gateway recall is semantic/hybrid and the global tier
    exists; without one the agent runs keyword, private plus its pools. The
    caller owns teardown: ``await federation.aclose()``.
    """
    card = agent if isinstance(agent, AgentCard) else AgentRegistry(home).resolve(agent)
    federation = await federation_for_agent(
        card, home=home, config=config, embedding=embedding, notify=notify, actor=actor
    )
    return card, federation


def session_manager(home: Home, config: ArcanaConfig, card: AgentCard, *, with_model: bool = False,
                    audit: AuditLog | None = None) -> SessionManager:
    """The agent's SessionManager; with its chat model when extraction is 'llm' and one is configured
    (``with_model``), else the deterministic extractor — a missing model is never an error here."""
    from memory.errors import InvalidRequestError, NotFoundError
    from memory.models.registry import provider_for, resolve_model_name

    settings = extraction_settings(config, card)
    provider = None
    if with_model and settings.strategy == "llm":
        try:
            provider = provider_for(config, resolve_model_name(config, card))
        except (InvalidRequestError, NotFoundError):
            provider = None  # no model: the deterministic summary
    extractor = build_extractor(settings, provider, audit=audit)
    return SessionManager(home, card.id, extractor=extractor, settings=settings, agent_name=card.name)


@dataclass
class TurnResult:
    answer: str
    session_id: str | None
    recalled_ids: list[str] = field(default_factory=list)
    written_ids: list[str] = field(default_factory=list)
    summary_memory_id: str | None = None
    session_closed: bool = False
    context: RenderedContext = field(default_factory=RenderedContext)
    timings_ms: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, Any] = field(default_factory=dict)
    unsaved: MemoryWriteError | None = None
    """Why the turn's memories (its extraction or summary) could not be stored in the agent's own
    store, if they could not: the answer stands and the turn is in its session file, but what the
    user said is not remembered, which the caller must say (the CLI: exit 5)."""


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


class AgentRuntime:
    """One agent, one model, and (unless disabled) its memory, ready to run turns."""

    def __init__(
        self,
        home: Home,
        card: AgentCard,
        provider: ChatProvider,
        *,
        memory: MemoryAdapter | None,
        config: ArcanaConfig | None = None,
        audit: AuditLog | None = None,
    ):
        self.home = home
        self.card = card
        self.provider = provider
        self.memory = memory
        self.config = config or load_config(home.config_path)
        self.audit = audit or AuditLog(home.audit_log)
        self.settings = extraction_settings(self.config, card)
        self.extractor: MemoryExtractor = build_extractor(self.settings, provider, audit=self.audit)
        self.sessions = SessionManager(home, card.id, extractor=self.extractor, settings=self.settings,
                                       agent_name=card.name)

    async def recall(self, prompt: str, budget_tokens: int) -> RenderedContext:
        if self.memory is None:
            return RenderedContext()
        return await recall_context(
            self.memory, self.card.id, prompt, recall=self.config.recall, budget_tokens=budget_tokens
        )

    async def history(self, session: Session | None) -> list[Turn]:
        """The session's last turns that admission still allows (see :func:`replayable`), within
        :data:`HISTORY_CHARS` (see :func:`within`)."""
        if session is None or self.memory is None:
            return []
        return within(await replayable(session, self.memory, HISTORY_TURNS), HISTORY_CHARS)

    def messages(self, prompt: str, context: RenderedContext, history: list[Turn]) -> list[ChatMessage]:
        system = self.card.system_prompt or DEFAULT_SYSTEM_PROMPT
        if context.text:
            system = f"{system}\n\n{context.text}"
        replayed: list[ChatMessage] = []
        for turn in history:
            replayed += [ChatMessage("user", turn.prompt), ChatMessage("assistant", turn.response)]
        return [ChatMessage("system", system), *replayed, ChatMessage("user", prompt)]

    async def turn(
        self,
        prompt: str,
        *,
        session_id: str | None = None,
        keep_open: bool = False,
        budget_tokens: int = CONTEXT_BUDGET_TOKENS,
        job_budget_seconds: float = JOB_BUDGET_SECONDS,
        on_context: Callable[[RenderedContext], None] | None = None,
        on_chunk: Callable[[str], None] | None = None,
        on_answered: Callable[[], None] | None = None,
    ) -> TurnResult:
        """Run one turn. Without memory: no recall, no extraction, no session, no writes."""
        started = time.perf_counter()
        timings: dict[str, float] = {}
        session = None
        if self.memory is not None and session_id:
            session = self.sessions.load(session_id)
            if session.closed:
                raise SessionClosedError(f"session {session.id} is closed; start a new one")
        recall_started = time.perf_counter()
        context = await self.recall(prompt, budget_tokens)
        history = await self.history(session)  # the replay goes through admission, like recall
        timings["recall_render"] = _ms(time.perf_counter() - recall_started)
        if on_context:
            on_context(context)

        model_started = time.perf_counter()
        chunks: list[str] = []
        async for chunk in astream(self.provider, self.messages(prompt, context, history)):
            chunks.append(chunk)
            if on_chunk:
                on_chunk(chunk)
        answer = "".join(chunks)
        timings["model"] = _ms(time.perf_counter() - model_started)
        if on_answered:
            on_answered()

        if self.memory is not None and session is None:
            # A new session begins with its first answer: a model that fails leaves no empty session open.
            session = self.sessions.create()
        result = TurnResult(answer, session.id if session else None, recalled_ids=context.ids, context=context)
        if session is not None:
            jobs_started = time.perf_counter()
            await self._remember(session, prompt, answer, result, history,
                                 closing=not (keep_open or session_id), budget=job_budget_seconds)
            timings["memory_jobs"] = _ms(time.perf_counter() - jobs_started)
        timings["total"] = _ms(time.perf_counter() - started)
        timings["overhead"] = round(timings["total"] - timings["model"], 3)
        result.timings_ms = timings
        return result

    async def _remember(
        self, session: Session, prompt: str, answer: str, result: TurnResult, history: list[Turn], *,
        closing: bool, budget: float,
    ) -> None:
        """Record the turn now (with the turns replayed to the model); extract and summarise as jobs
        drained within ``budget``."""
        # The model was given the prompt as typed and the person sees its answer; what is kept of
        # them (the session's turn, its echo, its facts, the summary) never holds a pasted key.
        prompt, answer = redact(prompt), redact(answer)
        turn = self.sessions.record_turn(
            session, prompt, answer, model=self.provider.name, recalled_ids=result.recalled_ids, replayed=history
        )
        queue = BackgroundJobQueue(max_drain_seconds=budget)

        async def extract() -> None:
            # An answer given with recalled memories in context (or replayed answers that had them) is
            # not remembered (Turn.evidence).
            said = session.turns[turn].evidence
            entries = storable(await self.extractor.extract(prompt, said, session, within=budget * MODEL_EXTRACTION_SHARE),
                               self.settings)
            echoes, facts = [], []
            for entry in entries:
                held = held_id(await self.memory.write(entry), entry)
                result.written_ids.append(held)
                # Named in the session as it is written: a job cut off by its budget after some
                # writes must still keep this turn out of a replay once one of them is hidden.
                self.sessions.record_written(session, turn, [held])
                # The turn's echo quotes the words its facts were distilled from: it carries them, so
                # hiding, forgetting or re-wording a fact withholds the echo too (and prune takes both).
                if DERIVED_TAG not in entry.tags:
                    facts.append(held)
                    for echo in echoes:
                        await link_carried(self.memory, echo, [held])
                elif held == entry.id:  # a new echo, not an older memory a reconciled write reinforced
                    echoes.append(held)
                    await link_carried(self.memory, held, facts)

        async def summarise() -> None:
            entry = await self.sessions.close_and_summarise(session, memory=self.memory, within=budget * MODEL_SUMMARY_SHARE)
            result.summary_memory_id = entry.id if entry else None

        def submit(job: MemoryJob) -> None:
            if not queue.submit(job):
                self.audit.append("job_shed", job=job.label, agent_id=self.card.id, session_id=session.id)

        # A stated preference is exactly what must not be shed.
        critical = self.extractor.signals.states_preference(prompt)
        submit(MemoryJob(JobKind.EXTRACTION, extract, critical=critical, label="extraction"))
        if closing and self.settings.summarise_on_close:
            submit(MemoryJob(JobKind.SUMMARY, summarise, label="summary"))

        async def consolidate() -> None:  # last: it counts what the jobs before it wrote
            written = len(result.written_ids) + (result.summary_memory_id is not None)
            await consolidate_if_grown(self.home, self.memory, self.card.id, written=written,
                                       every=self.config.memory.consolidate_every, audit=self.audit)

        submit(MemoryJob(JobKind.CONSOLIDATION, consolidate, label="consolidation"))

        def failed(job: MemoryJob, exc: BaseException) -> None:
            self.audit.append(
                f"{job.kind.value}_failed", agent_id=self.card.id, session_id=session.id, error=f"{type(exc).__name__}: {exc}"
            )
            # Trigger: the private store refused a write (not writable, full, busy, corrupt). Why: an
            # audit line alone left `arcana run` at exit 0 with "remember that…" not remembered.
            # Outcome: the first such failure is the result's ``unsaved``; a model's failure is not one.
            if result.unsaved is None and job.kind is not JobKind.CONSOLIDATION and isinstance(exc, _UNSAVED):
                result.unsaved = MemoryWriteError(
                    f"the turn was answered and kept in session {session.id}, but its {job.label} was not stored: {exc}")

        report = await drain(queue, budget_seconds=budget, on_error=failed)
        for label in report.abandoned:
            self.audit.append("job_abandoned", job=label, agent_id=self.card.id, session_id=session.id, budget_seconds=budget)
        if closing:
            self.sessions.close(session)  # a shed or failed summary still closes the one-shot session
        result.session_closed = session.closed
        result.jobs = queue.snapshot()
