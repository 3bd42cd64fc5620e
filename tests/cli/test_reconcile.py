"""Facts that evolve, through the CLI and the core: each decision, --as-of, the version
chain, undo with --current, the llm strategy against a loopback model, the
source rule, and the current-version clause of the admission predicate."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest
from federation_faults import locked_by_another_process

from memory.adapters.sqlite import SQLiteAdapter
from memory.types import Audience, ConfidenceSource, MemoryEntry, MemoryQuery


def data(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def remember(cli, text, *extra):
    return data(cli("remember", text, "--agent", "ada", "--json", *extra))


def listed(cli, *extra):
    return {e["id"]: e for e in data(cli("memory", "list", "--agent", "ada", "--json", *extra))}


@pytest.fixture
def keyword_home(no_embedder):
    return no_embedder


def test_each_decision_through_the_cli(cli, keyword_home):
    first = remember(cli, "I live in Berlin.")
    assert first["decision"] == "add" and first["supersedes"] == []
    same = cli("remember", "I'm still living in Berlin.", "--agent", "ada")
    assert same.exit_code == 0 and same.stdout.strip() == first["id"]
    assert f"already known: reinforced {first['id'][:8]}" in same.stderr
    moved = cli("remember", "I moved to Lisbon last month.", "--agent", "ada", "--json")
    update = data(moved)
    assert update["decision"] == "update" and update["supersedes"] == [first["id"]]
    assert f"updated: supersedes {first['id'][:8]}" in moved.stderr
    cat = remember(cli, "I have a cat named Miso.")
    gone = remember(cli, "I no longer have a cat.")
    assert gone["decision"] == "delete" and gone["supersedes"] == [cat["id"]]
    sister = remember(cli, "My sister lives in Porto.")  # near but different: a new fact
    assert sister["decision"] == "add"

    current = listed(cli)
    assert set(current) == {update["id"], gone["id"], sister["id"]}  # superseded versions are not listed
    everything = listed(cli, "--all")
    assert set(everything) == set(current) | {first["id"], cat["id"]}  # ... but kept: nothing deleted
    assert everything[first["id"]]["superseded_by"] == update["id"] and everything[first["id"]]["valid_to"]
    assert everything[update["id"]]["supersedes"] == first["id"]
    table = cli("memory", "list", "--agent", "ada", "--all").stdout
    assert "superseded" in next(line for line in table.splitlines() if "Berlin" in line)
    assert "superseded" not in next(line for line in table.splitlines() if "Lisbon" in line)

    ops = [h["op"] for h in data(cli("memory", "history", first["id"], "--agent", "ada", "--json"))]
    assert ops == ["insert", "reinforce", "supersede"]  # the noop and the supersession are ledgered
    ops = [h["op"] for h in data(cli("memory", "history", update["id"], "--agent", "ada", "--json"))]
    assert ops == ["insert", "version"]


def test_recall_answers_the_current_version_and_as_of_the_old_one(cli, keyword_home):
    old = remember(cli, "I work at Siemens.")
    time.sleep(0.05)
    between = datetime.now(UTC).isoformat()
    time.sleep(0.05)
    new = remember(cli, "I just started a new job at Bosch.")
    assert new["supersedes"] == [old["id"]]

    def recalled(*extra):
        return [r["id"] for r in data(cli("recall", "work Siemens Bosch job", "--agent", "ada", "--json", *extra))["results"]]

    assert recalled() == [new["id"]]
    assert recalled("--as-of", between) == [old["id"]]  # what was believed then, not what was written later
    assert recalled("--as-of", "2000-01-01") == []  # nothing was known yet
    assert recalled("--as-of", "0d") == [new["id"]]
    bad = cli("recall", "work", "--agent", "ada", "--as-of", "last tuesday")
    assert bad.exit_code == 2 and "--as-of" in bad.output


def test_history_walks_the_version_chain_both_ways(cli, keyword_home):
    ids = [remember(cli, text)["id"] for text in ("My manager is Priya.", "My manager is now Tomas.", "I report to Ines now.")]
    for middle_or_end in (ids[0], ids[1], ids[2]):
        chain = data(cli("memory", "history", middle_or_end[:8], "--agent", "ada", "--versions", "--json"))
        assert [v["id"] for v in chain] == ids
        assert [v["current"] for v in chain] == [False, False, True]
    table = cli("memory", "history", ids[1], "--agent", "ada", "--versions").stdout
    assert table.count("superseded") == 2 and "current" in table


def test_set_current_undoes_a_wrong_supersession(cli, keyword_home):
    old = remember(cli, "My favorite color is green.")
    new = remember(cli, "My favorite color is blue now.")
    assert new["supersedes"] == [old["id"]]
    undone = cli("memory", "set", old["id"], "--agent", "ada", "--current", "--json")
    assert data(undone)["valid_to"] is None and "is current again" in undone.stderr
    assert set(listed(cli)) == {old["id"], new["id"]}  # both answer again; nothing was lost
    assert listed(cli)[new["id"]]["supersedes"] is None
    ops = [h["op"] for h in data(cli("memory", "history", old["id"], "--agent", "ada", "--json"))]
    assert ops[-1] == "make_current"
    again = cli("memory", "set", old["id"], "--agent", "ada", "--current")
    assert again.exit_code == 0 and "was already current" in again.stderr


def test_no_reconcile_stores_as_given(cli, keyword_home):
    first = remember(cli, "I live in Berlin.")
    raw = remember(cli, "I moved to Lisbon.", "--no-reconcile")
    twice = remember(cli, "I live in Berlin.", "--no-reconcile")
    assert raw["decision"] == twice["decision"] == "add"
    assert set(listed(cli)) == {first["id"], raw["id"], twice["id"]}


def test_strategy_off_in_config_stores_as_given(cli, keyword_home):
    assert cli("config", "set", "memory.reconcile.strategy", "off").exit_code == 0
    first = remember(cli, "I live in Berlin.")
    second = remember(cli, "I live in Berlin.")
    assert second["decision"] == "add" and second["id"] != first["id"]
    bad = cli("config", "set", "memory.reconcile.strategy", "maybe")
    assert bad.exit_code == 2 and "'heuristic', 'llm' or 'off'" in bad.output


async def _agent_write(home, text, source):
    from memory.runtime.assembly import build_federation

    federation = await build_federation("agent-x", home=home)
    try:
        return await federation.write(MemoryEntry(agent_id="agent-x", content=text, confidence_source=source))
    finally:
        await federation.aclose()


async def test_an_asserted_update_never_supersedes_a_user_confirmed_fact(keyword_home):
    user = await _agent_write(keyword_home, "I live in Berlin.", ConfidenceSource.USER_CONFIRMED)
    claim = await _agent_write(keyword_home, "I moved to Madrid.", ConfidenceSource.AGENT)
    assert claim.decision == "add" and claim.supersedes == [] and claim.conflict_with == user.entry_id
    # Positive control: the same update, asserted by the user, does supersede.
    agent_fact = await _agent_write(keyword_home, "My employer is Acme.", ConfidenceSource.AGENT)
    user_update = await _agent_write(keyword_home, "I work at Vertex now.", ConfidenceSource.USER_CONFIRMED)
    assert user_update.decision == "update" and user_update.supersedes == [agent_fact.entry_id]

    store = SQLiteAdapter.for_agent("agent-x", home=keyword_home)
    try:
        query = MemoryQuery(agent_id="agent-x", text="live Berlin Madrid moved")
        answers = {e.id: e for e in await store.search(query)}
        assert set(answers) == {user.entry_id, claim.entry_id}  # two rows, not an overwrite
        assert answers[user.entry_id].valid_to is None  # the user's fact keeps answering ...
        assert answers[claim.entry_id].conflict_with == user.entry_id  # ... beside the claim, marked
        calm = await store.search(query.model_copy(update={"exclude_conflicts": True}))
        assert [e.id for e in calm] == [user.entry_id]
        assert await store.open_conflicts() == 1
    finally:
        await store.aclose()
    from memory.operations.doctor import check_conflicts  # what `arcana doctor` reports

    conflicts = check_conflicts(keyword_home)
    assert conflicts.ok and conflicts.detail.startswith("1 open conflict")


async def test_the_user_confirming_a_held_claim_ends_the_fact_it_was_held_against(keyword_home):
    """The user saying what the agent had only claimed is the update the claim was not allowed to
    make: the claim is no longer a conflict, and the fact it was held against stops answering now
    (it still answers --as-of before). Beside a claim the user never confirms, still held."""
    user = await _agent_write(keyword_home, "I live in Berlin.", ConfidenceSource.USER_CONFIRMED)
    claim = await _agent_write(keyword_home, "I moved to Lisbon.", ConfidenceSource.AGENT)
    employer = await _agent_write(keyword_home, "My employer is Acme.", ConfidenceSource.USER_CONFIRMED)
    rival = await _agent_write(keyword_home, "I work at Vertex now.", ConfidenceSource.AGENT)
    assert claim.conflict_with == user.entry_id and rival.conflict_with == employer.entry_id
    before = datetime.now(UTC)
    time.sleep(0.05)

    confirmed = await _agent_write(keyword_home, "I moved to Lisbon.", ConfidenceSource.USER_CONFIRMED)
    assert confirmed.decision == "noop" and confirmed.entry_id == claim.entry_id
    assert confirmed.supersedes == [user.entry_id]

    store = SQLiteAdapter.for_agent("agent-x", home=keyword_home)
    try:
        query = MemoryQuery(agent_id="agent-x", text="live Berlin Lisbon moved")
        answers = {e.id: e for e in await store.search(query)}
        assert set(answers) == {claim.entry_id}  # Berlin no longer answers now
        assert answers[claim.entry_id].conflict_with is None
        assert answers[claim.entry_id].confidence_source is ConfidenceSource.USER_CONFIRMED
        calm = await store.search(query.model_copy(update={"exclude_conflicts": True}))
        assert [e.id for e in calm] == [claim.entry_id]
        then = await store.search(query.model_copy(update={"as_of": before}))
        assert user.entry_id in {e.id for e in then}  # what was believed before the user said it
        # control: the claim the user never confirmed is still held beside her fact
        work = {e.id: e for e in await store.search(MemoryQuery(agent_id="agent-x", text="employer Acme Vertex work"))}
        assert set(work) == {employer.entry_id, rival.entry_id}
        assert work[rival.entry_id].conflict_with == employer.entry_id and work[employer.entry_id].valid_to is None
        assert await store.open_conflicts() == 1
    finally:
        await store.aclose()


async def test_entities_resolve_aliases_so_a_renamed_subject_still_updates(keyword_home):
    from memory.runtime.assembly import build_federation

    federation = await build_federation("fam", home=keyword_home)
    try:
        first = await federation.write(MemoryEntry(agent_id="fam", content="My wife Sarah works at Apple."))
        second = await federation.write(MemoryEntry(agent_id="fam", content="Sarah works at Google now."))
        other = await federation.write(MemoryEntry(agent_id="fam", content="My brother works at Apple."))
        assert second.decision == "update" and second.supersedes == [first.entry_id]
        assert other.decision == "add"  # another person: positive control for the alias match
        store = federation.router.private.backend
        edges = await store.run(
            lambda raw: raw.execute(
                "SELECT e.src_id, a.alias FROM memory_edges e JOIN entity_aliases a ON a.entity_id = e.dst_id "
                "WHERE e.relation = 'about' ORDER BY a.alias"
            ).fetchall()
        )
        about = {}
        for src, alias in edges:
            about.setdefault(src, set()).add(alias)
        assert about[second.entry_id] == {"sarah", "wife"} and about[other.entry_id] == {"brother"}
    finally:
        await federation.aclose()


# -- the llm strategy against a real loopback model server -----------------------


def _llm_home(cli, model_server):
    assert cli("model", "add", "judge", "--provider", "ollama", "--base-url", model_server.url, "--model", "m", "--default").exit_code == 0
    assert cli("config", "set", "memory.reconcile.strategy", "llm").exit_code == 0
    assert cli("config", "set", "memory.reconcile.timeout_seconds", "1").exit_code == 0


def test_doctor_counts_open_conflicts(cli, keyword_home):
    conflicts = next(c for c in data(cli("doctor", "--json"))["checks"] if c["name"] == "conflicts")
    assert conflicts == {"name": "conflicts", "ok": True, "detail": "no open conflicts"}


def test_llm_strategy_good_json_decides(cli, keyword_home, model_server):
    _llm_home(cli, model_server)
    first = remember(cli, "The office plant is a fern.")
    assert model_server.requests == []  # no candidates: no call
    model_server.reply = lambda body: '```json\n{"decision": "update", "target": 1}\n```'
    second = remember(cli, "The office plant got replaced by a cactus.")
    assert second["decision"] == "update" and second["supersedes"] == [first["id"]]
    body = model_server.requests[-1]["body"]
    assert body["options"]["temperature"] == 0.0
    assert "The office plant is a fern." in body["messages"][1]["content"]


@pytest.mark.parametrize(
    "failure",
    ["malformed", "timeout", "http_error", "bad_target"],
)
def test_llm_strategy_failures_fall_back_to_add(cli, keyword_home, model_server, failure, arcana_home):
    _llm_home(cli, model_server)
    first = remember(cli, "The office plant is a fern.")
    if failure == "malformed":
        model_server.reply = lambda body: '{"decision": "update", "target": 1'
    elif failure == "timeout":
        model_server.delay = 2.0
        model_server.reply = lambda body: '{"decision": "delete", "target": 1}'
    elif failure == "http_error":
        model_server.fail_status = 500
    else:
        model_server.reply = lambda body: '{"decision": "delete", "target": 7}'
    second = remember(cli, "The office plant got replaced by a cactus.")
    assert second["decision"] == "add" and second["supersedes"] == []
    assert set(listed(cli)) == {first["id"], second["id"]}
    audit = [json.loads(line) for line in arcana_home.audit_log.read_text().splitlines()]
    assert any(a.get("event") == "reconcile_fallback" for a in audit)


def test_a_model_that_keeps_failing_is_not_asked_for_every_line(cli, keyword_home, model_server, arcana_home, tmp_path):
    """`remember --from` asked a failing model once per line, each a whole timeout when it hangs (10 s
    by default: a day for 10,000 lines). The tiers' breaker now opens after three failures in a row;
    the lines still go in, as adds. Control: an answering model is asked for every line."""
    _llm_home(cli, model_server)
    remember(cli, "I live in Hamburg.")

    def bulk(name, cities):
        path = tmp_path / name
        path.write_text("".join(json.dumps({"content": f"I live in {c}.", "created_at": f"2024-01-{i + 1:02d}T10:00:00Z"})
                                + "\n" for i, c in enumerate(cities)))
        return data(cli("remember", "--from", str(path), "--agent", "ada", "--json"))

    model_server.fail_status = 500
    failing = bulk("failing.jsonl", ["Berlin", "Lisbon", "Paris", "Rome", "Oslo", "Madrid", "Vienna", "Prague"])
    assert failing["written"] == 8 and failing["decisions"]["add"] == 8
    assert len(model_server.requests) == 3
    events = [json.loads(line)["event"] for line in arcana_home.audit_log.read_text().splitlines()]
    assert events.count("reconcile_fallback") == 3 and events.count("reconcile_model_paused") == 1
    model_server.fail_status = None  # the control, in the same home: a model that answers is asked each time
    model_server.reply = lambda body: '{"decision": "add", "target": null}'
    answered = bulk("answered.jsonl", ["Dublin", "Athens", "Bern", "Riga", "Turin"])
    assert answered["written"] == 5 and len(model_server.requests) == 3 + 5


# -- the current-version clause of the admission predicate ------------------------


async def test_admission_current_version_and_as_of(store):
    now = time.time()
    old = MemoryEntry(agent_id="a", content="kettle is blue", created_at=datetime.fromtimestamp(now - 100, UTC))
    new = MemoryEntry(agent_id="a", content="kettle is red", created_at=datetime.fromtimestamp(now - 50, UTC))
    held = MemoryEntry(agent_id="a", content="kettle is green", conflict_with=old.id)
    plain = MemoryEntry(agent_id="a", content="kettle is on the shelf")  # positive control: never versioned
    await store.write_many([old, new, held, plain])
    await store.supersede([old.id], new.id)

    async def ids(audience=Audience.RECALL, as_of=None):
        query = MemoryQuery(agent_id="a", text="kettle", as_of=as_of, limit=10)
        return {e.id for e in await store.search(query, audience=audience)}

    current = {new.id, held.id, plain.id}  # a held claim is a current version too, marked
    assert await ids() == current
    assert await ids(Audience.LISTING) == current
    assert await ids(Audience.OPERATOR) == {old.id, *current}
    assert await ids(as_of=datetime.fromtimestamp(now - 75, UTC)) == {old.id}  # new not yet written
    assert await ids(as_of=datetime.fromtimestamp(now - 150, UTC)) == set()
    assert await ids(as_of=datetime.fromtimestamp(now + 60, UTC)) == current
    # Every read path goes through it: fetch by id (graph expansion) and by seq (semantic leg).
    admitted = await store.admitted_by_id(MemoryQuery(agent_id="a"), [old.id, new.id, held.id])
    assert set(admitted) == {new.id, held.id}
    # A re-save of a stale entry object never resurrects the superseded version.
    await store.write(old.model_copy(update={"importance": 0.9}))
    assert await ids() == current


def test_a_superseded_fact_stops_answering_from_its_global_copy(cli, keyword_home):
    """The old fact is no longer current anywhere: its promoted copy ends with it (ledgered there), undo restores it."""
    assert cli("agent", "create", "bob").exit_code == 0
    old = remember(cli, "I live in Berlin (GLHOME).", "--importance", "0.95")
    remember(cli, "GLHOME control: the kettle is blue.", "--importance", "0.95")
    assert "global" in old["accepted"]

    def seen():
        results = data(cli("recall", "GLHOME", "--agent", "bob", "--mode", "keyword", "--json"))["results"]
        return {r["content"] for r in results}

    assert seen() == {"I live in Berlin (GLHOME).", "GLHOME control: the kettle is blue."}
    new = remember(cli, "I moved to Lisbon (GLHOME).", "--importance", "0.95")
    assert new["decision"] == "update" and new["supersedes"] == [old["id"]] and new["warnings"] == []
    assert seen() == {"I moved to Lisbon (GLHOME).", "GLHOME control: the kettle is blue."}
    copy = data(cli("memory", "show", old["id"], "--global", "--json"))
    assert copy["superseded_by"] == new["id"] and copy["valid_to"] is not None
    assert [r["op"] for r in data(cli("memory", "history", old["id"], "--global", "--json"))][-1] == "supersede"
    assert cli("memory", "set", old["id"], "--agent", "ada", "--current").exit_code == 0
    assert "I live in Berlin (GLHOME)." in seen()


def test_a_superseded_merge_ends_the_global_copy_of_the_restatement_it_absorbed(cli, keyword_home):
    """Consolidation merges a promoted restatement into the memory that says the most and archives
    it, leaving its global copy as it is. When a newer fact then ends the merged memory, the copy
    of what it absorbed ends too: Berlin no longer answers from the global tier, for anyone."""
    assert cli("agent", "create", "bob").exit_code == 0
    keeper = remember(cli, "I live in Berlin (GLMERGE).", "--no-reconcile")
    time.sleep(0.01)
    absorbed = remember(cli, "I live in Berlin (GLMERGE)", "--importance", "0.95", "--no-reconcile")
    remember(cli, "GLMERGE control: the kettle is blue.", "--importance", "0.95")
    assert "global" in absorbed["accepted"] and "global" not in keeper["accepted"]
    merged = data(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]
    assert merged["merged"] == 1 and merged["merged_sources"] == 1

    def seen(agent):
        results = data(cli("recall", "GLMERGE", "--agent", agent, "--mode", "keyword", "--json"))["results"]
        return {r["content"] for r in results}

    assert seen("bob") == {"I live in Berlin (GLMERGE)", "GLMERGE control: the kettle is blue."}
    new = remember(cli, "I moved to Lisbon (GLMERGE).")
    assert new["decision"] == "update" and new["supersedes"] == [keeper["id"]]
    for agent in ("ada", "bob"):  # the control keeps answering from the global tier
        assert "I live in Berlin (GLMERGE)" not in seen(agent) and "GLMERGE control: the kettle is blue." in seen(agent)
    copy = data(cli("memory", "show", absorbed["id"], "--global", "--json"))
    assert copy["superseded_by"] == new["id"] and copy["valid_to"] is not None
    # restoring the absorbed restatement brings it back as a superseded version, not as the answer
    assert cli("memory", "restore", absorbed["id"], "--agent", "ada").exit_code == 0
    assert "I live in Berlin (GLMERGE)" not in seen("ada")


def test_making_a_superseded_merge_current_again_brings_back_the_restatement_it_absorbed(cli, keyword_home):
    """`memory set --current` undoes a wrong supersession: the restatement the merge absorbed, which
    that supersession ended with its global copy, answers again as it did before (another agent read
    Berlin from the global tier, then never again)."""
    assert cli("agent", "create", "bob").exit_code == 0
    keeper = remember(cli, "I live in Berlin (GLBACK).", "--no-reconcile")
    time.sleep(0.01)
    absorbed = remember(cli, "I live in Berlin (GLBACK)", "--importance", "0.95", "--no-reconcile")
    remember(cli, "GLBACK control: the kettle is blue.", "--importance", "0.95")
    assert data(cli("consolidate", "--agent", "ada", "--json"))["agents"][0]["merged_sources"] == 1

    def seen(agent):
        results = data(cli("recall", "GLBACK", "--agent", agent, "--mode", "keyword", "--json"))["results"]
        return {r["content"] for r in results}

    assert seen("bob") == {"I live in Berlin (GLBACK)", "GLBACK control: the kettle is blue."}
    new = remember(cli, "I moved to Lisbon (GLBACK).")
    assert new["supersedes"] == [keeper["id"]] and seen("bob") == {"GLBACK control: the kettle is blue."}
    assert cli("memory", "set", keeper["id"], "--agent", "ada", "--current").exit_code == 0
    assert seen("bob") == {"I live in Berlin (GLBACK)", "GLBACK control: the kettle is blue."}
    for shown in (data(cli("memory", "show", absorbed["id"], "--agent", "ada", "--json")),
                  data(cli("memory", "show", absorbed["id"], "--global", "--json"))):
        assert shown["valid_to"] is None and shown["superseded_by"] is None
    assert data(cli("memory", "show", absorbed["id"], "--agent", "ada", "--json"))["archived"] is True  # still merged


async def test_the_keyword_candidates_focus_on_the_rarest_words(store):
    """Without vectors the candidate search ORs only the few rarest words of the statement,
    so its work stays bounded on a large store; the memory it is about is still found."""
    from memory.query_terms import terms
    from memory.query_terms import DF_CAP
    from memory.sqlite.fts import focused_match

    common = [MemoryEntry(agent_id="a", content=f"weather report number {i}") for i in range(DF_CAP + 50)]
    berlin = MemoryEntry(agent_id="a", content="The weather report said Berlin gets snow")
    await store.write_many([*common, berlin])
    # berlin alone is rare; of the common words the longer, which only fills what berlin leaves
    assert await store.run(focused_match, terms("weather report for Berlin")) == (
        'content : ("berlin")', 'content : ("weather")')
    found = await store.keyword_candidates(MemoryQuery(agent_id="a", text="weather report for Berlin", limit=3), 3)
    assert found[0].id == berlin.id
    assert await store.run(focused_match, terms("zebra quagga")) is None  # words no memory has find nothing


async def test_the_keyword_candidates_of_common_words_rank_a_bounded_window(store):
    """A word in more than DF_CAP memories, alone or beside a rare one, had BM25 score every row
    holding it (most of a keyword-only `remember` at 300,000 rows); now only its newest DF_BUDGET
    rows are, and only to fill what the rare words leave, so the work stays the same as the store grows."""
    from memory.query_terms import DF_BUDGET

    query = MemoryQuery(agent_id="a", text="weather report", limit=3)
    beside = MemoryQuery(agent_id="a", text="weather report from Oslo", limit=3)
    asks = (lambda: store.keyword_candidates(query, 3), lambda: store.keyword_candidates(beside, 3),
            lambda: store.search(query, audience=Audience.OPERATOR))

    async def steps(ask) -> int:
        count = [0]

        def step() -> int:
            count[0] += 1
            return 0

        await store.run(lambda raw: raw.set_progress_handler(step, 1))
        try:
            await ask()
        finally:
            await store.run(lambda raw: raw.set_progress_handler(None, 0))
        return count[0]

    oslo = MemoryEntry(agent_id="a", content="Oslo had snow")
    await store.write_many([oslo, *(MemoryEntry(agent_id="a", content=f"weather report number {i}") for i in range(2 * DF_BUDGET))])
    small = [await steps(ask) for ask in asks]
    await store.write_many([MemoryEntry(agent_id="a", content=f"weather report number {i} again") for i in range(6 * DF_BUDGET)])
    newest = MemoryEntry(agent_id="a", content="weather report")
    hidden = MemoryEntry(agent_id="a", content="weather report", visibility="hidden")
    await store.write_many([newest, hidden])
    large = [await steps(ask) for ask in asks]
    assert large[0] < 1.2 * small[0] and large[1] < 1.2 * small[1]  # four times the rows holding the words: the same work
    assert large[2] > 3 * small[2]  # positive control: a recall's ranking of them all grows with them
    found = await store.keyword_candidates(query, 3)
    assert found[0].id == newest.id and hidden.id not in {e.id for e in found}  # the best match, admitted only
    found = [e.id for e in await store.keyword_candidates(beside, 3)]
    assert found[:2] == [oslo.id, newest.id] and hidden.id not in found  # the rare word's first, then the newest


async def test_a_reconciled_write_stores_the_vector_its_candidate_search_embedded(arcana_home, offline_embedder):
    """The vector leg embeds the new memory once: the write reuses that vector, and it is the text's own."""
    import struct

    from memory.embedding.gateway import EmbeddingGateway
    from memory.runtime.assembly import build_federation

    federation = await build_federation("vec", home=arcana_home, embedding=EmbeddingGateway([offline_embedder]))
    try:
        first = await federation.write(MemoryEntry(agent_id="vec", content="I live in Berlin."))
        second = await federation.write(MemoryEntry(agent_id="vec", content="I moved to Lisbon last month."))
        assert first.decision == "add" and second.decision == "update" and second.supersedes == [first.entry_id]
        vectors = federation.reconciler.vectors
        assert vectors._reusable == {}  # taken by the write, not left behind
        table = (await vectors.meta()).vec_table
        blob = await vectors.store.run(
            lambda raw: raw.execute(
                f"SELECT v.embedding FROM {table} v JOIN memories m ON m.seq = v.rowid WHERE m.id = ?", (second.entry_id,)
            ).fetchone()[0]
        )
        stored = struct.unpack(f"{len(blob) // 4}f", blob)
        fresh = (await offline_embedder.embed(["I moved to Lisbon last month."]))[0]
        norm = sum(x * x for x in fresh) ** 0.5
        assert sum(a * b / norm for a, b in zip(stored, fresh, strict=True)) > 0.9999
    finally:
        await federation.aclose()


