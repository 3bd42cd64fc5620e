"""Consolidation on real stores with the real offline model: what merges, what is digested, what never is."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from memory.adapters.vector import VectorAdapter
from memory.embedding.gateway import EmbeddingGateway
from memory.consolidation.store import consolidate_store
from memory.sqlite.consolidation import SOURCES, sources_of
from memory.sqlite.rows import SELECT_COLUMNS, row_to_entry
from memory.types import MemoryEntry, MemoryQuery, MemoryType, Visibility

NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)
OLD = NOW - timedelta(days=60)


def fact(content: str, **kw) -> MemoryEntry:
    return MemoryEntry(**{"agent_id": "ada", "type": MemoryType.SEMANTIC, "content": content, **kw})


def turn(content: str, i: int, *, session: str = "s1", when: datetime = OLD, **kw) -> MemoryEntry:
    at = when + timedelta(seconds=i)
    return MemoryEntry(agent_id="ada", content=content, source_session_id=session, created_at=at, updated_at=at, **kw)


async def _consolidate(store, embedder, **kw):
    vectors = VectorAdapter(store, EmbeddingGateway([embedder]))
    return await consolidate_store(store, NOW, embed=vectors.complete, **kw)


async def _rows(store) -> dict[str, MemoryEntry]:
    """Every row as the operator sees it (archived and hidden too)."""
    rows = await store.run(lambda raw: raw.execute(f"SELECT {SELECT_COLUMNS} FROM memories m").fetchall())
    return {e.id: e for e in map(row_to_entry, rows)}


async def _current(store) -> dict[str, MemoryEntry]:
    return {i: e for i, e in (await _rows(store)).items() if not e.archived}


async def test_a_restatement_merges_into_the_fuller_one_and_different_facts_never_do(store, offline_embedder):
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    tea, milk = fact("I like tea.", importance=0.6), fact("I like tea with milk.", importance=0.6)
    primary, secondary = fact("The primary cluster runs in us-east."), fact("The secondary cluster runs in us-east.")
    await vectors.write_many([tea, milk, primary, secondary])

    scanned, plan = await _consolidate(store, offline_embedder)

    assert scanned == 4 and plan.counts()["merged"] == 1
    current = await _current(store)
    assert set(current) == {milk.id, primary.id, secondary.id}  # control: the clusters stay two facts
    assert current[milk.id].importance > 0.6  # said twice
    assert await store.run(sources_of, [milk.id]) == {milk.id: [tea.id]}
    # nothing is lost: the source is archived, restorable, and its history says why
    assert (await _rows(store))[tea.id].archived
    assert [r.op for r in await store.history(tea.id)][-1] == "archive"
    assert await store.restore([tea.id]) == 1


async def test_facts_that_differ_only_in_a_number_never_merge_and_true_restatements_still_do(store, offline_embedder):
    """Numbers are content words at any length, and whole: one-digit ones were dropped, so "Eve likes
    green tea 0" to "... 4" (and "version 3.1" / "3.11") merged as restatements of each other; and a
    number in pieces let "$5,000" carry "$5" (its "5") and "9:45" carry "9"."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    teas = [fact(f"Eve likes green tea {i}") for i in range(5)]
    numbered = [fact(t) for t in ("Eve is in room 101", "Eve is in room 204", "The gate code is 7788",
                                  "The gate code is 7789", "Python version 3.1 is installed",
                                  "Python version 3.11 is installed", "We met on May 5", "We met on May 6",
                                  "The ticket costs $5", "The ticket costs $5,000", "The train leaves at 9",
                                  "The train leaves at 9:45", "Python version 3 is installed")]
    like, really, shouted = fact("I like green tea"), fact("I really like green tea!"), fact("i LIKE green tea.")
    again = fact("the ticket really costs $5,000!")  # found through the keyword index by its whole number
    await vectors.write_many([*teas, *numbered, like, really, shouted, again])

    _, plan = await _consolidate(store, offline_embedder)

    current = await _current(store)
    five_thousand = {numbered[9].id, again.id}
    assert {e.id for e in [*teas, *numbered]} - five_thousand <= set(current)
    assert plan.counts()["merged"] == 2 and len(five_thousand & set(current)) == 1  # "$5,000" said twice: one
    # positive control, same store: case, punctuation and "really" still restate one fact
    assert len({like.id, really.id, shouted.id} & set(current)) == 1


