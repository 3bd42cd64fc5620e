"""Replay the hybrid ranking from a ``bench_locomo.py --dump`` snapshot, without re-embedding.

The snapshot holds, per LoCoMo dev conversation, every turn (text, context,
session, date, freshness at the asked time, vector) and per question both
legs' top-50 pools with their scores. This script rebuilds the keyword index
of those turns in memory (the store's own FTS5 schema and tokenizer), then
scores ranking variants exactly as the real path composes them: fusion
(:mod:`memory.ranking.fusion`), adjacent turns, the rerank under test, and
the federation's relevance x freshness x time-window rank. The default variant
must reproduce the federation ranking the snapshot recorded (printed as
``agreement``), so a variant's figure is what the real path would measure.

Run: python tests/bench/locomo_replay.py SNAPSHOT [--failures] [--before-rerank | --before-speakers | --before-dated] [--expansion]
(``--before-rerank`` for a snapshot written before the word-pair / reply / asking rerank,
``--before-speakers`` for one written before the named speakers' lift, ``--before-dated`` for
one written before the lift of dated lines for a question that asks when;
``--expansion`` cross-validates session-neighbour expansion, :mod:`memory.ranking.neighbours`,
per mode: hybrid as the real path, keyword and semantic as each leg's top 10. A snapshot
records its turns' ``seq``, so turns at one instant keep the store's order here too.)
"""

from __future__ import annotations

import pickle
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memory.config import RecallConfig  # noqa: E402
from memory.federation.federation import RELEVANCE_FLOOR  # noqa: E402
from memory.federation.router import ASKING_WEIGHT, DECAY_SHARE, TIME_BOOST  # noqa: E402
from memory.ranking.fusion import (
    DEFAULT_WEIGHTS,
    asks,
    best,
    fused_scores,
    hand_to_replies,
    lift_by_pairs,
    spread_to_neighbours,
)
from memory.ranking.dated import lift_dated_lines  # noqa: E402
from memory.ranking.neighbours import expand  # noqa: E402
from memory.ranking.speakers import lift_named_speakers  # noqa: E402
from memory.query_terms import terms  # noqa: E402
from memory.sqlite.fts import pair_share  # noqa: E402
from memory.sqlite.rows import COLUMNS  # noqa: E402

LIMIT = 10
NEAR = 30
DEFAULT_EXPANSION = (RecallConfig().neighbour_depth, RecallConfig().neighbour_share, RecallConfig().neighbour_reach)  # the real path's
SHARE = 0.15
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

