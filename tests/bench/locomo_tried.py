"""Re-rank lifts tried on LoCoMo and not kept, replayed from a ``bench_locomo.py --dump`` snapshot.

Each grid runs on top of the real hybrid path (``locomo_replay.store_scores``, its ``extra``
hook) and is cross-validated as the shipped lifts were: fitted on two conversations, scored on
the third, "none" first so a tie keeps the default. The figures and why each was dropped are in
man/benchmarks.md ("Tried on 2026-12-07"); this script is kept so the same grids can be run on
conversations this repository does not hold.

- ``inference``: a question that asks for an inference ("Would Caroline …", "… likely …") and
  names a speaker lifts that speaker's lines said in the first person, or holding a preference
  cue (:data:`memory.extraction.signals.ENGLISH`);
- ``self``: any question naming a speaker lifts that speaker's first-person lines (three sets of
  pronouns);
- ``split``: the named speakers' lift itself split, ``first`` for their first-person lines and
  ``other`` for the rest, in place of SPEAKER_LIFT for both;
- ``entities``: a candidate naming the question's proper nouns other than its speakers ("Vivaldi",
  "LGBTQ", "US") is lifted by the share of them it names.

Tried on 2026-12-07 (2), man/benchmarks.md ("Tried on 2026-12-07 (2)"):

- ``session``: which session a candidate is from; each is lifted by its session's share of the
  candidates' score mass (``sum``) or of their number (``count``), relative to the best session's;
- ``diversity``: the opposite, each further candidate of one session down by a factor (1 - d) per
  better one of its session, for every question or only one that asks for a list over time
  ("has / have", "what activities …");
- ``feedback``: pseudo-relevance feedback on the semantic leg (Rocchio): the query's vector plus
  ``b`` times the mean vector of the best ``k`` re-ranked candidates searches the store again, and
  that leg is fused in place of the first; ``feedback-not-when`` the same for a question that does
  not ask when (one that does keeps the dated lines' lift, :mod:`memory.ranking.dated`, alone);
- ``context``: what surrounds a turn, in the semantic leg: each turn's vector plus ``a`` times its
  session neighbours' (the turn before, or before and after), searched in place of the turn's
  own (``max``: the better of the two similarities). A store would keep a second vector per turn,
  so this one is replayed only.

Run: python tests/bench/locomo_tried.py SNAPSHOT [inference | self | split | entities | session | diversity | feedback | feedback-not-when | context]
"""

from __future__ import annotations

import pickle
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo_replay as replay  # noqa: E402
from memory.extraction.signals import ENGLISH  # noqa: E402
from memory.federation.router import ASKING_WEIGHT  # noqa: E402
from memory.ranking.dated import asks_when  # noqa: E402
from memory.ranking.speakers import SPEAKER_LIFT, speaker_of  # noqa: E402

INFERENCE = re.compile(r"\b(?:would|likely|might|could|probably)\b", re.IGNORECASE)
PRONOUNS = {
    "I": r"\b(?:i|i'm|i've|i'd|i'll)\b",
    "I+my": r"\b(?:i|i'm|i've|i'd|i'll|my|me|myself)\b",
    "I+my+we": r"\b(?:i|i'm|i've|i'd|i'll|my|me|myself|we|we're|we've|our|us)\b",
}
QUESTION_WORDS = frozenset(
    "What When Where Who Why How Which Would Does Did Is Was Are Were Do Has Have Can Could Might "
    "In On The A An I".split()
)


def named_speakers(content: dict[str, str], query_text: str) -> set[str]:
    """The candidates' speakers the query names as a whole word (as the shipped speaker lift reads them)."""
    speakers = {speaker_of(text)[0] for text in content.values()} - {None}
    return {s for s in speakers if re.search(rf"(?<!\w){re.escape(s)}(?!\w)", query_text)}


def self_statements(lift: float, says, gate: re.Pattern | None = None):
    """Lift the named speakers' lines whose said text ``says`` holds (only for a query ``gate`` matches)."""
    def extra(scores, content, query_text):
        named = named_speakers(content, query_text) if not gate or gate.search(query_text) else set()
        if not named:
            return scores
        lifted = {i for i in scores if speaker_of(content[i])[0] in named and says(speaker_of(content[i])[1])}
        return {i: v * (1.0 + lift) if i in lifted else v for i, v in scores.items()}
    return extra