async def test_opposite_facts_that_share_every_content_word_never_merge(store, offline_embedder):
    """The stop list drops "not", "up", "before"... and the word sets ignored order, so "I don't like
    tea" was archived into "I like tea", "from Berlin to Paris" into "from Paris to Berlin",
    "Bob is Alice's manager" into "Alice is Bob's manager": 7 facts of 8 pairs lost their only record."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    opposites = [fact(t) for t in (
        "I like tea", "I don't like tea", "The flight goes from Paris to Berlin",
        "The flight goes from Berlin to Paris", "Alice is Bob's manager", "Bob is Alice's manager",
        "The meeting is on Monday", "The meeting isn't on Monday", "Ada can swim", "Ada can't swim",
        "Price went up 5%", "Price went down 5%", "The meeting starts before lunch",
        "The meeting starts after lunch")]
    units, again = fact("The user prefers metric units"), fact("The user prefers metric units.")
    milk, never = fact("The user drinks tea with milk"), fact("The user never drinks tea with milk")
    isnt, is_not = fact("The office isn't open on Sunday"), fact("The office is not open on Sunday")
    await vectors.write_many([*opposites, units, again, milk, never, isnt, is_not])

    _, plan = await _consolidate(store, offline_embedder)

    current = await _current(store)
    assert {e.id for e in [*opposites, milk, never]} <= set(current)
    # positive control, same store: a restatement, and a negation said either way, still merge
    assert plan.counts()["merged"] == 2
    assert len({units.id, again.id} & set(current)) == 1 and len({isnt.id, is_not.id} & set(current)) == 1


async def test_a_direction_word_keeps_to_and_from_apart(store, offline_embedder):
    """Direction words were compared as a set, whatever they pointed at: "shipped from Berlin"
    was archived into "shipped to Berlin", "Ada moved from London" into "moved to London", "the
    train from Paris" into "the train to Paris", "the flight goes from Berlin" into "goes from
    Paris to Berlin" (both hold a "from")."""
    await _kept_apart(store, offline_embedder, (
        "The package was shipped to Berlin", "The package was shipped from Berlin", "Ada moved to London",
        "Ada moved from London", "The train to Paris leaves at 9", "The train from Paris leaves at 9",
        "The flight goes from Berlin"), "The flight goes from Paris to Berlin on Monday", "The flight goes from Paris to Berlin")


async def test_a_word_inside_a_restatement_changes_what_it_says(store, offline_embedder):
    """Any memory holding the other's words in order carried it, wherever the extra words fell:
    "My sister is Anna" was archived into "My sister's friend is Anna", "Tom is the CEO of Acme"
    into "Tom is the former CEO of Acme", and "I live in Paris" into "I used to live in Paris"."""
    await _kept_apart(store, offline_embedder, (
        "My sister is Anna", "My sister's friend is Anna", "Tom is the CEO of Acme", "Tom is the former CEO of Acme",
        "I live in Paris", "I used to live in Paris"), "I really like green tea with milk", "I like green tea")


async def test_a_change_of_time_or_mood_keeps_two_facts_apart(store, offline_embedder):
    """Tense lives in stop words, so "Tom is my manager" was archived into "Tom was my manager" (the
    user's current manager answered as a former one), and "I like tea" into "I liked tea"."""
    await _kept_apart(store, offline_embedder, (
        "Tom is my manager", "Tom was my manager", "I like black coffee", "I liked black coffee",
        "I visit Rome in May", "I will visit Rome in May", "We take the early train", "We could take the early train"),
        "I really like green tea with milk", "I like green tea")


async def _kept_apart(store, embedder, apart: tuple[str, ...], fuller: str, restated: str) -> None:
    """Consolidating ``apart`` beside a restatement pair merges only the pair: every one of ``apart``
    stays current, and (the positive control, same store) ``restated`` is archived into ``fuller``."""
    vectors = VectorAdapter(store, EmbeddingGateway([embedder]))
    kept, big, small = [fact(t) for t in apart], fact(fuller), fact(restated)
    await vectors.write_many([*kept, big, small])

    _, plan = await _consolidate(store, embedder)

    current = await _current(store)
    assert {e.id for e in kept} <= set(current)
    assert plan.counts()["merged"] == 1 and big.id in current and small.id not in current


