"""Extraction: typing, distilling, honest confidence, signals per language, LLM fallback, tunables."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_server import LoopbackModelServer

from memory import languages
from memory.audit import AuditLog
from memory.config import ExtractionSettings, load_config, parse_config
from memory.errors import ConfigError
from memory.extraction.extractors import EXTRACTION_INSTRUCTIONS, HeuristicExtractor, LLMExtractor, build_extractor
from memory.extraction.scoring import distil, storable, trim_content
from memory.extraction.signals import ENGLISH, compile_patterns, get_signals, register_language
from memory.models.ollama import OllamaProvider
from memory.models.openai import OpenAIProvider
from memory.runtime.sessions import SessionManager
from memory.types import ConfidenceSource, MemoryType


@pytest.fixture
def session(arcana_home):
    return SessionManager(arcana_home, "agent-1").create()


def kinds(entries):
    return sorted(e.type.value for e in entries)


async def test_plain_turn_is_one_episodic_agent_entry(session):
    entries = await HeuristicExtractor().extract("What is the capital of France?", "Paris.", session)
    assert kinds(entries) == ["episodic"]
    (entry,) = entries
    assert entry.confidence_source is ConfidenceSource.AGENT and entry.confidence == 0.7 < 1.0
    assert entry.source_session_id == session.id and entry.agent_id == "agent-1"


async def test_stated_preference_becomes_distilled_semantic_user_confirmed(session):
    prompt = "By the way, please remember that my project is called Arcana. Can you help?"
    entries = await HeuristicExtractor().extract(prompt, "Sure.", session)
    assert kinds(entries) == ["episodic", "semantic"]
    semantic = next(e for e in entries if e.type is MemoryType.SEMANTIC)
    assert semantic.content == "My project is called Arcana."
    assert semantic.confidence_source is ConfidenceSource.USER_CONFIRMED
    episodic = next(e for e in entries if e.type is MemoryType.EPISODIC)
    assert semantic.confidence > episodic.confidence


async def test_a_question_with_a_preference_cue_states_nothing(session):
    asked = await HeuristicExtractor().extract("What editor do I like? My memory is fuzzy?", "Helix.", session)
    assert kinds(asked) == ["episodic"]
    # control: the same cue in a statement is a durable fact, even next to a question
    told = await HeuristicExtractor().extract("I like Helix. Which editor do you use?", "Noted.", session)
    assert kinds(told) == ["episodic", "semantic"]
    assert next(e for e in told if e.type is MemoryType.SEMANTIC).content == "I like Helix."


async def test_a_title_or_an_initial_does_not_end_the_fact(session):
    """"Dr." ended a sentence: the fact stored was "My dentist is Dr." (found by hunt-44). The control
    in the same prompt: a sentence that does end there is still a sentence of its own."""
    told = await HeuristicExtractor().extract(
        "Remember that my dentist is Dr. Weiss on Baker St. near J. K. Rowling's old flat. Which bus goes there?",
        "The 12.", session,
    )
    facts = [e.content for e in told if e.type is MemoryType.SEMANTIC]
    assert facts == ["My dentist is Dr. Weiss on Baker St. near J. K. Rowling's old flat."]


async def test_howto_answer_with_steps_becomes_procedural(session):
    answer = "Sure:\n1. Open the settings.\n2. Choose Backup.\n3. Press Start."
    entries = await HeuristicExtractor().extract("How do I back up my notes?", answer, session)
    assert kinds(entries) == ["episodic", "procedural"]
    procedural = next(e for e in entries if e.type is MemoryType.PROCEDURAL)
    assert "2. Choose Backup." in procedural.content and procedural.confidence < 1.0
    # control: the same question answered without steps is not a procedure
    assert kinds(await HeuristicExtractor().extract("How do I back up my notes?", "Just copy them.", session)) == ["episodic"]


async def test_importance_comes_from_signals_not_a_constant(session):
    extractor = HeuristicExtractor()
    calm = (await extractor.extract("I prefer tea.", "Noted.", session))[1]
    urgent = (await extractor.extract("Always remember: I prefer tea.", "Noted.", session))[1]
    assert urgent.importance > calm.importance


def test_distil_never_returns_empty():
    assert distil("Remember that.", ENGLISH, 100) == "Remember that."
    assert distil("btw, remember that I use vim", ENGLISH, 100) == "I use vim"


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=1, max_size=300).filter(lambda t: re.search(r"\w", t)), limit=st.integers(8, 200))
def test_distil_and_trim_are_never_empty_and_never_too_long(text, limit):
    for signals in (ENGLISH, get_signals("pt")):
        distilled = distil(text, signals, limit)
        assert distilled.strip() and len(distilled) <= limit
    assert len(trim_content(text, limit)) <= limit


def test_trim_content_caps_with_ellipsis():
    assert trim_content("a  b\n c", 100) == "a b c"
    cut = trim_content("word " * 100, 20)
    assert len(cut) <= 20 and cut.endswith("…")


async def test_min_confidence_to_store_drops_weak_entries(session):
    entries = await HeuristicExtractor().extract("I prefer tea.", "Noted.", session)
    kept = storable(entries, ExtractionSettings(min_confidence_to_store=0.8))
    assert kinds(kept) == ["semantic"]  # the capped agent entry (0.7) is dropped, the user's (0.9) kept


# -- languages ---------------------------------------------------------------


async def test_portuguese_ships_and_distils_in_portuguese(session):
    assert {"en", "pt"} <= set(languages.codes("signal"))
    extractor = HeuristicExtractor(ExtractionSettings(language="pt"))
    entries = await extractor.extract("Aliás, lembre-se de que meu time é o Flamengo.", "Anotado.", session)
    semantic = next(e for e in entries if e.type is MemoryType.SEMANTIC)
    assert semantic.content == "Meu time é o Flamengo."
    steps = "1. Abra o menu.\n2. Clique em salvar."
    assert "procedural" in kinds(await extractor.extract("Como faço para salvar?", steps, session))
    # control: English cues do not fire in Portuguese text
    assert kinds(await HeuristicExtractor().extract("meu time é o Flamengo", "ok", session)) == ["episodic"]


async def test_register_language_without_changing_the_extractor(session):
    german = compile_patterns(
        "de",
        imperative=r"\bmerk dir\b",
        preference=r"\bich\b.*\b(?:mag|bevorzuge)\b",
        howto=r"\bwie (?:kann|mache) ich\b",
        step_word="schritt",
        framing=r"^\s*(?:merk dir,?\s*(?:dass\s+)?)",
    )
    register_language("de", german)
    assert get_signals("de") is german
    entries = await HeuristicExtractor(ExtractionSettings(language="de")).extract("Merk dir, dass ich Tee mag.", "Gut.", session)
    assert next(e for e in entries if e.type is MemoryType.SEMANTIC).content == "Ich Tee mag."
    with pytest.raises(ConfigError, match="no signal patterns for language 'xx'"):
        get_signals("xx")
    with pytest.raises(ConfigError):
        register_language("German", german)


# -- the LLM extractor ---------------------------------------------------------


def extraction_server(reply_for_extraction: str) -> LoopbackModelServer:
    def reply(body):
        system = body["messages"][0]["content"]
        return reply_for_extraction if system == EXTRACTION_INSTRUCTIONS else "a summary"

    return LoopbackModelServer(reply)


@pytest.mark.parametrize("bad", ["this is not json [", "[]", '{"type": "semantic"}', '[{"type": "semantic", "content": 7}]'])
async def test_llm_extractor_falls_back_to_heuristic_and_audits(session, arcana_home, bad):
    audit = AuditLog(arcana_home.audit_log)
    with extraction_server(bad) as server:
        extractor = LLMExtractor(OllamaProvider("m", server.url, "x"), audit=audit)
        entries = await extractor.extract("I prefer tea.", "Noted.", session)
        assert server.requests[0]["body"]["options"] == {"temperature": 0.0}
    assert kinds(entries) == ["episodic", "semantic"]  # exactly what the heuristic gives
    (event,) = [e for e in audit.read() if e["event"] == "extraction_fallback"]
    assert event["session_id"] == session.id and event["reason"]


async def test_llm_extractor_down_falls_back(session):
    extractor = LLMExtractor(OllamaProvider("m", "http://127.0.0.1:9", "x", timeout=1))
    assert kinds(await extractor.extract("I prefer tea.", "Noted.", session)) == ["episodic", "semantic"]


async def test_llm_extractor_output_is_capped_agent_confidence(session):
    good = '```json\n[{"type": "semantic", "content": "User drinks tea.", "importance": 0.8, "confidence": 1.0}]\n```'
    with extraction_server(good) as server:
        extractor = LLMExtractor(OllamaProvider("m", server.url, "x"))
        (entry,) = await extractor.extract("I prefer tea.", "Noted.", session)
    assert entry.content == "User drinks tea." and entry.importance == 0.8
    assert entry.confidence == 0.7 and entry.confidence_source is ConfidenceSource.AGENT


@pytest.mark.parametrize("provider", [OllamaProvider, OpenAIProvider])
async def test_an_answer_the_server_cut_off_at_its_length_limit_is_not_taken(session, arcana_home, provider):
    """A server that stops at its token limit still ends its stream properly ("length"): half a summary
    was stored as the session's summary, and a list cut at an item's end as the turn's memories. Now
    either falls back to the heuristic, with the reason in the audit log; "stop" is the control."""
    audit = AuditLog(arcana_home.audit_log)
    listed = '[{"type": "semantic", "content": "User drinks tea.", "importance": 0.8}]'
    SessionManager(arcana_home, "agent-1").record_turn(session, "I prefer tea.", "Noted.")
    with extraction_server(listed) as server:
        server.reply = lambda body: listed if body["messages"][0]["content"] == EXTRACTION_INSTRUCTIONS else "The user prefers"
        extractor = LLMExtractor(provider("m", server.url, "x"), audit=audit)
        server.finish_reason = "stop"
        assert [e.content for e in await extractor.extract("I prefer tea.", "Noted.", session)] == ["User drinks tea."]
        assert await extractor.summarise(session) == "The user prefers"
        server.finish_reason = "length"
        assert kinds(await extractor.extract("I prefer tea.", "Noted.", session)) == ["episodic", "semantic"]
        assert await extractor.summarise(session) == "Session of 1 turn. User stated: I prefer tea."
    reasons = [(e["what"], e["reason"]) for e in audit.read() if e["event"] == "extraction_fallback"]
    assert [what for what, _ in reasons] == ["extract", "summarise"]
    assert all("length limit" in reason for _, reason in reasons)


def test_build_extractor_llm_without_provider_is_heuristic():
    assert isinstance(build_extractor(ExtractionSettings(strategy="llm")), HeuristicExtractor)
    provider = OllamaProvider("m", "http://127.0.0.1:9", "x")
    assert isinstance(build_extractor(ExtractionSettings(strategy="llm"), provider), LLMExtractor)
    assert isinstance(build_extractor(ExtractionSettings(), provider), HeuristicExtractor)


# -- tunables: config.json → env → default, with bounds ----------------------------


def test_env_precedence(monkeypatch, arcana_home):
    assert parse_config({}).memory.extraction.effective().agent_confidence_cap == 0.7  # default
    monkeypatch.setenv("ARCANA_EXTRACTION_AGENT_CONFIDENCE_CAP", "0.6")
    monkeypatch.setenv("ARCANA_EXTRACTION_MAX_CONTENT", "1000")
    settings = parse_config({}).memory.extraction.effective()
    assert (settings.agent_confidence_cap, settings.max_content) == (0.6, 1000)  # env over default
    file_wins = parse_config({"memory": {"extraction": {"agent_confidence_cap": 0.5}}}).memory.extraction.effective()
    assert (file_wins.agent_confidence_cap, file_wins.max_content) == (0.5, 1000)  # config.json over env


def test_env_is_never_written_back(monkeypatch, cli, arcana_home):
    monkeypatch.setenv("ARCANA_EXTRACTION_AGENT_CONFIDENCE_CAP", "0.6")
    assert cli("config", "set", "recall.limit", "7").exit_code == 0
    monkeypatch.delenv("ARCANA_EXTRACTION_AGENT_CONFIDENCE_CAP")
    assert load_config(arcana_home.config_path).memory.extraction.effective().agent_confidence_cap == 0.7


@pytest.mark.parametrize("value", ["1.0", "1.5", "-0.1", "abc"])
def test_env_cap_out_of_bounds_is_rejected_at_load(monkeypatch, value):
    monkeypatch.setenv("ARCANA_EXTRACTION_AGENT_CONFIDENCE_CAP", value)
    with pytest.raises(ConfigError, match=re.escape(f"ARCANA_EXTRACTION_AGENT_CONFIDENCE_CAP='{value}'")):
        parse_config({})


def test_file_cap_of_one_is_rejected_at_load(arcana_home, cli):
    arcana_home.root.mkdir(parents=True)
    arcana_home.config_path.write_text('{"memory": {"extraction": {"agent_confidence_cap": 1.0}}}')
    with pytest.raises(ConfigError, match="agent_confidence_cap"):
        load_config(arcana_home.config_path)
    validated = cli("config", "validate")
    assert validated.exit_code == 4  # the documented config exit code


def test_user_confidence_must_outrank_agent_cap(monkeypatch):
    monkeypatch.setenv("ARCANA_EXTRACTION_USER_CONFIDENCE", "0.5")
    with pytest.raises(ConfigError, match="user_confidence must be above agent_confidence_cap"):
        parse_config({})


def test_strategy_and_booleans_from_env(monkeypatch):
    monkeypatch.setenv("ARCANA_EXTRACTION_STRATEGY", "llm")
    monkeypatch.setenv("ARCANA_EXTRACTION_SUMMARISE_ON_CLOSE", "false")
    settings = parse_config({}).memory.extraction.effective()
    assert settings.strategy == "llm" and settings.summarise_on_close is False
    monkeypatch.setenv("ARCANA_EXTRACTION_STRATEGY", "magic")
    with pytest.raises(ConfigError, match="ARCANA_EXTRACTION_STRATEGY"):
        parse_config({})