def split_speaker_lift(first: float, other: float, says):
    """The named speakers' lines at 1 + ``first`` when ``says`` holds, 1 + ``other`` when not,
    instead of the shipped 1 + SPEAKER_LIFT for both."""
    def extra(scores, content, query_text):
        named = named_speakers(content, query_text)
        def factor(i):
            speaker, said = speaker_of(content[i])
            if speaker not in named:
                return 1.0
            return (1.0 + (first if says(said) else other)) / (1.0 + SPEAKER_LIFT)
        return {i: v * factor(i) for i, v in scores.items()}
    return extra


def entities(lift: float):
    """Lift each candidate by the share of the query's proper nouns (its speakers aside) it names."""
    def extra(scores, content, query_text):
        nouns = set(re.findall(r"\b[A-Z][\w-]*", query_text)) - QUESTION_WORDS
        nouns -= {speaker_of(text)[0] for text in content.values()}
        if not nouns:
            return scores
        found = [re.compile(rf"(?<!\w){re.escape(n)}(?!\w)") for n in nouns]
        def share(i):
            said = speaker_of(content[i])[1]
            return sum(bool(p.search(said)) for p in found) / len(found)
        return {i: v * (1.0 + lift * share(i)) for i, v in scores.items()}
    return extra


LISTS = {
    "all": re.compile(""),
    "has/have": re.compile(r"\b(?:has|have)\b", re.IGNORECASE),
    "list": re.compile(
        r"^\W*(?:what|which)\s+(?:\w+\s+)?(?:activities|things|kinds|types|events|places|books|ways|hobbies)\b",
        re.IGNORECASE,
    ),
}


def session_mass(lift: float, count: bool):
    """Lift each candidate by its session's share of the candidates' score (or number), the best session's 1."""
    def make(conv):
        def extra(scores, content, query_text):
            mass = defaultdict(float)
            for i, v in scores.items():
                mass[conv.turns[i]["session"]] += 1.0 if count else v
            top = max(mass.values(), default=0.0) or 1.0
            return {i: v * (1.0 + lift * mass[conv.turns[i]["session"]] / top) for i, v in scores.items()}
        return extra
    return make


def session_diversity(d: float, gate: re.Pattern):
    """Each candidate down by (1 - d) per better candidate of its own session, for a query ``gate`` matches."""
    def make(conv):
        def extra(scores, content, query_text):
            if not gate.search(query_text):
                return scores
            seen, out = defaultdict(int), {}
            for i in sorted(scores, key=lambda i: -scores[i]):
                session = conv.turns[i]["session"]
                out[i], seen[session] = scores[i] * (1.0 - d) ** seen[session], seen[session] + 1
            return out
        return extra
    return make


VECTORS: dict[str, tuple] = {}


def vectors(conv) -> tuple[list[str], np.ndarray, dict[str, int]]:
    """The conversation's turn ids, their unit vectors (one row each) and each id's row."""
    if conv.name not in VECTORS:
        ids = list(conv.turns)
        m = np.stack([np.frombuffer(conv.turns[i]["vector"], dtype=np.float32) for i in ids])
        VECTORS[conv.name] = ids, m / np.linalg.norm(m, axis=1, keepdims=True), {i: n for n, i in enumerate(ids)}
    return VECTORS[conv.name]


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def search_again(conv, q, m: np.ndarray, query: np.ndarray, keep_own: bool = False) -> dict[str, float]:
    """The real path's hybrid scores with the semantic leg searched over ``m`` with ``query``
    (``keep_own``: each turn keeps its first similarity when that is higher)."""
    ids = vectors(conv)[0]
    sims = m @ unit(query)
    leg = {ids[n]: float(sims[n]) for n in np.argsort(-sims)[:len(q["semantic"])]}
    if keep_own:
        for i, v in q["semantic"]:
            leg[i] = max(leg.get(i, 0.0), v)
    again = sorted(leg.items(), key=lambda r: -r[1])[:len(q["semantic"])]
    return replay.store_scores(conv, q | {"semantic": again})