async def test_a_negation_in_another_language_keeps_two_facts_apart(store, offline_embedder):
    """Only English negations were known: "Não gosto de café" (with "não" a word the other lacks)
    carried "Gosto de café", and "Je n'aime pas le thé", "Ich mag keinen Tee", "Eu não moro em
    Lisboa" each archived the fact they deny; "tea without milk" carried "tea with milk"."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    denied = [fact(t) for t in (
        "Gosto de café", "Não gosto de café", "J'aime le thé", "Je n'aime pas le thé", "Ich mag Tee",
        "Ich mag keinen Tee", "Eu moro em Lisboa", "Eu não moro em Lisboa", "I like tea with milk",
        "I like tea without milk")]
    again, said = fact("Eu não moro em Lisboa."), fact("Je n'aime pas le thé!")
    await vectors.write_many([*denied, again, said])

    _, plan = await _consolidate(store, offline_embedder)

    current = await _current(store)
    # positive control, same store: each denial said twice is one memory
    assert plan.counts()["merged"] == 2 and {again.id, said.id}.isdisjoint(current)
    assert {e.id for e in denied} <= set(current)


async def test_a_merge_never_archives_a_fact_into_a_less_trusted_one(store, offline_embedder):
    """The keeper is the one that says the most, whatever its confidence: the user's "I like tea"
    (1.0) was archived into an inference "I like tea with a little milk" (0.5), and `recall
    --min-confidence 0.9 tea` found nothing after consolidating."""
    from memory.types import ConfidenceSource

    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    inferred = {"confidence": 0.5, "confidence_source": ConfidenceSource.INFERRED}
    tea, guess = fact("I like tea"), fact("I like tea with a little milk", **inferred)
    coffee, fuller = fact("I like coffee", **inferred), fact("I like coffee with a little milk")
    await vectors.write_many([tea, guess, coffee, fuller])

    _, plan = await _consolidate(store, offline_embedder)

    current = await _current(store)
    assert {tea.id, guess.id} <= set(current)
    # positive control, same store: an inference restated by what the user said merges into it
    assert plan.counts()["merged"] == 1 and coffee.id not in current and fuller.id in current
    hits = await store.search(MemoryQuery(agent_id="ada", text="tea", min_confidence=0.9))
    assert tea.id in [h.id for h in hits]


async def test_a_claim_held_beside_a_users_fact_waits_for_the_operator(store, offline_embedder):
    """An agent's claim held beside what the user said (``conflict_with``, an open conflict in
    `doctor`) was archived into a restatement of it, or took one in: the conflict closed with no
    operator deciding, and the claim's mark was gone from what answers. Held claims are left alone,
    as pinned memories are; the teas beside them still merge (the control)."""
    from memory.sqlite.versions import open_conflicts
    from memory.types import ConfidenceSource

    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    agent = {"confidence": 0.7, "confidence_source": ConfidenceSource.AGENT}
    berlin, bike = fact("I live in Berlin."), fact("I own a green bike.")
    held = fact("I live in Paris.", conflict_with=berlin.id, **agent, created_at=OLD)
    restated = fact("I live in Paris really.", **agent, created_at=OLD - timedelta(days=1))  # keeps over the claim
    holding = fact("I own a red bike with a bell.", conflict_with=bike.id, **agent)  # would keep over the next
    said = fact("I own a red bike.", **agent)
    old_turn = turn("Ada: I think I moved to Paris in spring.", 0, conflict_with=berlin.id, **agent)
    tea, milk = fact("I like tea."), fact("I like tea with milk.")
    await vectors.write_many([berlin, bike, held, restated, holding, said, old_turn, tea, milk])
    count = open_conflicts()

    _, plan = await _consolidate(store, offline_embedder)

    current = await _current(store)
    assert {held.id, restated.id, holding.id, said.id, old_turn.id} <= set(current)
    assert await store.run(lambda raw: raw.execute(count.sql, count.params).fetchone()[0]) == 3
    assert plan.counts()["merged"] == 1 and tea.id not in current and milk.id in current  # control


async def test_a_merge_never_crosses_type(store, offline_embedder):
    """A preference merged into a fuller semantic memory became a semantic one: `recall --type
    preference` no longer found "The user prefers metric units" after consolidating."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    preference = fact("The user prefers metric units", type=MemoryType.PREFERENCE)
    fuller = fact("The user prefers metric units for all measurements")
    twice = fact("The user prefers metric units.", type=MemoryType.PREFERENCE)
    await vectors.write_many([preference, fuller, twice])

    _, plan = await _consolidate(store, offline_embedder)

    current = await _current(store)
    assert fuller.id in current
    # positive control, same store: the two preferences saying it are one
    assert plan.counts()["merged"] == 1 and len({preference.id, twice.id} & set(current)) == 1
    hits = await store.search(MemoryQuery(agent_id="ada", text="metric units", types=[MemoryType.PREFERENCE]))
    assert [h.id for h in hits] == [e for e in (preference.id, twice.id) if e in current]


async def test_a_merge_keeps_every_tag_of_what_it_carries(store, offline_embedder):
    """The keeper kept only its own tags: "I like tea" tagged drinks, merged into "I like tea with
    milk", was no longer found by `recall --tag drinks`. A derived source's tag never makes the
    fact that keeps it derived."""
    from memory.types import DERIVED_TAG

    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    tea, milk = fact("I like tea", tags=["drinks"]), fact("I like tea with milk", tags=["home"])
    echo = fact("I like tea.", tags=[DERIVED_TAG, "echo"])
    coffee = fact("The office coffee machine is broken", tags=["work"])
    await vectors.write_many([tea, milk, echo, coffee])

    _, plan = await _consolidate(store, offline_embedder)

    current = await _current(store)
    assert set(current) == {milk.id, coffee.id} and plan.counts()["merged_sources"] == 2
    assert current[milk.id].tags == ["drinks", "echo", "home"]  # not derived: it carries a fact
    assert current[coffee.id].tags == ["work"]  # control: what merged with nothing is as it was
    for tag, found in (("drinks", milk.id), ("home", milk.id), ("work", coffee.id)):
        hits = await store.search(MemoryQuery(agent_id="ada", text="tea coffee", tags=[tag]))
        assert [h.id for h in hits] == [found]


async def test_old_episodes_become_dated_digests_that_keep_visibility_and_skip_small_talk(store, offline_embedder):
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    talk = [
        turn("Caroline: I went to an LGBTQ support group yesterday.", 0),
        turn("Melanie: haha, yes!", 1),
        turn("Caroline: It was so powerful. I want to study counseling next year.", 2),
    ]
    hidden = turn("Caroline: My passport number is X1234567.", 3, visibility=Visibility.HIDDEN)
    recent = turn("Caroline: I adopted a puppy called Oscar.", 0, session="s9", when=NOW - timedelta(days=1))
    await vectors.write_many([*talk, hidden, recent])

    _, plan = await _consolidate(store, offline_embedder)

    current = await _current(store)
    assert recent.id in current  # positive control: what has not aged out stays as it was
    digests = [e for e in current.values() if e.type is MemoryType.SEMANTIC]
    visible = [d for d in digests if d.visibility is Visibility.VISIBLE]
    assert len(visible) == 1
    text = visible[0].content
    assert text.startswith("On 2 April 2024: Caroline:") and "support group" in text and "counseling" in text
    assert "haha" not in text and "X1234567" not in text
    assert await store.run(sources_of, [visible[0].id]) == {visible[0].id: sorted([talk[0].id, talk[2].id])}
    # a digest of a hidden memory is hidden: never more visible than its least visible source
    (secret,) = [d for d in digests if d is not visible[0]]
    assert secret.visibility is Visibility.HIDDEN and "X1234567" in secret.content
    # small talk carries nothing: archived with its session, nobody's source
    assert (await _rows(store))[talk[1].id].archived
    assert plan.counts()["idle"] == 1
    # the digest is searchable by meaning: it has a vector
    assert (await vectors.status()).missing == 0


