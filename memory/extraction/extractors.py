"""Turn one exchange (and a whole session) into typed, honestly scored memories.

:class:`HeuristicExtractor` is the default: deterministic, model-free, free.
:class:`LLMExtractor` asks a model for a JSON list and falls back to the
heuristic on any error, so extraction can never fail a run.
"""

from __future__ import annotations

import asyncio
import re
from typing import Protocol

from pydantic import ValidationError

from memory import strict_json
from memory.audit import AuditLog
from memory.config import ExtractionSettings
from memory.extraction.scoring import agent_confidence, distil, importance, trim_content
from memory.extraction.signals import SignalPatterns, get_signals
from memory.models.base import ChatMessage, ChatProvider, astream
from memory.promotion import asserted_importance
from memory.redaction import redact
from memory.types import DERIVED_TAG, ConfidenceSource, MemoryEntry, MemoryType, Session

EXTRACTED_TAG = "extracted"


class MemoryExtractor(Protocol):
    @property
    def signals(self) -> SignalPatterns: ...

    async def extract(
        self, prompt: str, response: str | None, session: Session, *, within: float | None = None
    ) -> list[MemoryEntry]:
        """The memories one exchange gives. ``response`` is None when the answer may not be
        remembered (it was given with recalled memories in context, see :attr:`Turn.evidence`);
        ``within``: the seconds a model may take before the heuristic answers instead."""
        ...

    async def summarise(self, session: Session, *, within: float | None = None) -> str:
        """The session's digest; ``within``: the seconds a model may take before the heuristic answers instead."""
        ...


class HeuristicExtractor:
    """One EPISODIC entry per turn (derived: an echo of the turn); a stated preference → SEMANTIC;
    a how-to with steps → PROCEDURAL."""

    def __init__(self, settings: ExtractionSettings | None = None, signals: SignalPatterns | None = None):
        self.settings = settings or ExtractionSettings()
        self._signals = signals or get_signals(self.settings.language)

    @property
    def signals(self) -> SignalPatterns:
        return self._signals

    def _entry(self, session: Session, kind: MemoryType, content: str, *, tags: tuple[str, ...] = (), **fields) -> MemoryEntry:
        return MemoryEntry(
            agent_id=session.agent_id,
            type=kind,
            content=content,
            source_session_id=session.id,
            tags=[EXTRACTED_TAG, *tags],
            **fields,
        )

    async def extract(
        self, prompt: str, response: str | None, session: Session, *, within: float | None = None
    ) -> list[MemoryEntry]:
        s, cues, limit, size = self.settings, self._signals, self.settings.max_content, self.settings.max_content_bytes
        echo = f"User asked: {prompt.strip()}" + (f" — Assistant answered: {response.strip()}" if response else "")
        entries = [
            self._entry(
                session,
                MemoryType.EPISODIC,
                trim_content(echo, limit, size),
                tags=(DERIVED_TAG,),
                importance=asserted_importance(importance(s.base_importance, prompt, cues, s)),
                confidence=agent_confidence(s),
                confidence_source=ConfidenceSource.AGENT,
            )
        ]
        if cues.states_preference(prompt):
            entries.append(
                self._entry(
                    session,
                    MemoryType.SEMANTIC,
                    distil(prompt, cues, limit, size),
                    importance=importance(s.durable_importance, prompt, cues, s),
                    confidence=s.user_confidence,
                    confidence_source=ConfidenceSource.USER_CONFIRMED,
                )
            )
        steps = cues.step_lines(response or "")
        if cues.asks_howto(prompt) and len(steps) >= 2:
            entries.append(
                self._entry(
                    session,
                    MemoryType.PROCEDURAL,
                    trim_content(f"{prompt.strip()} — " + " ".join(steps), limit, size),
                    importance=asserted_importance(importance(s.durable_importance, prompt, cues, s)),
                    confidence=agent_confidence(s),
                    confidence_source=ConfidenceSource.AGENT,
                )
            )
        return entries

    async def summarise(self, session: Session, *, within: float | None = None) -> str:
        """Deterministic digest: what the user stated, then what was asked."""
        limit = self.settings.max_content
        stated = [distil(t.prompt, self._signals, 200) for t in session.turns if self._signals.states_preference(t.prompt)]
        asked = [trim_content(t.prompt, 80) for t in session.turns if not self._signals.states_preference(t.prompt)]
        parts = [f"Session of {len(session.turns)} turn{'s' if len(session.turns) != 1 else ''}."]
        if stated:
            parts.append(_sentence("User stated: " + "; ".join(dict.fromkeys(s.rstrip(".") for s in stated))))
        if asked:
            parts.append(_sentence("Asked about: " + " | ".join(dict.fromkeys(asked[:5]))))
        return trim_content(" ".join(parts), limit, self.settings.max_content_bytes)


def _sentence(text: str) -> str:
    """End ``text`` with exactly one full stop unless it already ends a sentence."""
    return text if text.endswith((".", "!", "?", "…")) else text + "."


MAX_EXTRACTED = 50
"""The most memories one exchange may give: an answer with more (a runaway or hostile model, which
could otherwise fill the store from one turn) is not used, and the heuristic answers for the turn."""

EXTRACTION_INSTRUCTIONS = f"""You extract durable memories from one exchange between a user and an assistant.
Answer with ONLY a JSON list of at most {MAX_EXTRACTED} items (no prose, no code fence). Each item is an object:
{{"type": "episodic" | "semantic" | "procedural", "content": "<one self-contained sentence>", "importance": <0..1>}}
Use "semantic" for lasting facts or preferences the user stated, "procedural" for how-to steps,
"episodic" for what happened. Return [] when nothing is worth remembering."""

