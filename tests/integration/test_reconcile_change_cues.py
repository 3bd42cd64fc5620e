"""Issue 23: a change said in everyday words ("I switched from tea to coffee") ends the old fact at write
time; a cue word that is not about the old fact, an additive "also", a negated cue or a question ends
nothing. Real SQLite, real fastembed, and keyword-only; each exclusion beside a supersession in the same store."""

from __future__ import annotations

import json

import pytest


import phrased_update_eval as pe  # noqa: E402

from memory.types import MemoryEntry, MemoryType  # noqa: E402


class Store:
    """One agent store behind a reconciling federation, as ``arcana remember`` writes."""

    def __init__(self, backend, federation):
        self.backend, self.federation = backend, federation
        self.ids: dict[str, str] = {}

    async def say(self, text: str) -> list[str]:
        """Write ``text``; the texts it superseded."""
        entry = MemoryEntry(agent_id="ada", content=text, type=MemoryType.SEMANTIC)
        self.ids[text] = entry.id
        report = await self.federation.write(entry)
        by_id = {v: k for k, v in self.ids.items()}
        return [by_id[i] for i in report.supersedes]

    async def current(self) -> set[str]:
        """What recall may still answer: the current versions (through the admission predicate)."""
        return {text for text, i in self.ids.items() if await self.backend.get(i) is not None}


@pytest.fixture(params=[True, False], ids=["fastembed", "keyword-only"])
async def store(request, tmp_path, offline_embedder):
    backend, federation = await pe.open_store(tmp_path / "ada.db", offline_embedder if request.param else None)
    yield Store(backend, federation)
    await backend.aclose()


async def test_a_cue_phrased_change_ends_the_old_fact_and_not_the_new_value(store):
    await store.say("I drink tea every morning.")
    await store.say("I drink coffee at work.")
    assert await store.say("I switched from tea to coffee.") == ["I drink tea every morning."]
    assert await store.current() == {"I drink coffee at work.", "I switched from tea to coffee."}


async def test_a_cue_about_something_else_ends_nothing(store):
    await store.say("My gym is Fitness First.")
    await store.say("I like rock.")
    await store.say("I love Paris.")
    assert await store.say("I left my keys at the gym.") == []  # the cue is about the keys, far from "gym"
    assert await store.say("I moved the meeting; flights from Paris to Rome are cheap.") == []  # "from" far from the cue
    assert await store.say("Did you switch gyms?") == []  # a question states no change
    assert await store.say("I won't leave Fitness First.") == []  # nor does a negated cue
    # Positive control, same store: the change is next to what it changes.
    assert await store.say("I left Fitness First and joined PureGym.") == ["My gym is Fitness First."]
    assert {"I like rock.", "I love Paris."} <= await store.current()


async def test_also_adds_a_taste_and_a_switch_replaces_it(store):
    """Decided: an additive word ("also", "too", "as well") blocks supersession, in the slots' change
    marker and in the cue rule alike: "I now also like jazz" keeps "I like rock"."""
    await store.say("I like rock.")
    assert await store.say("I now also like jazz.") == []
    assert await store.current() == {"I like rock.", "I now also like jazz."}
    assert await store.say("I switched from rock to blues.") == ["I like rock."]  # positive control


async def test_too_before_a_word_is_no_addition(store):
    """"too" adds only where a phrase ends: "it was too expensive" read as additive kept a quit course
    current beside the news that it was quit. The control: "too" that adds still blocks."""
    await store.say("I take pottery lessons.")
    await store.say("I like rock.")
    assert await store.say("I now like jazz too.") == []
    assert await store.say("I quit pottery lessons, it was too expensive.") == ["I take pottery lessons."]
    assert "I like rock." in await store.current()


async def test_only_a_short_memory_is_ended_never_one_that_says_more(store):
    story = "I like rock, I play guitar in a band called Static Lanterns and we rehearse at the old mill."
    await store.say(story)
    await store.say("I listen to rock.")
    assert await store.say("I switched from rock to jazz.") == ["I listen to rock."]
    assert story in await store.current()


async def test_a_cue_for_someone_else_ends_nothing_of_mine(store):
    await store.say("My barber is Luis.")
    assert await store.say("My brother's barber is now Nico.") == []
    assert await store.say("I switched barbers, Nico cuts my hair now.") == ["My barber is Luis."]