async def test_a_fact_said_in_a_question_is_still_recalled_from_the_digest(store, offline_embedder):
    """The digest dropped a question beside a statement, and archived its turn: after consolidating,
    keyword recall of "Oslo" and "Lisbon" found nothing."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    await vectors.write_many([turn("Caroline: Did you know my sister lives in Oslo? She is a nurse.", 0),
                              turn("Melanie: I moved to Lisbon, right? Anyway I got a dog.", 1)])
    _, plan = await _consolidate(store, offline_embedder)
    assert plan.counts()["digested"] == 2
    (digest,) = (await _current(store)).values()
    for words in ("sister Oslo", "moved Lisbon", "nurse"):  # "nurse": the control, kept before too
        assert [h.id for h in await store.search(MemoryQuery(agent_id="ada", text=words))] == [digest.id], words


async def test_a_second_run_changes_nothing(store, offline_embedder):
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    await vectors.write_many([fact("I like tea."), fact("I like tea with milk."),
                              turn("Caroline: I paint sunsets by the lake.", 0)])
    _, first = await _consolidate(store, offline_embedder)
    ledger = len(await store.ledger())
    _, second = await _consolidate(store, offline_embedder)
    assert first.archived == 2 and second.archived == 0
    assert second.counts()["merged"] == second.counts()["digests"] == 0
    assert len(await store.ledger()) == ledger


async def test_a_turn_is_digested_or_merged_never_both_and_a_dry_run_decides_the_same(store, offline_embedder):
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    # two old turns that restate each other: digests take them (a merge would archive one twice)
    old = [turn("Caroline: Thanks, Melanie! Your kind words really mean a lot.", 0),
           turn("Caroline: Thanks, Melanie! Your kind words mean a lot.", 0, session="s2", when=OLD + timedelta(days=3))]
    # control: restatements that have not aged out still merge, a plural included
    # ("I adopted two cats ..." no longer carries "I adopted a cat ...": "two" falls inside its words)
    cat, cats = fact("I adopted a cat from the shelter."), fact("I adopted the cats from the shelter in May.")
    await vectors.write_many([*old, cat, cats])

    seen = {True: [], False: []}
    _, dry = await _consolidate(store, offline_embedder, dry_run=True, on_progress=lambda *p: seen[True].append(p))
    _, real = await _consolidate(store, offline_embedder, on_progress=lambda *p: seen[False].append(p))

    assert dry.counts() == real.counts()
    for calls in seen.values():  # a bar that only moves forward and ends full
        assert calls[-1][0] == calls[-1][1] > 0 and all(done <= total for done, total in calls)
        assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert real.counts()["merged"] == 1 and real.counts()["digested"] == 2
    current = await _current(store)
    assert cats.id in current and cat.id not in current
    edges = await store.run(lambda raw: raw.execute(
        f"SELECT dst_id, count(*) FROM memory_edges WHERE relation = '{SOURCES}' GROUP BY dst_id").fetchall())
    assert {dst for dst, _ in edges} == {old[0].id, old[1].id, cat.id}
    assert all(n == 1 for _, n in edges)  # each archived row has exactly one consolidated parent


def test_a_dry_run_shows_every_decision_and_changes_nothing(cli):
    for text in ("I like tea.", "I like tea.", "I prefer night trains."):
        assert cli("remember", "--agent", "ada", "--no-reconcile", text).exit_code == 0
    before = json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)
    done = cli("consolidate", "--agent", "ada", "--dry-run", "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["dry_run"] and report["agents"][0]["scanned"] == 3
    decisions = report["agents"][0]["decisions"]
    (merge,) = decisions["merges"]  # the two teas; the trains stay apart (control)
    assert merge["content"] == "I like tea." and len(merge["sources"]) == 1 and decisions["digests"] == []
    assert {merge["keep"], *merge["sources"]} == {m["id"] for m in before if m["content"] == "I like tea."}
    assert json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout) == before
    assert "decisions" not in json.loads(cli("consolidate", "--agent", "ada", "--json").stdout)["agents"][0]
    assert json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout) != before  # the real run merged
    assert cli("consolidate").exit_code == 2  # nothing named: a usage error saying how


def test_the_edge_relation_is_one_name():
    assert SOURCES == "consolidates"


async def test_a_fact_is_never_archived_into_an_echo_and_a_digest_with_a_fact_is_not_derived(store, offline_embedder):
    from memory.types import DERIVED_TAG

    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    said = fact("I walk my dog Rex along the river every morning.", importance=0.6)
    echo = fact("User asked: I walk my dog Rex along the river every morning.", importance=0.3, tags=[DERIVED_TAG])
    mixed = [turn("Caroline: I paint sunsets by the lake.", 0, session="s7"),
             turn("User asked: what do I paint?", 1, session="s7", tags=[DERIVED_TAG])]
    tea, milk = fact("I like tea."), fact("I like tea with milk.")
    await vectors.write_many([said, echo, *mixed, tea, milk])

    _, plan = await _consolidate(store, offline_embedder)

    assert plan.counts()["merged"] == 1  # control: a restatement between facts still merges
    assert await store.run(sources_of, [milk.id]) == {milk.id: [tea.id]}
    current = await _current(store)
    assert said.id in current and echo.id in current  # an echo never keeps over the fact it repeats
    (digest,) = [e for e in current.values() if e.type is MemoryType.SEMANTIC and e.source_session_id == "s7"]
    assert DERIVED_TAG not in digest.tags  # it carries Caroline's fact


async def test_the_walk_reads_a_page_by_seq_never_sorting_the_store_for_each(store):
    """Through the archived/pinned index, each page of the walk sorted every live row: 1.5 s a page,
    500 pages, at a million rows. By seq a page reads only itself."""
    from memory.sqlite.consolidation import _WALKED, stage_episodes

    await store.write_many([fact("I like tea.")])
    await store.run(stage_episodes)  # the walk runs beside the stage and its set-aside table
    sql = f"SELECT m.seq, m.content FROM memories m WHERE {_WALKED}"
    plan = await store.run(lambda raw: [r[3] for r in raw.execute("EXPLAIN QUERY PLAN " + sql, (0, 10, 2000))])
    assert plan[0] == "SEARCH m USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)", plan
    assert not any("TEMP B-TREE FOR ORDER BY" in step for step in plan)


async def test_a_fact_a_digest_restates_leaves_a_second_run_with_nothing_to_do(store, offline_embedder):
    """A run's merge walk cannot see the digests it writes (nor can a dry run), so the next run
    merged a fact into the digest of the turn that said it (its words and a date): a second run
    archived one more memory. A digest now never merges."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    words = "I adopted a brown puppy called Oscar from the animal shelter on Maple Street"
    said, known, twice = turn(words + ".", 0), fact(words, created_at=OLD), fact(words + "!", created_at=OLD)
    await vectors.write_many([said, known, twice])

    _, first = await _consolidate(store, offline_embedder)
    _, second = await _consolidate(store, offline_embedder)

    # positive control, same store: the fact said twice merged on the first run, and the turn is digested
    assert first.counts()["digests"] == 1 and first.counts()["merged"] == 1
    assert second.counts()["archived"] == 0 and len({known.id, twice.id} & set(await _current(store))) == 1