SUMMARY_INSTRUCTIONS = """Summarise this conversation in at most three sentences, keeping every lasting fact
or preference the user stated. Answer with the summary only."""

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class ExtractionFallback(Exception):
    """Why the model's extraction was not used for this turn."""


class LLMExtractor:
    """One low-temperature call returning a JSON list; the heuristic on any failure."""

    def __init__(
        self,
        provider: ChatProvider,
        settings: ExtractionSettings | None = None,
        *,
        fallback: HeuristicExtractor | None = None,
        audit: AuditLog | None = None,
        temperature: float = 0.0,
    ):
        self.provider = provider
        self.settings = settings or ExtractionSettings()
        self.fallback = fallback or HeuristicExtractor(self.settings)
        self.audit = audit
        self.temperature = temperature

    @property
    def signals(self) -> SignalPatterns:
        return self.fallback.signals

    async def _ask(self, system: str, user: str, within: float | None) -> str:
        """The model's whole answer; one past ``within`` seconds is a failure like any other (the heuristic answers)."""
        messages = [ChatMessage("system", system), ChatMessage("user", user)]

        async def answer() -> str:
            return "".join([chunk async for chunk in astream(self.provider, messages, temperature=self.temperature)])

        try:
            return await asyncio.wait_for(answer(), within)
        except TimeoutError:
            if within is None:
                raise
            raise ExtractionFallback(f"the model took longer than {within:g}s") from None

    def _fell_back(self, what: str, session: Session, reason: object) -> None:
        if self.audit is not None:
            self.audit.append(
                "extraction_fallback", what=what, agent_id=session.agent_id, session_id=session.id,
                model=self.provider.name, reason=redact(str(reason))[:300],
            )

    async def extract(
        self, prompt: str, response: str | None, session: Session, *, within: float | None = None
    ) -> list[MemoryEntry]:
        exchange = _exchange(prompt, response, self.settings.max_content)
        try:
            return self._parse(await self._ask(EXTRACTION_INSTRUCTIONS, exchange, within), session)
        except Exception as exc:  # any model or parse failure, or a model past ``within``: the heuristic answers
            self._fell_back("extract", session, exc)
            return await self.fallback.extract(prompt, response, session)

    def _parse(self, raw: str, session: Session) -> list[MemoryEntry]:
        try:
            items = strict_json.loads(_FENCE.sub("", raw.strip()))
        except strict_json.JSONRefused as exc:
            raise ExtractionFallback(f"malformed JSON from the model: {exc}") from None
        if not isinstance(items, list) or not items:
            raise ExtractionFallback("the model returned no memories" if items == [] else "the model did not return a list")
        if len(items) > MAX_EXTRACTED:
            raise ExtractionFallback(f"the model returned {len(items)} memories, more than the {MAX_EXTRACTED} one exchange may give")
        entries = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("content"), str):
                raise ExtractionFallback(f"item without string content: {_quoted(item)}")
            try:
                kind = MemoryType(item.get("type", "episodic"))
                entries.append(
                    MemoryEntry(
                        agent_id=session.agent_id,
                        type=kind,
                        # The model's words are untrusted: a key it repeats is not stored.
                        content=trim_content(redact(item["content"]), self.settings.max_content, self.settings.max_content_bytes),
                        # Model output is agent-asserted whatever it claims: confidence capped
                        # below 1.0, importance below the promotion threshold.
                        importance=asserted_importance(item.get("importance", self.settings.base_importance)),
                        confidence=agent_confidence(self.settings, item.get("confidence")),
                        confidence_source=ConfidenceSource.AGENT,
                        source_session_id=session.id,
                        # An account of what happened in the turn is an echo of it, as the heuristic's is.
                        tags=[EXTRACTED_TAG, DERIVED_TAG] if kind is MemoryType.EPISODIC else [EXTRACTED_TAG],
                    )
                )
            except (ValueError, TypeError, ValidationError) as exc:
                raise ExtractionFallback(f"invalid item {_quoted(item)}: {str(exc).splitlines()[0]}") from None
        return entries

    async def summarise(self, session: Session, *, within: float | None = None) -> str:
        transcript = "\n\n".join(_exchange(t.prompt, t.evidence, self.settings.max_content) for t in session.turns)
        try:
            answer = await self._ask(SUMMARY_INSTRUCTIONS, trim_content(transcript, 4 * self.settings.max_content), within)
            summary = redact(answer).strip()
            if not summary:
                raise ExtractionFallback("the model returned an empty summary")
            return trim_content(summary, self.settings.max_content, self.settings.max_content_bytes)
        except Exception as exc:
            self._fell_back("summarise", session, exc)
            return await self.fallback.summarise(session)


def _quoted(item: object) -> str:
    """A refused item as the audit line quotes it: redacted before it is cut, as a cut key has no shape."""
    return redact(str(item))[:80]


def _exchange(prompt: str, response: str | None, limit: int) -> str:
    """One turn as the model reads it; an answer that may not be remembered is left out."""
    user = f"User:\n{trim_content(prompt, limit)}"
    return user if response is None else f"{user}\n\nAssistant:\n{trim_content(response, limit)}"


def build_extractor(
    settings: ExtractionSettings, provider: ChatProvider | None = None, *, audit: AuditLog | None = None
) -> MemoryExtractor:
    """The configured extractor; ``llm`` without a model provider is forced to the heuristic."""
    heuristic = HeuristicExtractor(settings)
    if settings.strategy == "llm" and provider is not None:
        return LLMExtractor(provider, settings, fallback=heuristic, audit=audit)
    return heuristic