def feedback(k: int, b: float, skip_when: bool = False):
    """The semantic leg searched again with the query's vector + ``b`` x the mean of the best ``k``'s
    (``skip_when``: not for a question that asks when)."""
    def scores(conv, q):
        if skip_when and asks_when(q["text"]):
            return replay.default_scores(conv, q)
        _, m, row = vectors(conv)
        first = replay.best(replay.default_scores(conv, q), k)
        query = unit(np.asarray(q["vector"], dtype=np.float32)) + b * m[[row[i] for i in first]].mean(axis=0)
        return search_again(conv, q, m, query)
    return (scores, ASKING_WEIGHT)


def context(a: float, both: bool, keep_own: bool):
    """The semantic leg over each turn's vector + ``a`` x its neighbours' (before; ``both``: and after)."""
    smoothed = {}

    def scores(conv, q):
        if conv.name not in smoothed:
            ids, m, row = vectors(conv)
            s = m.copy()
            for i in ids:
                for n in (conv.previous.get(i), conv.following.get(i) if both else None):
                    if n:
                        s[row[i]] += a * m[row[n]]
            smoothed[conv.name] = unit(s)
        return search_again(conv, q, smoothed[conv.name], np.asarray(q["vector"], dtype=np.float32), keep_own)
    return (scores, ASKING_WEIGHT)


def variant(extra):
    return (lambda conv, q: replay.store_scores(conv, q, extra=extra), ASKING_WEIGHT)


def per_conversation(make):
    """A variant whose lift reads the conversation's turns (their sessions)."""
    return (lambda conv, q: replay.store_scores(conv, q, extra=make(conv)), ASKING_WEIGHT)


def grid(name: str) -> dict:
    first_person = re.compile(PRONOUNS["I+my"], re.IGNORECASE)
    grids = {
        "inference": {
            f"{cue} {lift}": variant(self_statements(lift, says, INFERENCE))
            for cue, says in (("first person", first_person.search), ("preference", ENGLISH.states_preference))
            for lift in (0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
        },
        "self": {
            f"{pronouns} {lift}": variant(self_statements(lift, re.compile(pattern, re.IGNORECASE).search))
            for pronouns, pattern in PRONOUNS.items()
            for lift in (0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
        },
        "split": {
            f"first {first} other {other}": variant(split_speaker_lift(first, other, first_person.search))
            for first in (0.75, 1.0, 1.25, 1.5)
            for other in (0.25, 0.5, 0.75)
            if (first, other) != (SPEAKER_LIFT, SPEAKER_LIFT)
        },
        "entities": {f"entities {lift}": variant(entities(lift)) for lift in (0.1, 0.2, 0.3, 0.5, 0.75, 1.0)},
        "session": {
            f"{'count' if count else 'sum'} {lift}": per_conversation(session_mass(lift, count))
            for count in (False, True)
            for lift in (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
        },
        "diversity": {
            f"{gate} {d}": per_conversation(session_diversity(d, LISTS[gate]))
            for gate in LISTS
            for d in (0.05, 0.1, 0.2, 0.3)
        },
        "feedback": {f"k={k} b={b}": feedback(k, b) for k in (1, 2, 3) for b in (0.1, 0.2, 0.25, 0.3, 0.5)},
        "feedback-not-when": {
            f"k={k} b={b}": feedback(k, b, skip_when=True) for k in (1, 2, 3) for b in (0.1, 0.2, 0.25, 0.3, 0.5)
        },
        "context": {
            f"a={a} {'both' if both else 'before'}{' max' if own else ''}": context(a, both, own)
            for a in (0.1, 0.2, 0.3, 0.5)
            for both in (False, True)
            for own in (False, True)
        },
    }
    return {"none": replay.GRID["default"]} | grids[name]


def main() -> None:
    snap = pickle.loads(Path(sys.argv[1]).read_bytes())
    convs = [replay.Conv(name, s) for name, s in snap.items()]
    for name in sys.argv[2:] or ("inference", "self", "split", "entities", "session", "diversity", "feedback",
                                    "feedback-not-when", "context"):
        print(f"\n== {name}: in-sample, per category (any@5 any@10 MRR@10) ==")
        variants = grid(name)
        for label, v in variants.items():
            print(f"  {label:<20} {replay.per_category(convs, v)}")
        print(f"== {name}: cross-validated (fit on two conversations, score the third) ==")
        replay.cross_validate(convs, variants)


if __name__ == "__main__":
    main()