async def test_a_carrier_lookup_runs_the_keyword_index_once_then_reads_rows_by_seq(store):
    """Joined the other way round, the planner walked the agent's rows and ran the MATCH for each:
    14 s against 0.02 s on one LoCoMo conversation's store."""
    from memory.sqlite.consolidation import _CARRIERS, stage_episodes

    await store.write_many([fact("I like tea.")])
    await store.run(stage_episodes)
    params = ('content : ("tea")', 10, 1, "ada", "private", None, "visible", "semantic", 201)
    plan = await store.run(lambda raw: [r[3] for r in raw.execute("EXPLAIN QUERY PLAN " + _CARRIERS, params)])
    assert plan[0].startswith("SCAN memories_fts VIRTUAL TABLE"), plan
    assert any(step.startswith("SEARCH m USING INTEGER PRIMARY KEY (rowid=?)") for step in plan), plan


async def test_a_digest_answers_as_of_a_time_only_once_every_turn_it_carries_was_said(store, offline_embedder):
    """A digest of a session that ran over days carries what was said on its last day: recall
    --as-of a time before that must not answer with it (the later turn was not said yet).
    After the last turn, the digest answers --as-of as it does now."""
    start = OLD
    talk = [turn("Caroline: I went to an LGBTQ support group yesterday.", 0, when=start),
            turn("Caroline: I adopted a puppy called Oscar.", 0, when=start + timedelta(days=2))]
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    await vectors.write_many(talk)
    await _consolidate(store, offline_embedder)
    (digest,) = [e for e in (await _current(store)).values() if e.type is MemoryType.SEMANTIC]
    assert "puppy" in digest.content and "support group" in digest.content

    def asked(at: datetime) -> MemoryQuery:
        return MemoryQuery(agent_id="ada", text="puppy Oscar", as_of=at)

    assert digest.id not in [e.id for e in await store.search(asked(start + timedelta(days=1)))]
    assert digest.id in [e.id for e in await store.search(asked(start + timedelta(days=3)))]  # control
    assert digest.id in [e.id for e in await store.search(MemoryQuery(agent_id="ada", text="puppy Oscar"))]