async def test_a_person_who_moves_is_no_link_a_thing_that_moves_is(store):
    await store.say("My manager visited Kyoto.")
    await store.say("Our standup is at 9:30.")
    assert await store.say("My manager moved to Oslo.") == []  # where she lives, not what she visited
    assert await store.say("The standup moved to 10:15.") == ["Our standup is at 9:30."]
    assert "My manager visited Kyoto." in await store.current()


async def test_an_ending_cue_ends_the_phrase_beside_it_not_a_place_it_shares(store):
    await store.say("Our trip to Lisbon is in June.")
    assert await store.say("The Lisbon food tour was cancelled.") == []  # a tour in Lisbon, not the trip
    assert await store.say("The Lisbon trip was called off, we're going to Porto instead.") == ["Our trip to Lisbon is in June."]


async def test_a_dropped_class_must_be_the_class_the_candidate_names(store):
    await store.say("I go to salsa class on Fridays.")
    assert await store.say("The studio dropped the Friday jazz class.") == []  # jazz class is not salsa class
    assert await store.say("I dropped salsa class, I do climbing on Fridays now.") == ["I go to salsa class on Fridays."]


async def test_a_trade_in_by_someone_else_ends_nothing_of_mine(store):
    await store.say("I ride a Vespa.")
    assert await store.say("My cousin traded in his Vespa for a Honda.") == []
    assert await store.say("I traded the Vespa for an electric bike.") == ["I ride a Vespa."]


async def test_a_correction_swaps_a_value_and_a_correction_about_something_else_ends_nothing(store):
    await store.say("Dinner with the Lees is at 7pm.")
    await store.say("I love ramen.")
    assert await store.say("Sorry, I meant to say the printer is fixed.") == []
    assert await store.say("Turns out I love sushi.") == []  # a correction alone never ends one of many tastes
    assert await store.say("Sorry, I meant dinner with the Lees is at 8pm.") == ["Dinner with the Lees is at 7pm."]
    assert "I love ramen." in await store.current()


async def test_used_to_names_the_old_habit_whole(store):
    await store.say("I play squash on Tuesdays.")
    assert await store.say("I used to play chess but now I mostly read.") == []  # "play" alone is no link
    assert await store.say("I used to play squash on Tuesdays but now I row.") == ["I play squash on Tuesdays."]


async def test_a_change_someone_else_makes_is_not_the_speakers(store):
    await store.say("I drink oat milk.")
    await store.say("I jog in the park.")
    assert await store.say("My husband cut out oat milk and drinks soy instead.") == []
    assert await store.say("My neighbour stopped jogging last year.") == []
    assert await store.say("I cut out oat milk and drink soy instead.") == ["I drink oat milk."]
    # "jogging" is "jog"; and the neighbour's jogging, sharing more words, is not the speaker's to end
    assert await store.say("I stopped jogging, I swim now.") == ["I jog in the park."]


async def test_a_place_and_its_staff_move_apart(store):
    await store.say("Our clinic is on Elm Street.")
    assert await store.say("Our clinic director relocated to Denver.") == []  # a director is not the clinic
    assert await store.say("The clinic relocated to Oak Avenue.") == ["Our clinic is on Elm Street."]


async def test_we_are_in_a_named_place_now_is_a_move_and_in_a_hurry_is_not(store):
    await store.say("We live in Galway.")
    assert await store.say("We're in a hurry now.") == []
    assert await store.say("We're in Limerick now.") == ["We live in Galway."]


async def test_a_new_thing_for_someone_else_is_theirs(store):
    await store.say("My phone is an iPhone 13.")
    assert await store.say("Got my dad a new phone for his birthday, a Samsung Galaxy.") == []
    assert await store.say("I got a new phone, a Pixel 8.") == ["My phone is an iPhone 13."]  # the speaker's own


async def test_a_stop_on_the_way_is_a_visit_and_a_relationship_or_job_that_ends_is_a_change(store):
    await store.say("I buy bread at Gail's bakery.")
    await store.say("I work at Acme as a designer.")
    await store.say("My brother Tom is dating Priya.")
    assert await store.say("I stopped by the bakery on the way home.") == []  # a visit, not a habit that ended
    assert await store.say("Tom and Priya broke up last month.") == ["My brother Tom is dating Priya."]
    assert await store.say("Handed in my notice at Acme, I start at Globex in March.") == ["I work at Acme as a designer."]
    assert await store.say("I stopped buying bread at Gail's, I bake my own now.") == ["I buy bread at Gail's bakery."]