FTS_SCHEMA = (
    "CREATE VIRTUAL TABLE memories_fts USING fts5(content, tags, context, dated, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)


def render(ts: float) -> str:
    from datetime import datetime, timezone

    from memory.sqlite.context import render_date

    return render_date(datetime.fromtimestamp(ts, timezone.utc))


class Conv:
    """One conversation's turns indexed in memory, with the previous-turn map."""

    def __init__(self, name: str, snap: dict):
        self.name = name
        self.turns = snap["turns"]
        self.questions = snap["questions"]
        self.db = sqlite3.connect(":memory:")
        self.db.execute(FTS_SCHEMA)
        self.db.row_factory = sqlite3.Row
        columns = ", ".join(c for c in COLUMNS if c != "id")
        self.db.execute(f"CREATE TABLE memories (seq INTEGER PRIMARY KEY, id TEXT UNIQUE, {columns})")  # pair_share's read
        self.seq = {}
        for n, (entry_id, t) in enumerate(sorted(self.turns.items(), key=lambda kv: kv[1]["created_at"]), 1):
            self.seq[entry_id] = n
            self.db.execute("INSERT INTO memories (seq, id) VALUES (?, ?)", (n, entry_id))
            self.db.execute(
                "INSERT INTO memories_fts(rowid, content, tags, context, dated) VALUES (?, ?, '', ?, ?)",
                (n, t["content"], t["context"], render(t["created_at"])),
            )
        self.id_of = {s: i for i, s in self.seq.items()}
        by_session = defaultdict(list)
        for entry_id, t in self.turns.items():  # the store's order: date, then insertion (seq)
            by_session[t["session"]].append((t["created_at"], t.get("seq", 0), entry_id))
        self.previous = {}
        for rows in by_session.values():
            rows.sort()
            for (*_, a), (*_, b) in zip(rows, rows[1:]):
                self.previous[b] = a
        self.following = {a: b for b, a in self.previous.items()}


def entries(pool):
    return [SimpleNamespace(id=i, score=s) for i, s in pool]


def federation_rank(conv: Conv, q: dict, scores: dict[str, float], asking: float = ASKING_WEIGHT,
                    expansion: tuple[int, float, int] | None = None) -> list[str]:
    """MemoryFederation.recall over one private tier: relevance x freshness x asking x time window,
    then (``expansion`` = (depth, share, reach)) the session neighbours of the best ``depth``, up to
    ``reach`` turns away, merged in."""
    top = max(scores.values(), default=0.0)
    if top <= 0:
        return best(scores, LIMIT)
    expansion = expansion or DEFAULT_EXPANSION
    ranked = []
    for entry_id, score in scores.items():
        t = conv.turns[entry_id]
        rel = max(RELEVANCE_FLOOR, score / top)
        value = rel * 0.5 * (1.0 - DECAY_SHARE + DECAY_SHARE * t["freshness"])
        if asks(t["content"]):
            value *= asking
        window = q["window"]
        if window is not None and window[0].timestamp() <= t["created_at"] < window[1].timestamp():
            value *= 1.0 + TIME_BOOST
        ranked.append((value, score, t["created_at"], entry_id))
    ranked.sort(key=lambda r: r[:3], reverse=True)  # ties: the store's order, as the router keeps it
    if not expansion[0]:
        return [r[3] for r in ranked[:LIMIT]]
    depth, share, reach = expansion
    hits = [(r[3], r[0]) for r in ranked[:LIMIT]]
    return [i for i, _ in expand(hits, [rings(conv, i, reach) for i, _ in hits[:depth]], share=share,
                                 limit=LIMIT, key=lambda i: i)]


def rings(conv: Conv, entry_id: str, reach: int) -> list[list[str]]:
    """The turns 1, 2, … ``reach`` before and after ``entry_id`` in its session, ring by ring."""
    out, before, after = [], entry_id, entry_id
    for _ in range(reach):
        before, after = before and conv.previous.get(before), after and conv.following.get(after)
        out.append([n for n in (before, after) if n])
    return out


def store_scores(conv: Conv, q: dict, *, pairs: bool = True, replies: bool = True,
                 forward: float = SHARE, speakers: bool = True, dated: bool = True,
                 extra=None) -> dict[str, float]:
    """The store's hybrid path (VectorAdapter.recall): fusion; among the best NEAR, adjacent
    turns together, the word-pair lift, the hand-over to replies, the named speakers' lift
    (``speakers=False`` for a snapshot written before it) and the dated lines' lift
    (``dated=False`` likewise); the top LIMIT kept.

    ``forward`` != SHARE replays the rejected asymmetric variant (a reply gains ``forward``
    of the turn before it, that turn SHARE of its reply). ``extra(scores, content, query_text)``,
    a lift under test, runs last (``tests/bench/locomo_tried.py``).
    """
    sem, kw = entries(q["semantic"]), entries(q["keyword"])
    scores = fused_scores(sem, kw, DEFAULT_WEIGHTS, q["coverage"])
    near = best(scores, NEAR)
    previous = {later: earlier for later, earlier in conv.previous.items() if later in near}
    pool = {i: scores[i] for i in near}
    if forward == SHARE:
        lifted = spread_to_neighbours(pool, previous, SHARE)
    else:
        lifted = dict(pool)
        for later, earlier in previous.items():
            if earlier in pool:
                lifted[later] = max(lifted[later], pool[later] + forward * pool[earlier])
                lifted[earlier] = max(lifted[earlier], pool[earlier] + SHARE * pool[later])
    if pairs:
        lifted = lift_by_pairs(lifted, pair_share(conv.db, terms(q["text"]), near, "1", ()))
    if replies:
        lifted = hand_to_replies(lifted, previous, {i for i in near if asks(conv.turns[i]["content"])})
    if speakers:
        lifted = lift_named_speakers(lifted, {i: conv.turns[i]["content"] for i in lifted}, q["text"])
    if dated:
        lifted = lift_dated_lines(lifted, {i: conv.turns[i]["content"] for i in lifted}, q["text"])
    if extra:
        lifted = extra(lifted, {i: conv.turns[i]["content"] for i in lifted}, q["text"])
    return {i: lifted[i] for i in best(lifted, LIMIT)}


def default_scores(conv: Conv, q: dict) -> dict[str, float]:
    return store_scores(conv, q)


def leg_scores(leg: str):
    """One leg's top LIMIT as its mode answers alone (keyword, semantic): an approximation, the
    snapshot records no such ranking to check it against."""
    return lambda conv, q: dict(q[leg][:LIMIT])


def score(ranked: list[str], conv: Conv, evidence) -> tuple[float, float, float]:
    for rank, entry_id in enumerate(ranked[:LIMIT], 1):
        if conv.turns[entry_id]["dia"] in evidence:
            return (1.0 if rank <= 5 else 0.0), 1.0, 1.0 / rank
    return 0.0, 0.0, 0.0


def mean(rows):
    return tuple(sum(c) / len(rows) for c in zip(*rows)) if rows else (0.0, 0.0, 0.0)


def fmt(row) -> str:
    return " ".join(f"{v:.3f}" for v in row)


def evaluate(convs: list[Conv], variant, *, raw: bool = False) -> dict[str, dict[str, tuple]]:
    """Per conversation (and 'all'), per category (and 'all'): (any@5, any@10, MRR@10).

    ``variant`` is (store scores of one question, the federation's asking weight[, expansion]).
    """
    store_scores, asking, *expansion = variant
    rows = defaultdict(lambda: defaultdict(list))
    for conv in convs:
        for q in conv.questions:
            ranked = federation_rank(conv, q, store_scores(conv, q), asking, *expansion)
            s = score(ranked, conv, q["evidence"])
            for c in (conv.name, "all"):
                rows[c]["all"].append(s)
                rows[c][CATEGORIES[q["category"]]].append(s)
    if raw:  # the per-question rows, to pool across folds
        return rows
    return {c: {k: mean(v) for k, v in cats.items()} for c, cats in rows.items()}


def agreement(convs: list[Conv], recorded: float = ASKING_WEIGHT, rerank: bool = True, speakers: bool = True,
              dated: bool = True) -> float:
    """The share of questions whose recorded federation top 10 the replay reproduces exactly
    (``recorded``: the asking weight of the code that wrote the snapshot)."""
    same = total = 0
    for conv in convs:
        for q in conv.questions:
            total += 1
            ranked = store_scores(conv, q, pairs=rerank, replies=rerank, speakers=speakers, dated=dated)
            mine = [conv.turns[i]["dia"] for i in federation_rank(conv, q, ranked, recorded)]
            same += mine == q["federation"]
    return same / total


def failures(convs: list[Conv]) -> None:
    """For questions whose evidence is fetched but not ranked first: what outranks it."""
    kinds = defaultdict(lambda: defaultdict(int))
    for conv in convs:
        for q in conv.questions:
            ranked = federation_rank(conv, q, default_scores(conv, q))
            pool = {i for i, _ in q["semantic"]} | {i for i, _ in q["keyword"]}
            ev = [i for i in pool if conv.turns[i]["dia"] in q["evidence"]]
            cat = CATEGORIES[q["category"]]
            if not ev:
                kinds[cat]["not in pool"] += 1
                continue
            dias = [conv.turns[i]["dia"] for i in ranked]
            hit = next((r for r, d in enumerate(dias) if d in q["evidence"]), None)
            if hit == 0:
                kinds[cat]["first"] += 1
                continue
            kinds[cat]["in pool, rank >10" if hit is None else "rank 2-10"] += 1
            first = ranked[0]
            top, target = conv.turns[first], conv.turns[ev[0]]
            same_session = top["session"] == target["session"]
            adjacent = conv.previous.get(first) in ev or any(conv.previous.get(e) == first for e in ev)
            same_speaker = top["content"].split(":")[0] == target["content"].split(":")[0]
            kinds[cat]["  top is adjacent to evidence"] += adjacent
            kinds[cat]["  top same session"] += same_session
            kinds[cat]["  top same speaker"] += same_speaker
            if "--failures" in sys.argv and q["category"] in (1, 4) and hit is not None and hit > 0:
                print(f"\n[{cat}] {q['text']}  (evidence rank {hit + 1})")
                print(f"   top: {top['content'][:140]}")
                print(f"   evd: {target['content'][:140]}")
    for cat, counts in kinds.items():
        print(f"  {cat:<12} " + ", ".join(f"{k.strip()}={v}" for k, v in counts.items()))


# name -> (store scores, the federation's asking weight); "default" is the real path.
GRID = {
    "default": (default_scores, ASKING_WEIGHT),
    "before issue-11 round 3": (lambda c, q: store_scores(c, q, pairs=False, replies=False), 1.0),
    **{f"asking={a} only": (lambda c, q: store_scores(c, q, pairs=False, replies=False), a) for a in (0.9, 0.8, 0.7)},
    "asking + pairs": (lambda c, q: store_scores(c, q, replies=False), ASKING_WEIGHT),
    "asking + replies": (lambda c, q: store_scores(c, q, pairs=False), ASKING_WEIGHT),
    "pairs + replies, asking=1": (default_scores, 1.0),
    **{f"default, asking={a}": (default_scores, a) for a in (0.9, 0.8, 0.7, 0.6)},
    **{f"forward={f}, no rerank": (lambda c, q, f=f: store_scores(c, q, pairs=False, replies=False, forward=f), 1.0)
       for f in (0.3, 0.5, 1.0)},
}


# session-neighbour expansion (memory.ranking.neighbours): (depth, share, reach), per mode
def expansion_grid(scores) -> dict:
    return {"no expansion": (scores, ASKING_WEIGHT, (0, 1.0, 1))} | {
        f"expand depth={d} share={s} reach={r}": (scores, ASKING_WEIGHT, (d, s, r))
        for d in (1, 2, 3, 5) for s in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99) for r in (1, 2, 3)
    }