async def test_a_merged_memory_answers_until_a_time_one_of_its_restatements_was_said_by(store, offline_embedder):
    """The library's ``until`` bound reads a merge's sources as ``since`` does: "I like tea." said 40
    days before the fuller "I like tea with milk." it was merged into still answers ``until`` then."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    tea, milk = fact("I like tea.", created_at=OLD - timedelta(days=40)), fact("I like tea with milk.", created_at=OLD)
    park = fact("The car is parked on level 3.", created_at=OLD)
    await vectors.write_many([tea, milk, park])
    await _consolidate(store, offline_embedder)
    assert await store.run(sources_of, [milk.id]) == {milk.id: [tea.id]}

    async def found(text: str, **bounds) -> list[str]:
        return [e.id for e in await store.search(MemoryQuery(agent_id="ada", text=text, **bounds))]

    assert await found("tea", until=OLD - timedelta(days=20)) == [milk.id]
    assert await found("tea", since=OLD - timedelta(days=30), until=OLD - timedelta(days=20)) == []  # said neither
    assert await found("car parked", until=OLD - timedelta(days=20)) == []  # control: said only after it
    assert await found("car parked", until=OLD) == [park.id]


async def test_a_consolidated_source_answers_as_of_a_time_before_its_carrier_and_an_operator_can_still_end_it(
    store, offline_embedder
):
    """Consolidation archives what it digests, but what was current then stays so: recall --as-of a time
    before the digest began to hold answers with the turn it carries. An operator's forget or hide of
    such a turn is an operator's action and holds at every time."""
    start = OLD
    group, camping, puppy = (
        turn("Caroline: I went to an LGBTQ support group yesterday.", 0, when=start),
        turn("Caroline: We went camping by the lake with the kids.", 1, when=start),
        turn("Caroline: I adopted a puppy called Oscar.", 0, when=start + timedelta(days=2)),
    )
    await VectorAdapter(store, EmbeddingGateway([offline_embedder])).write_many([group, camping, puppy])
    await _consolidate(store, offline_embedder)
    assert {group.id, camping.id, puppy.id} <= {i for i, e in (await _rows(store)).items() if e.archived}

    async def found(text: str, at: datetime | None) -> set[str]:
        return {e.id for e in await store.search(MemoryQuery(agent_id="ada", text=text, as_of=at))}

    before = start + timedelta(days=1)
    assert group.id in await found("support group", before)
    assert camping.id in await found("camping lake", before)
    assert puppy.id not in await found("puppy Oscar", before)  # not said yet
    for now in (None, start + timedelta(days=3)):  # the digest answers, its turns do not
        assert not {group.id, camping.id, puppy.id} & (await found("support group camping puppy", now))

    await store.archive([group.id])  # `arcana memory forget`
    await store.set_visibility([camping.id], Visibility.HIDDEN)
    assert group.id not in await found("support group", before)
    assert camping.id not in await found("camping lake", before)
    await store.restore([group.id])  # control: lifting the forget makes it current now
    assert group.id in await found("support group", None)


async def test_a_decision_whose_memory_an_operator_changed_meanwhile_is_left_for_the_next_run(store, offline_embedder):
    """A run reads, decides, then applies in batches; on a large store minutes apart. A turn pinned
    in between (here by a second connection, as another process would) was archived into its digest
    all the same. Now that digest is left out whole and counted; the other session's is made."""
    from memory.sqlite import mutations
    from memory.sqlite.connection import dbapi

    first = [turn("Caroline: I went to a support group.", 0, session="s1"), turn("Mel: that sounds good.", 1, session="s1")]
    second = [turn("Caroline: I adopted a puppy.", 0, session="s2"), turn("Mel: what is its name?", 1, session="s2")]
    await VectorAdapter(store, EmbeddingGateway([offline_embedder])).write_many([*first, *second])
    pinned = []

    def operator_pins_meanwhile(done: int, total: int) -> None:
        if not pinned:
            other = dbapi().connect(str(store.path), isolation_level=None)
            other.row_factory = dbapi().Row
            other.execute("BEGIN IMMEDIATE")
            mutations.update(other, [second[0].id], "pin", "cli", "pinned = ?", (1,))
            other.execute("COMMIT")
            other.close()
            pinned.append(second[0].id)

    _, plan = await _consolidate(store, offline_embedder, on_progress=operator_pins_meanwhile)
    assert pinned and plan.counts()["digests"] == 1 and plan.counts()["changed"] == 1
    rows = await _rows(store)
    assert rows[first[0].id].archived and rows[first[1].id].archived  # control: s1 was digested
    assert not rows[second[0].id].archived and rows[second[0].id].pinned and not rows[second[1].id].archived
    assert (await _consolidate(store, offline_embedder))[1].counts()["changed"] == 0  # the next run decides afresh



async def test_a_memory_hidden_between_the_walk_and_its_merge_is_never_archived_into_a_visible_one(
        store, offline_embedder):
    """Merges are decided on the rows the walk read, then applied after the walk, on the rows read
    again: "I like tea." hidden in between (a second connection, as another process would) was read
    hidden, its stamp matched, and it was archived into the visible "I like tea with milk", whose
    recall then carried the hidden words. Now the cluster is left out whole and counted `changed`;
    the coffees beside it merge (the control)."""
    from memory.sqlite import mutations
    from memory.sqlite.connection import dbapi

    tea, milk = fact("I like tea."), fact("I like tea with milk.")
    coffee, sugar = fact("I like coffee."), fact("I like coffee with sugar.")
    await VectorAdapter(store, EmbeddingGateway([offline_embedder])).write_many([tea, milk, coffee, sugar])
    calls = []

    def operator_hides_after_the_walk_read_it(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:  # the merge walk has read its page: the pairs are not asked for yet
            other = dbapi().connect(str(store.path), isolation_level=None)
            other.row_factory = dbapi().Row
            other.execute("BEGIN IMMEDIATE")
            mutations.update(other, [tea.id], "visibility", "cli", "visibility = ?", (Visibility.HIDDEN.value,))
            other.execute("COMMIT")
            other.close()

    _, plan = await _consolidate(store, offline_embedder, on_progress=operator_hides_after_the_walk_read_it)

    current = await _current(store)
    assert {tea.id, milk.id} <= set(current) and current[tea.id].visibility is Visibility.HIDDEN
    assert plan.counts()["changed"] == 1
    assert plan.counts()["merged"] == 1 and coffee.id not in current and sugar.id in current  # control
    assert (await _consolidate(store, offline_embedder))[1].counts()["changed"] == 0  # the next run decides afresh


async def test_the_word_counts_of_the_merge_walk_do_not_grow_with_the_words_a_store_holds(store, tmp_path):
    """The walk counted every distinct content word exactly, in a dict: a store whose rows each carry
    codes or order numbers has about as many words as rows, so consolidate grew with the store (85 MiB
    peak on 20,000 such rows, 134 MiB on 300,000). The same number of rows drawn from 60 words is the
    control: the counts now hold alike for either, and both dry runs still decide the tea merge."""
    import random
    import tracemalloc

    from memory.adapters.sqlite import SQLiteAdapter
    from memory.consolidation.store import _frequencies
    from memory.progress import Progress
    from memory.sqlite.consolidation import drop_stage, stage_episodes

    rng = random.Random(7)
    vocabulary = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "ru", "ta") for b in ("sen", "dor", "vil", "mar", "pex",
                                                                                   "tug", "bal", "cor", "fen", "gis")]
    drawn = [fact(" ".join(rng.sample(vocabulary, 8)) + ".") for _ in range(2_000)]
    coded = [fact(" ".join(rng.sample(vocabulary, 2)) + f" order q{i}x ticket t{i}y code c{i}z ref r{i}w slip s{i}v.")
             for i in range(2_000)]
    other = SQLiteAdapter(tmp_path / "coded" / "memory.db", actor="test")
    held = []
    try:
        for target, rows in ((store, drawn), (other, coded)):
            await target.write_many([*rows, fact("I like tea."), fact("I like tea.")])
            await target.run(stage_episodes)  # the walk runs beside the stage and its set-aside table
            tracemalloc.start()
            counts, walked = await _frequencies(target, 10_000, Progress(None, 0))
            held.append(tracemalloc.get_traced_memory()[0])
            tracemalloc.stop()
            await target.run(drop_stage)
            assert walked == 2_002 and counts["tea"] >= 2, (walked, counts["tea"])
            _, plan = await consolidate_store(target, NOW, dry_run=True)
            assert plan.counts()["merged"] == 1  # the two teas, in either store
    finally:
        await other.aclose()
    assert held[1] < 1.5 * held[0], held  # 10,000 words that no other row holds, against 60