def _global_copy(cli, memory_id):
    shown = cli("memory", "show", memory_id, "--global", "--json")
    return json.loads(shown.stdout) if shown.exit_code == 0 else None


def test_a_restatement_reinforces_the_global_copy_and_promotes_what_becomes_promotable(cli, keyword_home):
    """A noop goes through the operator edits' path: the copy is reinforced with its row, a memory the
    reinforce lifts over the threshold is promoted, one that stays below is not (the control)."""
    assert cli("agent", "create", "bob").exit_code == 0
    promoted = remember(cli, "The boiler code is 4471 (GLREIN).", "--importance", "0.92")
    rising = remember(cli, "The shed key is under the blue pot (GLREIN).", "--importance", "0.87")
    low = remember(cli, "The spare bulbs are in the attic (GLREIN).", "--importance", "0.5")
    assert promoted["accepted"] == ["private", "global"] and rising["accepted"] == low["accepted"] == ["private"]
    for first in (promoted, rising, low):
        again = remember(cli, cli_text := data(cli("memory", "show", first["id"], "--agent", "ada", "--json"))["content"])
        assert again["decision"] == "noop" and again["id"] == first["id"], cli_text
    assert _global_copy(cli, promoted["id"])["importance"] == pytest.approx(0.97)  # the copy followed its row
    assert [h["op"] for h in data(cli("memory", "history", promoted["id"], "--global", "--json"))] == ["insert", "reinforce"]
    assert _global_copy(cli, rising["id"])["importance"] == pytest.approx(0.92)  # promoted by the reinforce
    assert _global_copy(cli, low["id"]) is None  # 0.55: still below the threshold, still private
    seen = {r["content"] for r in data(cli("recall", "GLREIN", "--agent", "bob", "--mode", "keyword", "--json"))["results"]}
    assert seen == {"The boiler code is 4471 (GLREIN).", "The shed key is under the blue pot (GLREIN)."}