MODES = {"hybrid": default_scores, "keyword": leg_scores("keyword"), "semantic": leg_scores("semantic")}


def per_category(convs: list[Conv], variant) -> str:
    table = evaluate(convs, variant)["all"]
    return "  ".join(f"{c}: {fmt(table.get(c, (0, 0, 0)))}" for c in ("all", *CATEGORIES.values()))


def cross_validate(convs: list[Conv], grid: dict) -> None:
    """Fit on two conversations (any@10 + MRR@10), score the third."""
    results = {name: evaluate(convs, v) for name, v in grid.items()}
    held = []
    for test in convs:
        train = [c for c in convs if c is not test]
        def fit(name):
            rows = [results[name][c.name]["all"] for c in train]
            n = [len(c.questions) for c in train]
            return sum((r[1] + r[2]) * k for r, k in zip(rows, n))
        chosen = max(grid, key=fit)
        held.append(evaluate([test], grid[chosen], raw=True)[test.name])
        print(f"  held out {test.name}: chose {chosen:<24} -> {fmt(results[chosen][test.name]['all'])}")
    pooled = {c: mean([r for fold in held for r in fold.get(c, [])]) for c in ("all", *CATEGORIES.values())}
    print("  held-out pooled: " + "  ".join(f"{c}: {fmt(v)}" for c, v in pooled.items()))
    for name, table in sorted(results.items(), key=lambda kv: -(kv[1]['all']['all'][2])):
        print(f"  {name:<28} {fmt(table['all']['all'])}")