async def _copies_against_different_sentences(store, tmp_path) -> list[int]:
    """The traced peaks of a dry run over 2,000 different sentences (and two teas, the control, in
    another store) and then over 2,000 copies of one sentence in ``store``; each merges as it should."""
    import tracemalloc

    from memory.adapters.sqlite import SQLiteAdapter

    copies = [fact("The user prefers metric units.") for _ in range(2_000)]
    different = [fact(f"The user keeps crate {i} on shelf s{i}x of aisle a{i}y.") for i in range(2_000)]
    other = SQLiteAdapter(tmp_path / "different" / "memory.db", actor="test")
    peaks, plans = [], []
    try:
        for target, rows in ((other, [*different, fact("I like tea."), fact("I like tea.")]), (store, copies)):
            await target.write_many(rows)
            tracemalloc.start()
            plans.append((await consolidate_store(target, NOW, dry_run=True))[1].counts())
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    finally:
        await other.aclose()
    assert (plans[0]["merged"], plans[0]["merged_sources"]) == (1, 1)  # the control's teas
    assert (plans[1]["merged"], plans[1]["merged_sources"]) == (1, 1_999)
    return peaks


async def test_a_store_that_says_one_thing_thousands_of_times_is_walked_in_as_little_memory(store, tmp_path):
    """Each page asked the keyword index for every row's carriers at once and kept each pair with
    its words: 2,000 rows x 200 carriers, 400,000 pairs in hand (424 MiB peak on 5,000 copies of one
    sentence, 82 MiB now). The same number of different sentences is the control; the copies still
    merge into one, as the control's two teas do."""
    peaks = await _copies_against_different_sentences(store, tmp_path)
    assert peaks[1] < 3 * peaks[0], peaks


async def test_a_cluster_bigger_than_a_page_merges_exactly_as_when_read_whole(store, tmp_path, monkeypatch):
    """A cluster of restatements was read whole, every member as a memory at once (313 MiB peak on
    50,000 copies of one sentence); one bigger than a page is now read a page at a time and merged as
    one decision of ids. With a page of 4 the 11-row cluster decides and ends exactly as with one page (its
    keeper, the earliest, in a middle page); the two teas, a cluster within a page, are the control."""
    from memory.adapters.sqlite import SQLiteAdapter
    from memory.consolidation import store as walk

    said = [fact("The user prefers metric units.", importance=0.3 + i / 100, tags=[f"t{i % 3}"]) for i in range(10)]
    said.insert(6, fact("The user prefers metric units.", importance=0.4, created_at=OLD))
    rows = [*said, fact("I like tea."), fact("I like tea.")]
    whole = SQLiteAdapter(tmp_path / "whole" / "memory.db", actor="test")
    ends, plans = [], []
    try:
        for target, page in ((whole, walk.PAGE), (store, 4)):
            monkeypatch.setattr(walk, "PAGE", page)
            await target.write_many(rows)
            plans.append((await consolidate_store(target, NOW, dry_run=True, decisions=True))[1])
            await consolidate_store(target, NOW)
            edges = await target.run(lambda raw: sorted(tuple(r) for r in raw.execute(
                "SELECT src_id, dst_id FROM memory_edges WHERE relation = ?", (SOURCES,))))
            ends.append(({i: (e.archived, round(e.importance, 6), e.tags) for i, e in (await _rows(target)).items()},
                         edges))
    finally:
        await whole.aclose()
    assert plans[0].counts() == plans[1].counts() and plans[1].counts()["merged"] == 2, plans[1].counts()
    assert plans[0].merges == plans[1].merges
    metric = next(m for m in plans[1].merges if m["keep"] == said[6].id)
    assert metric["sources"] == [e.id for e in said if e is not said[6]] and metric["importance"] == 0.85
    assert ends[0] == ends[1]
    assert ends[1][0][said[6].id] == (False, 0.85, ["t0", "t1", "t2"])  # the keeper stays, lifted, every tag
    assert len(ends[1][1]) == 11  # ten copies and one tea, each linked to its keeper