def test_a_restatement_with_the_global_tier_locked_still_reinforces_and_says_so(cli, keyword_home, arcana_home):
    arcana_home.connections_path.parent.mkdir(parents=True, exist_ok=True)
    arcana_home.connections_path.write_text(json.dumps({"global": {"write_timeout_ms": 1500}}))
    first = remember(cli, "The boat is moored at pier 9 (GLLOCK).", "--importance", "0.92")
    with locked_by_another_process(arcana_home.global_db):
        result = cli("remember", "The boat is moored at pier 9 (GLLOCK).", "--agent", "ada", "--json")
    again = data(result)  # the private reinforce landed: exit 0, the id reinforced
    assert again["decision"] == "noop" and again["id"] == first["id"] and again["accepted"] == ["private"]
    assert len(again["warnings"]) == 1 and "global copy" in again["warnings"][0] and "reinforced" in again["warnings"][0]
    assert "global copy" in result.stderr and "Traceback" not in result.output
    mine = data(cli("memory", "show", first["id"], "--agent", "ada", "--json"))
    assert mine["importance"] == pytest.approx(0.97)
    assert _global_copy(cli, first["id"])["importance"] == pytest.approx(0.92)  # honestly stale, as the warning said
    events = [json.loads(line) for line in arcana_home.audit_log.read_text().splitlines()]
    assert any(e.get("event") == "reconcile_live_copy" and e.get("memory_id") for e in events)