async def test_what_a_cue_moves_someone_else_a_plan_or_one_occasion_ends_nothing(store):
    """A crowded store (tests/eval/crowded_update_eval.py): change words used of something else end nothing."""
    for fact in ("My partner is Tom.", "Our standup is at 9:30.", "We have two guinea pigs, Salt and Pepper.",
                 "I'm a history teacher.", "Our broadband is with Sky.", "I play five-a-side on Sunday mornings.",
                 "I get the 8:15 bus to work."):
        await store.say(fact)
    assert await store.say("Tom moved the sofa over by the window.") == []  # the sofa moved, not Tom
    assert await store.say("Moved the guinea pigs' hutch into the shed.") == []  # the hutch, not the guinea pigs
    assert await store.say("One of the English teachers left at half term.") == []  # another teacher
    assert await store.say("Thinking about changing broadband, the Sky contract ends in March.") == []  # a plan
    assert await store.say("If I ever quit teaching I'd open a bookshop.") == []
    assert await store.say("The 8:15 bus was cancelled this morning.") == []  # one morning, not the habit
    # Positive controls, the same words about the thing itself:
    assert await store.say("We moved the standup to 10:15.") == ["Our standup is at 9:30."]
    assert await store.say("Changed broadband, we're with Virgin now.") == ["Our broadband is with Sky."]
    assert await store.say("Five-a-side got cancelled for good, the pitch closed.") == ["I play five-a-side on Sunday mornings."]


async def test_someone_indefinite_long_ago_or_a_new_thing_beside_it_ends_nothing_of_mine(store):
    for fact in ("I work at Dell.", "I play guitar in a band on Sundays.", "I run on Tuesday mornings.", "I have a Pixel 7."):
        await store.say(fact)
    assert await store.say("A guy on my team left Dell last week for a startup.") == []  # his change, not mine
    assert await store.say("Back in college I sold my guitar for rent money.") == []  # long before the fact
    assert await store.say("New running shoes came in today.") == []  # the shoes are new, not the running
    assert await store.say("My Pixel died at lunch, the battery is shot.") == []  # one afternoon, not the phone
    # Positive controls in the same store:
    assert await store.say("I left Dell, I'm at Intel now.") == ["I work at Dell."]
    assert await store.say("Sold my guitar last week, I'm done with the band.") == ["I play guitar in a band on Sundays."]


async def test_a_change_someone_named_makes_ends_nothing_of_mine(store):
    await store.say("I play netball with a club on Tuesdays.")
    await store.say("I work at Google.")
    assert await store.say("Sam quit the netball club, so I need a new partner.") == []  # Sam's clause, not mine
    assert await store.say("Sam quit the netball club.") == []  # Sam's change: the text says nothing of mine
    assert await store.say("Sarah has left Google.") == []
    # Positive control, same store: my own change, said with the same cue.
    assert await store.say("I quit the netball club, I do spin on Tuesdays now.") == [
        "I play netball with a club on Tuesdays."
    ]


async def test_a_person_who_moves_keeps_their_name(store):
    """The person the text is about is no link, as a word of the candidate nor as its slot's topic."""
    await store.say("My manager is Kevin Ortiz.")
    assert await store.say("My manager moved to the Leeds office.") == []
    assert await store.say("My manager changed, it's Priya Shah now.") == ["My manager is Kevin Ortiz."]  # control