async def test_a_cluster_is_never_held_whole_however_many_times_one_thing_was_said(store, tmp_path, monkeypatch):
    """With a page of 50, 2,000 copies of one sentence peak near 2,000 different sentences (2.5x: the
    cluster's seqs are held as ints): the cluster was read whole, every copy a memory at once (13x)."""
    from memory.consolidation import store as walk

    monkeypatch.setattr(walk, "PAGE", 50)
    peaks = await _copies_against_different_sentences(store, tmp_path)
    assert peaks[1] < 4 * peaks[0], peaks


async def test_a_dry_runs_listed_decisions_never_carry_hidden_or_private_text(store, offline_embedder):
    """``consolidate --dry-run --json`` printed a hidden merge's and a hidden digest's text; now their
    ids and counts are listed, the text withheld. Visible decisions in the same store keep theirs."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    shown = [fact("I like tea."), fact("I like tea with milk."), turn("Ada: I moved to Lisbon in spring.", 0)]
    secret = [fact("The vault code is azure falcon.", visibility=Visibility.HIDDEN),
              fact("The vault code is azure falcon nine.", visibility=Visibility.HIDDEN),
              turn("Ada: My passport number is X1234567.", 1, session="s2", visibility=Visibility.HIDDEN),
              fact("My diary says I fear heights.", visibility=Visibility.PRIVATE),
              fact("My diary says I really fear heights.", visibility=Visibility.PRIVATE)]
    await vectors.write_many([*shown, *secret])

    _, plan = await _consolidate(store, offline_embedder, dry_run=True, decisions=True)

    listed = json.dumps({"merges": plan.merges, "digests": plan.digests})
    assert plan.counts()["merged"] == 3 and plan.counts()["digests"] == 2  # every decision is still counted
    for words in ("azure", "falcon", "X1234567", "heights"):
        assert words not in listed
    contents = sorted(str(d["content"]) for d in [*plan.merges, *plan.digests])
    assert contents == ["I like tea with milk.", "None", "None", "None", "On 2 April 2024: Ada: I moved to Lisbon in spring."]
    hidden_digest = next(d for d in plan.digests if d["content"] is None)
    assert hidden_digest["sources"] == [secret[2].id]  # its ids still say what the run would do


async def test_recall_of_episodes_still_finds_the_turns_a_digest_carries(store, offline_embedder):
    """A digest is a semantic memory, so once its turns were archived ``--type episodic`` found none
    of them. It now answers for them; a plain fact and a merge's keeper (both semantic) still do not."""
    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    old = turn("Ada: I bought a kayak in Bergen.", 0)
    recent = turn("Ada: I paddled my kayak to Askoy.", 0, session="s9", when=NOW - timedelta(days=1))
    kayak, kayak_red = fact("My kayak is red."), fact("My kayak is red and yellow.")
    await vectors.write_many([old, recent, kayak, kayak_red])

    _, plan = await _consolidate(store, offline_embedder)

    assert plan.counts()["digests"] == 1 and plan.counts()["merged"] == 1
    (digest,) = [e for e in (await _current(store)).values() if e.content.startswith("On ")]
    episodes = await store.search(MemoryQuery(agent_id="ada", text="kayak", types=[MemoryType.EPISODIC]))
    assert sorted(h.id for h in episodes) == sorted([digest.id, recent.id])
    facts = await store.search(MemoryQuery(agent_id="ada", text="kayak", types=[MemoryType.SEMANTIC]))
    assert sorted(h.id for h in facts) == sorted([digest.id, kayak_red.id])  # control: a digest is a fact too


async def test_forgetting_an_agents_restatement_leaves_the_users_fact_it_merged_into(store, offline_embedder):
    """A merge's keeper carries its restatements (``consolidates`` edges), so withholding a source
    reached the keeper: forgetting the agent's "I like tea" archived the user's own "I like tea with
    milk" it had merged into. The reach runs from the user's statement to what restates it, never
    back. Control in the same store: forgetting the user's keeper still withholds what it absorbed."""
    from memory.operator.edits import Edit, MemoryEditor
    from memory.types import ConfidenceSource

    vectors = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    agent = {"confidence": 0.7, "confidence_source": ConfidenceSource.AGENT}
    tea, milk = fact("I like tea.", **agent), fact("I like tea with milk.")
    bike, bell = fact("I own a red bike.", **agent), fact("I own a red bike with a bell.")
    await vectors.write_many([tea, milk, bike, bell])
    _, plan = await _consolidate(store, offline_embedder)
    assert plan.counts()["merged"] == 2 and {milk.id, bell.id} == set(await _current(store))

    editor = MemoryEditor(store)
    forgot = await editor.apply(tea.id, Edit("archive"))
    assert forgot.carriers == [] and milk.id in await _current(store)
    assert milk.id in [h.id for h in await store.search(MemoryQuery(agent_id="ada", text="tea milk"))]

    await editor.apply(bell.id, Edit("archive"))  # control: the user's fact withheld, what it absorbed with it
    assert not [h for h in await store.search(MemoryQuery(agent_id="ada", text="red bike")) if "bike" in h.content]
