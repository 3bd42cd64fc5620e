"""A query that names a speaker lifts that speaker's lines among its candidates (memory.ranking.speakers)."""

from __future__ import annotations

from memory.ranking.speakers import SPEAKER_LIFT, lift_named_speakers, speaker_of

CONTENT = {
    "reply": "Melanie: Thanks for the tip, Caroline. Doing research makes sense.",
    "said": "Caroline: Researching adoption agencies, it's been a dream to have a family.",
    "plain": "The quarterly report template lives in the shared drive.",
}
SCORES = {"reply": 1.0, "said": 0.7, "plain": 0.5}


def test_the_named_speakers_line_is_lifted_and_the_others_are_not():
    lifted = lift_named_speakers(SCORES, CONTENT, "What did Caroline research?")
    assert lifted["said"] == SCORES["said"] * (1 + SPEAKER_LIFT)
    assert lifted["reply"] == SCORES["reply"] and lifted["plain"] == SCORES["plain"]  # named, but not its speaker
    assert max(lifted, key=lifted.get) == "said"


def test_a_possessive_names_the_speaker_too():
    assert lift_named_speakers(SCORES, CONTENT, "What are Caroline's plans?")["said"] > SCORES["said"]


def test_a_query_naming_no_speaker_ranks_as_before():
    assert lift_named_speakers(SCORES, CONTENT, "Where is the report template?") == SCORES
    # a speaker's name inside another word, or in lower case, is not the speaker named
    assert lift_named_speakers(SCORES, CONTENT, "Carolines and caroline") == SCORES


def test_speaker_of_reads_a_chat_prefix_only():
    assert speaker_of("Dr Smith: take two a day") == ("Dr Smith", "take two a day")
    assert speaker_of("note: lower-case is no speaker") == (None, "note: lower-case is no speaker")