async def test_a_reconciled_import_embeds_its_batch_for_the_candidate_search_in_one_call(arcana_home, embed_server, offline_embedder):
    """remember --from's path decides with vectors (an update found by meaning) without one embed call per line."""
    import asyncio

    from memory.embedding.gateway import EmbeddingGateway
    from memory.embedding.ollama import OllamaEmbedder
    from memory.operations.bulk_import import parse, remember_many
    from memory.runtime.assembly import build_federation

    server = embed_server({"all-minilm": lambda texts: asyncio.run(offline_embedder.embed(list(texts)))})
    gateway = EmbeddingGateway([OllamaEmbedder("all-minilm", url=server.url)])
    federation = await build_federation("vec", home=arcana_home, embedding=gateway, global_tier=False)
    try:
        berlin = await federation.write(MemoryEntry(agent_id="vec", content="I live in Berlin."))
        lines = [json.dumps({"content": f"Note {i}: the {word} is on the shelf."}) for i, word in
                 enumerate(("atlas", "kettle", "lamp", "radio", "violin", "compass", "teapot", "globe", "clock", "vase"))]
        lines.append(json.dumps({"content": "I moved to Lisbon last month."}))
        before = len(server.requests)
        report = await remember_many(federation, parse(lines, "vec"))
        calls = server.requests[before:]
        assert report.decisions == {"add": 10, "noop": 0, "update": 1, "delete": 0}
        assert len(calls) <= 3, [len(c["input"]) for c in calls]  # the primed batch, the write (its context texts)
        assert max(len(c["input"]) for c in calls) == len(lines)
        # stored as said, each line is embedded once: the write takes the vectors primed for the search
        embedded = [text for c in calls if c["input"] != ["health check"] for text in c["input"]]
        assert sorted(embedded) == sorted(json.loads(line)["content"] for line in lines)
        old = await federation.reconciler.store.get(berlin.entry_id, audience=Audience.OPERATOR)
        assert old.superseded_by is not None and old.valid_to is not None
    finally:
        await federation.aclose()


def test_remember_json_says_a_restatement_stored_nothing_new(cli, keyword_home):
    """A noop writes no row: ``stored`` is false beside it (exit 0), true for the add it restates."""
    first = remember(cli, "The ferry leaves at 7 (STOREDNOOP).")
    again = remember(cli, "The ferry leaves at 7 (STOREDNOOP).")
    assert first["decision"] == "add" and first["stored"] is True  # control
    assert again["decision"] == "noop" and again["stored"] is False and again["id"] == first["id"]
    assert len(listed(cli)) == 1