def test_a_switch_of_dentist_keeps_the_dentist_appointment_through_the_cli(cli):
    """A change cue ended the nearest fact sharing a topic word: "I switched dentists" ended "The dentist
    appointment is on May 7", a different fact (who the dentist is, not when the appointment is), and
    recall lost it. The control, in a second agent of the same home: the same line ends who the dentist was."""

    def remember(agent: str, text: str) -> dict:
        result = cli("remember", text, "--agent", agent, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    appointment = remember("ada", "The dentist appointment is on May 7.")
    assert remember("ada", "I switched dentists, I see Dr Patel now.")["supersedes"] == []
    recalled = json.loads(cli("recall", "when is the dentist appointment", "--agent", "ada", "--json").stdout)
    assert appointment["id"] in [m["id"] for m in recalled["results"]]
    smith = remember("bo", "My dentist is Dr Smith.")
    assert remember("bo", "I switched dentists, I see Dr Patel now.")["supersedes"] == [smith["id"]]
    listed = json.loads(cli("memory", "list", "--agent", "bo", "--json").stdout)
    assert smith["id"] not in {m["id"] for m in listed}


async def test_a_replaced_thing_is_what_the_cue_names_not_a_thing_named_after_it(store):
    """"switched dentists" replaces the dentist, not the dentist appointment; "upgraded my phone" the
    phone, not the phone contract; "switched yoga mats" no yoga class."""
    for fact in ("My dentist is Dr Smith.", "The dentist appointment is on May 7.", "My phone contract is with EE.",
                 "My yoga class is on Thursday evenings."):
        await store.say(fact)
    assert await store.say("I switched yoga mats, I use a cork one now.") == []
    assert await store.say("I upgraded my phone to a Pixel 8.") == []
    # Positive controls, same store: each replaces the very thing it names, and nothing else.
    assert await store.say("I moved the dentist appointment to May 9.") == ["The dentist appointment is on May 7."]
    assert await store.say("I switched dentists, I see Dr Patel now.") == ["My dentist is Dr Smith."]
    assert {"I moved the dentist appointment to May 9.", "My phone contract is with EE.",
            "My yoga class is on Thursday evenings."} <= await store.current()


async def test_a_new_time_ends_only_a_time(store):
    """A rescheduling changes when: "moved to the first Thursday" is no change of what book club reads."""
    await store.say("Our book club is reading Middlemarch.")
    await store.say("The team meeting is on Tuesdays at 10.")
    assert await store.say("Book club moved to the first Thursday of the month.") == []
    assert await store.say("The team meeting moved to Wednesdays at 11.") == ["The team meeting is on Tuesdays at 10."]
    assert "Our book club is reading Middlemarch." in await store.current()


async def test_a_replacement_that_says_no_time_keeps_a_time(store):
    """"We switched cleaners" changes who comes, not when: "The cleaner comes on Tuesdays" stays."""
    await store.say("The cleaner comes on Tuesdays.")
    await store.say("I go to the gym every morning at 6.")
    assert await store.say("We switched cleaners, it's Ana now.") == []
    assert await store.say("I switched gyms, I go to PureGym now.") == []
    # Positive control, same store: a replacement ends what it replaces.
    await store.say("My dentist is Dr Smith.")
    assert await store.say("I switched dentists, I see Dr Patel now.") == ["My dentist is Dr Smith."]
    assert {"The cleaner comes on Tuesdays.", "I go to the gym every morning at 6."} <= await store.current()


async def test_a_cue_ends_the_head_of_what_it_names_not_a_word_that_qualifies_it(store):
    """"I quit my Monday gym class" ends a class, not the gym membership; "my son quit the school choir"
    no school; "stopped using my Barclays card" no job at Barclays."""
    await store.say("My gym membership is with PureGym.")
    await store.say("My son's school is Oakwood Primary.")
    await store.say("I work at Barclays.")
    assert await store.say("I quit my Monday gym class, it's too crowded.") == []
    assert await store.say("My son quit the school choir.") == []
    assert await store.say("I stopped using my Barclays card, I pay with Monzo now.") == []
    # Positive control, same store: the head named.
    assert await store.say("I quit the gym membership, it was too pricey.") == ["My gym membership is with PureGym."]
    assert {"My son's school is Oakwood Primary.", "I work at Barclays."} <= await store.current()


async def test_an_ending_is_news_even_when_it_names_nothing_new(store):
    """"I gave up yoga" adds no word to "I take a yoga class on Tuesdays" but the ending itself, which
    was read as a restatement and kept the class current. A memory that already says the ending is
    restated, not ended, and someone else's yoga is not the speaker's."""
    await store.say("My sister teaches yoga.")
    await store.say("I take a yoga class on Tuesdays.")
    await store.say("I quit smoking in May.")
    assert await store.say("I quit smoking.") == []  # the same ending said again
    # Positive control, same store: the ending is the news.
    assert await store.say("I gave up yoga.") == ["I take a yoga class on Tuesdays."]
    assert {"My sister teaches yoga.", "I quit smoking in May."} <= await store.current()


async def test_leaving_a_thing_somewhere_ends_nothing_leaving_it_ends_it(store):
    """"left" with a place after its object puts the thing there ("I left the car at the garage"); said
    with a time or nothing after it, it ends the thing ("I left the choir in March")."""
    await store.say("My car is a grey Golf.")
    await store.say("I sing in the church choir.")
    assert await store.say("I left the car at the garage.") == []
    assert await store.say("I'm leaving my car with my sister this week.") == []
    # Positive control, same store: the thing left, with a time after it.
    assert await store.say("I left the choir in March.") == ["I sing in the church choir."]
    assert "My car is a grey Golf." in await store.current()


async def test_giving_up_an_activity_keeps_a_thing_had_for_it(store):
    """"I gave up yoga" deleted "I have a purple yoga mat": the retraction read "yoga" in the mat's value
    (and the cue rule linked it). Giving up an activity ends its class, not a thing had for it; giving up
    the thing itself ends it."""
    await store.say("I have a purple yoga mat.")
    await store.say("I take a yoga class on Tuesdays.")
    # Positive control, same store: the class is ended, the mat is not.
    assert await store.say("I gave up yoga.") == ["I take a yoga class on Tuesdays."]
    assert "I have a purple yoga mat." in await store.current()
    assert await store.say("I gave up my yoga mat.") == ["I have a purple yoga mat."]


async def test_leaving_at_a_holiday_is_a_leaving(store):
    """"Christmas" was no time word, so "I left the choir at Christmas" put the choir somewhere and ended
    nothing. A holiday or a named day after "left" is a time; one that only qualifies a place is a place."""
    await store.say("My car is a grey Golf.")
    await store.say("I sing in the church choir.")
    assert await store.say("I left the car at the Christmas market.") == []
    # Positive control, same store: the thing left, at a holiday.
    assert await store.say("I left the choir at Christmas.") == ["I sing in the church choir."]
    assert "My car is a grey Golf." in await store.current()


async def test_a_cue_ends_what_it_names_not_a_person_given_to_its_doer_or_a_qualifier(store):
    """Controls of shared_topic_hunt2 that were ended: "left my manager a voicemail" gives the manager
    something; "stopped paying for phone insurance" ends insurance; "Maria stopped doing the ironing" ends
    the ironing, not Maria; "the piano teacher's Saturday group" is a group; "left early today" is one day."""
    for fact in ("My manager is Kevin Ortiz.", "My phone is an iPhone 12.", "Our cleaner is Maria.",
                 "The piano lesson is on Tuesdays at 5.", "Our nanny is Grace.", "I sing in the church choir."):
        await store.say(fact)
    assert await store.say("I left my manager a voicemail.") == []
    assert await store.say("I stopped paying for phone insurance.") == []
    assert await store.say("Maria stopped doing the ironing.") == []
    assert await store.say("I quit the piano teacher's Saturday group.") == []
    assert await store.say("The nanny left early today.") == []
    # Positive controls, same store: the same cues naming the fact's own thing or person.
    assert await store.say("I quit piano lessons.") == ["The piano lesson is on Tuesdays at 5."]
    assert await store.say("Maria left.") == ["Our cleaner is Maria."]
    assert await store.say("I left the choir some time ago.") == ["I sing in the church choir."]  # a time, not a thing given
    assert {"My manager is Kevin Ortiz.", "My phone is an iPhone 12.", "Our nanny is Grace."} <= await store.current()


async def test_someones_got_a_new_number_is_theirs_and_ends_their_old_one(store):
    """"Mum's got a new number" is "mum has got", not "mum's": read as a subject "mum's", it matched no
    fact of mum and left the old number current beside the new one. Another person's new number ends
    nothing of hers (exclusion), in the same store as the positive control."""
    await store.say("My mum's number is 07700 900123.")
    await store.say("My sister's number is 07700 900789.")
    assert await store.say("Dad's got a new number, it's 07700 900555.") == []
    assert await store.say("Mum's got a new number, it's 07700 900456.") == ["My mum's number is 07700 900123."]
    assert "My sister's number is 07700 900789." in await store.current()


async def test_a_word_before_i_or_we_leaves_the_speaker_the_subject(store):
    """"Finally we moved to Bristol": the subject read as "finally we" was nobody's, so the move was added
    beside "I live in Leeds" instead of ending it. Others who move (no "I" or "we") end nothing of mine."""
    await store.say("I live in Leeds.")
    await store.say("My phone is a Pixel 6.")
    assert await store.say("Sam and Lena moved to Bristol.") == []
    assert await store.say("Finally we moved to Bristol.") == ["I live in Leeds."]
    assert "My phone is a Pixel 6." in await store.current()
