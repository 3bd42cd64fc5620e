"""What a digest writes of each turn (memory/consolidation/plan.py): shorter, never a fact or a date less."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.consolidation.plan import aged_out, compact_text, session_digests
from memory.sqlite.fact_words import content_words
from memory.types import MemoryEntry, MemoryType

NAMES = frozenset({"caroline", "melanie"})


def test_a_clause_that_only_names_the_speakers_goes_and_a_fact_beside_a_name_stays():
    assert compact_text("Melanie: Wow, that's cool, Caroline! I ran a charity race on 20 May 2023.", NAMES) == \
        "I ran a charity race on 20 May 2023."
    assert compact_text("Melanie: Caroline, I moved to Lisbon in 2022.", NAMES) == "I moved to Lisbon in 2022."
    assert compact_text("Melanie: Caroline, I moved to Lisbon in 2022.") == "Caroline, I moved to Lisbon in 2022."


def test_a_question_goes_when_the_turn_states_something_and_stays_when_it_is_all_the_turn_says():
    assert compact_text("Caroline: I paint sunsets. What do you paint?", NAMES) == "I paint sunsets."
    assert compact_text("Caroline: Wow, Melanie! What do you paint?", NAMES) == "What do you paint?"
    assert compact_text("Caroline: Thanks, Melanie!", NAMES) == "Thanks, Melanie!"  # nothing else to keep


def test_a_question_with_words_no_statement_of_the_turn_says_stays():
    """Every question went when the turn also stated something, so "Did you know my sister lives in
    Oslo? She is a nurse." was digested as "She is a nurse.": with the turn archived, recall of
    "Oslo" found nothing."""
    assert compact_text("Caroline: Did you know my sister lives in Oslo? She is a nurse.", NAMES) == \
        "Did you know my sister lives in Oslo? She is a nurse."
    assert "Lisbon" in compact_text("Melanie: I moved to Lisbon, right? Anyway I got a dog.", NAMES)
    # control: a question whose words the turn states goes
    assert compact_text("Caroline: I paint sunsets. Do you paint sunsets?", NAMES) == "I paint sunsets."


def test_a_digest_is_shorter_than_its_turns_and_keeps_every_content_word_of_their_statements():
    at = datetime(2023, 5, 8, 13, tzinfo=UTC)
    said = ["Caroline: Hey Melanie! I went to an LGBTQ support group yesterday, and it was so powerful.",
            "Melanie: Wow, that's cool, Caroline! Did you hear any inspiring stories?",
            "Caroline: The transgender stories were so inspiring! I start counseling classes on 3 June."]
    turns = [MemoryEntry(agent_id="ada", type=MemoryType.EPISODIC, content=c, source_session_id="s1",
                         created_at=at + timedelta(seconds=i), updated_at=at + timedelta(seconds=i))
             for i, c in enumerate(said)]
    later = at + timedelta(days=90)
    assert all(aged_out(t, later) for t in turns) and not any(aged_out(t, at) for t in turns)  # control
    (digest,) = session_digests(turns, later)
    text = digest.entry.content
    assert text.startswith("On 8 May 2023: Caroline: I went to an LGBTQ support group yesterday")
    assert len(text) < sum(len(c) for c in said)
    statements = (content_words(said[0]) | content_words(said[2])) - NAMES
    assert statements <= content_words(text)
    assert "3 June" in text and "Wow" not in text
    assert [s.id for s in digest.sources] == [t.id for t in turns]  # every turn is carried, the question too


def test_a_turn_that_says_only_a_number_says_something_and_small_talk_still_says_nothing():
    """Prune's and the digest's "says nothing" test: a one-digit answer ("Tom: 7", the floor asked
    about) was no content word, so it was set aside as small talk."""
    assert compact_text("Tom: 7.") == "7."
    assert compact_text("Tom: haha, yes!") == ""  # control: small talk still carries nothing
    words = content_words("We moved in 2019, in the 1990s it was 3 rooms for $5,000 at 9:45.")
    assert words == {"moved", "2019", "1990s", "room", "3", "5,000", "9:45"}  # a number is one word, whole


def test_a_bare_answer_to_a_question_is_carried_and_small_talk_is_not():
    """"No." after "Did you finish the vase?" was archived as small talk: the digest read as if the
    question had no answer. Now it is carried, a source; "haha, yes!" after a statement stays idle."""
    at = datetime(2023, 5, 8, 13, tzinfo=UTC)
    said = ["Bob: Did you finish the vase?", "Ada: No.", "Ada: I glazed the bowl instead.", "Bob: haha, yes!",
            "Ada: Yes?", "Bob: haha"]
    turns = [MemoryEntry(agent_id="ada", type=MemoryType.EPISODIC, content=c, source_session_id="s1",
                         created_at=at + timedelta(seconds=i), updated_at=at + timedelta(seconds=i))
             for i, c in enumerate(said)]
    (digest,) = session_digests(turns, at + timedelta(days=90))
    assert digest.entry.content == "On 8 May 2023: Bob: Did you finish the vase? Ada: No. I glazed the bowl instead."
    assert [t.content for t in digest.sources] == said[:3]
    # control: a contentless turn after a statement, or after a question without content words, is idle
    assert [t.content for t in digest.idle] == said[3:]


def test_a_question_s_answer_joins_a_full_digest_not_the_next():
    at = datetime(2023, 5, 8, 13, tzinfo=UTC)
    said = [f"Ada: I visited museum number {i}." for i in range(4)] + ["Bob: Was it open late?", "Ada: Yes.",
                                                                      "Ada: I bought a ticket to Porto."]
    turns = [MemoryEntry(agent_id="ada", type=MemoryType.EPISODIC, content=c, source_session_id="s1",
                         created_at=at + timedelta(seconds=i), updated_at=at + timedelta(seconds=i))
             for i, c in enumerate(said)]
    first, second = session_digests(turns, at + timedelta(days=90))
    assert first.entry.content.endswith("Bob: Was it open late? Ada: Yes.") and len(first.sources) == 6
    assert [t.content for t in second.sources] == said[6:]  # control: the sixth contentful turn starts the next