def main() -> None:
    snap = pickle.loads(Path(sys.argv[1]).read_bytes())
    convs = [Conv(name, s) for name, s in snap.items()]
    before = "--before-rerank" in sys.argv  # a snapshot written before this round's rerank
    recorded = 1.0 if before else ASKING_WEIGHT
    speakers = not before and "--before-speakers" not in sys.argv  # a snapshot written before the speaker lift
    dated = speakers and "--before-dated" not in sys.argv  # … or before the dated lines' lift
    agree = agreement(convs, recorded, not before, speakers, dated)
    print(f"replay agreement with the recorded federation ranking: {agree:.3f}")
    failures(convs)
    table = evaluate(convs, GRID["default"])
    per = "  ".join(f"{c.name}: {fmt(table[c.name]['all'])}" for c in convs)
    print(f"default: all {fmt(table['all']['all'])}   {per}")
    if "--expansion" in sys.argv:
        for mode, scores in MODES.items():
            print(f"\n== {mode}: session-neighbour expansion, cross-validated (fit on two, score the third) ==")
            grid = expansion_grid(scores)
            print(f"  before: {per_category(convs, grid['no expansion'])}")
            cross_validate(convs, grid)
        return
    cross_validate(convs, GRID)


if __name__ == "__main__":
    main()
