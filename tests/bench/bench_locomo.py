"""Recall quality on real conversations: the LoCoMo development split, through the real path.

Each conversation becomes one agent's private store, written through
``build_federation`` (the agent's default config, the offline MiniLM model,
decay on) one turn per :class:`MemoryEntry`: ``"<speaker>: <text>"`` plus the
caption of a shared photo, ``source_session_id`` its session and
``created_at`` the session's real date (turn ``i`` at ``+i`` seconds, so a
session keeps its order). Questions of categories 1-4 are asked with
``limit=10`` the day after the last session through an injected clock, with
decay profiles that do not refresh on access (passed through the public
``decay_profiles=``), so no question changes a later answer. Printed:

1. any@5 / any@10 / MRR@10 per mode (keyword, semantic, hybrid = the default)
   and per category, per conversation and pooled; the same with the store
   alone (``VectorAdapter.search``, no federation ranking); and with
   session-neighbour expansion the other way (on at depth 2 when the default is off);
2. the wall-clock variant: dates shifted so the last session was yesterday,
   the real clock;
3. candidate coverage: how often an evidence turn is in the top 50 of either leg;
4. cross-validated fusion choice: each fusion and weight fitted on two
   conversations and scored on the third (over the same top-50 leg pools);
5. cost: hybrid and semantic recall p50 / p95 on the same store, and ingest
   rate against raw fastembed on the same texts in the same run.

Data: ``ARCANA_LOCOMO_DIR``, else ``shared/data/locomo-dev`` beside the repo
(``../shared`` of the repository root, also from a worktree). Research data:
read here, never shipped.

``--via-from`` ingests each conversation through ``remember --from``'s
reconciled path instead of the store's batch write (decisions printed; a turn
decided noop is answered by the turn it reinforced): what reconciliation does
to recall on conversational turns.

``--via-write`` writes each turn one at a time through the federation's ``write``
(reconciliation on, the global tier on) with every turn of a session at the
session's date, the same instant: the path a user's writes take, and a history
imported with one date per session (decisions printed; a noop is answered as
with ``--via-from``).

Run: python tests/bench/bench_locomo.py [--store-only | --quick] [--via-from | --via-write] [--dump PATH] [--ranks PATH]

``--dump PATH`` also pickles what a rerank experiment needs without
re-embedding: per conversation every turn's text, context, session, date,
freshness at the asked time and vector, and per question both legs' top-50
pools with their scores, the keyword coverage, the time window and the
federation's ranking (read back by ``tests/bench/locomo_replay.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memory.config import ArcanaConfig, RecallConfig  # noqa: E402
from memory.embedding.factory import vector_options  # noqa: E402
from memory.embedding.gateway import EmbeddingGateway  # noqa: E402
from memory.ranking.decay import DEFAULT_PROFILES  # noqa: E402
from memory.query_terms import terms  # noqa: E402
from memory.ranking.fusion import Weights, fuse, fuse_rrf  # noqa: E402
from memory.runtime.assembly import build_federation  # noqa: E402
from memory.sqlite.context import EMBEDDED_TEXT_SQL  # noqa: E402
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode  # noqa: E402

LIMIT = 10
POOL = 50
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
VIA_FROM = "--via-from" in sys.argv
VIA_WRITE = "--via-write" in sys.argv  # one write per turn, a session's turns at one instant
RANKED: list[list] = []  # every answer's ranked turns, for --ranks FILE (to compare two versions of the code)
DECISIONS: Counter = Counter()  # --via-from / --via-write: reconciliation's decisions over every conversation
MODES = (RetrievalMode.keyword, RetrievalMode.semantic, RetrievalMode.hybrid)


def data_dir() -> Path:
    """``ARCANA_LOCOMO_DIR``, else ``shared/data/locomo-dev`` beside the repository (worktrees too)."""
    override = os.environ.get("ARCANA_LOCOMO_DIR")
    if override:
        return Path(override)
    candidates = [ROOT.parent / "shared" / "data" / "locomo-dev"]
    try:  # a worktree's repository root is the main checkout's, found through git
        common = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        candidates.append(Path(common).parent.parent / "shared" / "data" / "locomo-dev")
    except (OSError, subprocess.CalledProcessError):
        pass
    for path in candidates:
        if path.is_dir():
            return path
    raise SystemExit(f"no LoCoMo data at {candidates[0]}; set ARCANA_LOCOMO_DIR")


_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm) on (\d{1,2}) (\w+),? (\d{4})", re.I)


def session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware UTC datetime."""
    m = _DATE.search(text)
    if not m:
        raise ValueError(f"unparsed session date: {text!r}")
    hour, minute, half, day, month, year = m.groups()
    hour = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    stamp = datetime.strptime(f"{day} {month} {year}", "%d %B %Y")
    return stamp.replace(hour=hour, minute=int(minute), tzinfo=timezone.utc)


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int


@dataclass
class Conversation:
    name: str
    turns: list[tuple[str, MemoryEntry]]  # (dia_id, entry)
    questions: list[Question]
    last: datetime


def load(path: Path, shift: timedelta = timedelta(0), *, same_instant: bool = False) -> Conversation:
    """One conversation's turns and questions; turn ``i`` of a session at ``+i`` seconds, or
    every turn at the session's date with ``same_instant``."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    agent = f"locomo-{path.stem}"
    turns = []
    last = None
    n = 1
    while f"session_{n}" in raw:
        when = session_date(raw[f"session_{n}_date_time"]) + shift
        last = when
        for i, turn in enumerate(raw[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            entry = MemoryEntry(  # an id from the turn: ties rank alike run after run
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{agent}/{turn['dia_id']}")),
                agent_id=agent, content=text, source_session_id=f"{agent}-s{n}",
                created_at=when + timedelta(seconds=0 if same_instant else i),
                updated_at=when + timedelta(seconds=0 if same_instant else i),
            )
            turns.append((turn["dia_id"], entry))
        n += 1
    questions = [
        Question(q["question"], frozenset(q["evidence"]), int(q["category"]))
        for q in raw["qa"]
        if int(q["category"]) in CATEGORIES and q.get("evidence")
    ]
    return Conversation(path.stem, turns, questions, last)


def shift_dates(text: str, shift: timedelta) -> str:
    """``text`` with every calendar date it names moved by ``shift`` ("7 May 2023", "May 7, 2023",
    "May 2023", "in 2023"), as :mod:`memory.ranking.timeframe` reads them: the wall-clock pass
    moves a question's own dates with the conversation it asks about."""
    import calendar

    from memory.ranking import timeframe as tf

    def moved(year: int, month: int, day: int) -> datetime:
        return datetime(year, month, day, tzinfo=timezone.utc) + shift

    def day_month_year(m: re.Match) -> str:
        when = moved(int(m[3]), tf.MONTHS[m[2].lower()], int(m[1]))
        return f"{when.day} {calendar.month_name[when.month]} {when.year}"

    def month_day_year(m: re.Match) -> str:
        when = moved(int(m[3]), tf.MONTHS[m[1].lower()], int(m[2]))
        return f"{calendar.month_name[when.month]} {when.day}, {when.year}"

    def month_year(m: re.Match) -> str:
        when = moved(int(m[2]), tf.MONTHS[m[1].lower()], 15)
        return f"{calendar.month_name[when.month]} {when.year}"

    def year(m: re.Match) -> str:
        return m[0].replace(m[1], str(moved(int(m[1]), 7, 1).year))

    # one pass per form, each consuming what it rewrote (a placeholder keeps later forms off it)
    done: list[str] = []

    def keep(rewrite):
        def sub(m: re.Match) -> str:
            done.append(rewrite(m))
            return f"\x00{len(done) - 1}\x00"
        return sub

    for pattern, rewrite in ((tf._DAY_MONTH_YEAR, day_month_year), (tf._MONTH_DAY_YEAR, month_day_year),
                             (tf._MONTH_YEAR, month_year), (tf._YEAR, year)):
        text = re.sub(pattern.pattern, keep(rewrite), text, flags=re.IGNORECASE)  # timeframe reads lowercased text
    return re.sub("\x00(\\d+)\x00", lambda m: done[int(m[1])], text)


def no_refresh_profiles():
    return {t: p.model_copy(update={"refresh_on_access": False}) for t, p in DEFAULT_PROFILES.items()}


def score(ranked: list[str], evidence: frozenset[str]) -> tuple[float, float, float]:
    """(any@5, any@10, MRR@10) for one question."""
    for rank, dia in enumerate(ranked[:LIMIT], 1):
        if dia in evidence:
            return (1.0 if rank <= 5 else 0.0), 1.0, 1.0 / rank
    return 0.0, 0.0, 0.0


def mean(rows: list[tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(sum(col) / len(rows) for col in zip(*rows)) if rows else (0.0, 0.0, 0.0)


class Store:
    """One conversation written through build_federation, asked through it or its store."""

    def __init__(self, conv: Conversation, home: Path, embedder, clock):
        self.conv, self.home, self.embedder, self.clock = conv, home, embedder, clock
        self.dia_of: dict[str, str] = {}

    async def __aenter__(self):
        agent = self.conv.turns[0][1].agent_id
        self.fed = await build_federation(
            agent, home=self.home, embedding=EmbeddingGateway([self.embedder]),
            decay_profiles=no_refresh_profiles(), vector_options=vector_options(ArcanaConfig().embedding),
            global_tier=VIA_WRITE, clock=self.clock, on_degraded=lambda event: None,
        )
        self.vectors = self.fed.router.private.backend
        entries = [e for _, e in self.conv.turns]
        started = time.perf_counter()
        if VIA_FROM:
            await self._remember_from(entries)
        elif VIA_WRITE:
            await self._write_each(entries)
        else:
            await self.vectors.write_many(entries)
        self.ingest_seconds = time.perf_counter() - started
        self.dia_of = {e.id: dia for dia, e in self.conv.turns}
        if VIA_FROM or VIA_WRITE:
            self._answer_restated_turns_through_what_they_reinforced()
        # what the model really embedded (content + previous turn): the raw baseline's texts
        self.embedded = await self.vectors.store.run(
            lambda raw: [r[0] for r in raw.execute(f"SELECT {EMBEDDED_TEXT_SQL} FROM memories")]
        )
        self.agent = agent
        return self

    async def __aexit__(self, *exc):
        await self.fed.aclose()

    async def _remember_from(self, entries: list[MemoryEntry]) -> None:
        """``--via-from``: the turns through ``remember --from``'s reconciled path (memory.operations.bulk_import.remember_many)."""
        from memory.operations.bulk_import import Parsed, remember_many

        report = await remember_many(self.fed, Parsed(entries, [], {e.id for e in entries}, len(entries)))
        DECISIONS.update(report.decisions)
        await self._read_restated()

    async def _write_each(self, entries: list[MemoryEntry]) -> None:
        """``--via-write``: each turn through the federation's ``write``, one at a time, in order."""
        for entry in entries:
            DECISIONS[(await self.fed.write(entry)).decision or "add"] += 1
        await self._read_restated()

    async def _read_restated(self) -> None:
        self.restated = await self.vectors.store.run(
            lambda raw: raw.execute("SELECT src_id, dst_id FROM memory_edges WHERE relation = 'restates'").fetchall()
        )

    def _answer_restated_turns_through_what_they_reinforced(self) -> None:
        """A turn decided noop has no row of its own: a question citing it is answered by the turn it reinforced."""
        to = {self.dia_of[src]: self.dia_of[dst] for src, dst in self.restated}
        questions = [replace(q, evidence=frozenset(to.get(d, d) for d in q.evidence)) for q in self.conv.questions]
        self.conv = replace(self.conv, questions=questions)

    def query(self, text: str, mode: RetrievalMode, limit: int = LIMIT) -> MemoryQuery:
        return MemoryQuery(agent_id=self.agent, text=text, retrieval_mode=mode, limit=limit)

    async def ask(self, question: Question, mode: RetrievalMode, *, federation: bool = True) -> list[str]:
        query = self.query(question.text, mode)
        entries = (await self.fed.recall(query)).entries if federation else await self.vectors.search(query)
        return [self.dia_of[e.id] for e in entries]

    async def legs(self, question: Question):
        """Both legs' top ``POOL`` for one question, as the hybrid path fetches them, and the keyword coverage."""
        semantic = await self.vectors.search(self.query(question.text, RetrievalMode.semantic, POOL))
        query = self.query(question.text, RetrievalMode.keyword)
        keyword, coverage = await self.vectors.store.keyword_leg(query, terms(question.text), POOL)
        return semantic, keyword, coverage


async def snapshot(store: Store, asked_at: datetime) -> dict:
    """What a rerank replay needs of one conversation: turns (text, context, vectors) and question pools."""
    from memory.ranking import timeframe
    from memory.ranking.decay import assess

    vectors = store.vectors
    meta = await vectors.meta()

    def read(raw):
        rows = raw.execute("SELECT id, seq, content, context, source_session_id, created_at FROM memories").fetchall()
        vecs = dict(raw.execute(f"SELECT rowid, embedding FROM {meta.vec_table}").fetchall())
        return rows, vecs

    rows, vecs = await vectors.store.run(read)
    profiles = no_refresh_profiles()
    entries = {e.id: e for _, e in store.conv.turns}
    turns = {
        r[0]: {"dia": store.dia_of[r[0]], "seq": r[1], "content": r[2], "context": r[3], "session": r[4], "created_at": r[5],
               "vector": vecs.get(r[1]),
               "freshness": assess(entries[r[0]], profiles[entries[r[0]].type], asked_at)[0]}
        for r in rows
    }
    qvecs = await store.embedder.embed([q.text for q in store.conv.questions])
    questions = []
    for q, qv in zip(store.conv.questions, qvecs, strict=True):
        s, k, c = await store.legs(q)
        questions.append({
            "text": q.text, "evidence": sorted(q.evidence), "category": q.category, "vector": list(qv),
            "semantic": [(e.id, e.score) for e in s], "keyword": [(e.id, e.score) for e in k], "coverage": c,
            "window": timeframe.window(q.text, asked_at),
            "federation": await store.ask(q, RetrievalMode.hybrid),
        })
    return {"turns": turns, "questions": questions}


async def evaluate(store: Store, *, federation: bool) -> dict[str, dict]:
    """Per mode: per category and 'all' -> (any@5, any@10, MRR@10)."""
    out = {}
    for mode in MODES:
        per_cat: dict[str, list] = defaultdict(list)
        for q in store.conv.questions:
            ranked = await store.ask(q, mode, federation=federation)
            RANKED.append([store.conv.name, federation, mode.value, q.text, ranked])
            s = score(ranked, q.evidence)
            per_cat[CATEGORIES[q.category]].append(s)
            per_cat["all"].append(s)
        out[mode.value] = per_cat
    return out


def pooled(results: list[dict[str, dict]]) -> dict[str, dict[str, tuple]]:
    merged: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        for mode, cats in result.items():
            for cat, rows in cats.items():
                merged[mode][cat] += rows
    return {mode: {cat: mean(rows) for cat, rows in cats.items()} for mode, cats in merged.items()}


def print_table(title: str, table: dict[str, dict[str, tuple]]) -> None:
    cats = ["all", *CATEGORIES.values()]
    print(f"\n== {title} (any@5 any@10 MRR@10) ==")
    print(f"{'':<10}" + "".join(f"{c:<20}" for c in cats))
    for mode, row in table.items():
        print(f"{mode:<10}" + "".join(f"{' '.join(f'{v:.3f}' for v in row.get(c, (0, 0, 0))):<20}" for c in cats))


# -- fusion cross-validation over the same top-50 pools ---------------------------

# Each fusion maps (semantic, keyword, coverage) to a ranking. "fuse" is confidence-weighted
# min-max without the keyword coverage (the previous default's family), "cov" with it (the default's).
FUSIONS = {
    **{f"fuse v={v / 10:.1f}": (lambda s, k, c, v=v: fuse(s, k, Weights(v / 10, 1 - v / 10), LIMIT)) for v in range(2, 10)},
    **{f"cov v={v / 10:.1f}": (lambda s, k, c, v=v: fuse(s, k, Weights(v / 10, 1 - v / 10), LIMIT, c)) for v in range(2, 10)},
    **{f"rrf k={k}": (lambda s, kw, c, k=k: fuse_rrf(s, kw, LIMIT, k=k)) for k in (5, 20, 60)},
}


def cross_validate(legs_by_conv: dict[str, list[tuple[Question, list, list, dict]]]) -> None:
    """Fit the fusion on two conversations, score the third; report held-out and in-sample."""
    def run(name, items):
        rows = [score([dia[e.id] for e in FUSIONS[name](s, k, c)], q.evidence) for q, s, k, c, dia in items]
        return mean(rows)

    print("\n== fusion, cross-validated (fit on two conversations, score the third; any@5 any@10 MRR@10) ==")
    held_out = []
    for test in legs_by_conv:
        train = [item for name, items in legs_by_conv.items() if name != test for item in items]
        best = max(FUSIONS, key=lambda f: (run(f, train)[1] + run(f, train)[2]))
        result = run(best, legs_by_conv[test])
        held_out += [score([dia[e.id] for e in FUSIONS[best](s, k, c)], q.evidence) for q, s, k, c, dia in legs_by_conv[test]]
        print(f"  held out {test}: chose {best:<14} -> {' '.join(f'{v:.3f}' for v in result)}")
    print(f"  held-out pooled: {' '.join(f'{v:.3f}' for v in mean(held_out))}")
    everything = [item for items in legs_by_conv.values() for item in items]
    for name in FUSIONS:
        print(f"  in-sample {name:<14} {' '.join(f'{v:.3f}' for v in run(name, everything))}")


def coverage(legs_by_conv) -> None:
    hits = defaultdict(int)
    total = 0
    for items in legs_by_conv.values():
        for q, s, k, _, dia in items:
            total += 1
            in_s = any(dia[e.id] in q.evidence for e in s)
            in_k = any(dia[e.id] in q.evidence for e in k)
            hits["semantic"] += in_s
            hits["keyword"] += in_k
            hits["either"] += in_s or in_k
    print(f"\n== evidence in the top {POOL} (of {total} questions) ==")
    for leg, n in hits.items():
        print(f"  {leg:<9} {n / total:.3f}")


async def latency(store: Store) -> None:
    for mode in (RetrievalMode.semantic, RetrievalMode.hybrid):
        times = []
        for q in store.conv.questions:
            started = time.perf_counter()
            await store.fed.recall(store.query(q.text, mode))
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        print(f"  {mode.value:<9} recall p50 {statistics.median(times):.1f} ms  p95 {times[int(0.95 * len(times))]:.1f} ms")


async def raw_embed_rate(embedder, texts: list[str]) -> float:
    started = time.perf_counter()
    await embedder.embed(sorted(texts, key=len))
    return len(texts) / (time.perf_counter() - started)


async def wall_clock(files: list[Path], embedder, tmp: Path) -> None:
    """Dates shifted so each conversation's last session was yesterday, asked on the real clock:
    once with the questions as written, once with the dates they name shifted too."""
    as_written, shifted = [], []
    for f in files:
        first = load(f, same_instant=VIA_WRITE)
        shift = (datetime.now(timezone.utc) - timedelta(days=1)) - first.last
        conv = load(f, shift, same_instant=VIA_WRITE)
        async with Store(conv, tmp / f"wall-{conv.name}", embedder, lambda: datetime.now(timezone.utc)) as store:
            as_written.append(await evaluate(store, federation=True))
            store.conv.questions = [Question(shift_dates(q.text, shift), q.evidence, q.category) for q in conv.questions]
            shifted.append(await evaluate(store, federation=True))
    print_table("wall clock, last session yesterday, questions as written", pooled(as_written))
    print_table("wall clock, last session yesterday, the questions' dates shifted too", pooled(shifted))


async def main() -> None:
    from memory.embedding.fastembed import FastEmbedEmbedder

    store_only = "--store-only" in sys.argv
    quick = "--quick" in sys.argv  # no wall-clock pass, no cost figures: for tuning loops
    if "--wall-only" in sys.argv:  # the wall-clock pass alone
        with tempfile.TemporaryDirectory() as tmp:
            embedder = FastEmbedEmbedder(models_root=Path(os.environ.get("ARCANA_MODELS", Path.home() / ".arcana" / "models")))
            await wall_clock(sorted(data_dir().glob("*.json")), embedder, Path(tmp))
        return
    if VIA_FROM:
        print("ingest: remember --from's reconciled path (--via-from)")
    if VIA_WRITE:
        print("ingest: one federation write per turn, a session's turns at one instant (--via-write)")
    dump = sys.argv[sys.argv.index("--dump") + 1] if "--dump" in sys.argv else None
    snapshots = {}
    files = sorted(data_dir().glob("*.json"))
    embedder = FastEmbedEmbedder(models_root=Path(os.environ.get("ARCANA_MODELS", Path.home() / ".arcana" / "models")))
    await embedder.embed(["warm up"])
    convs = [load(f, same_instant=VIA_WRITE) for f in files]
    print(f"{len(convs)} conversations, {sum(len(c.turns) for c in convs)} turns, "
          f"{sum(len(c.questions) for c in convs)} questions (categories 1-4)")
    fed_results, other_results, store_results, legs_by_conv = [], [], [], {}
    ingest_turns, ingest_seconds, raw_seconds = 0, 0.0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for conv in convs:
            asked_at = conv.last + timedelta(days=1)
            async with Store(conv, Path(tmp) / conv.name, embedder, lambda asked_at=asked_at: asked_at) as store:
                ingest_turns += len(conv.turns)
                ingest_seconds += store.ingest_seconds
                # raw embedding of the same texts right after the ingest, so both see the same load
                raw_seconds += len(store.embedded) / await raw_embed_rate(embedder, store.embedded)
                store_results.append(await evaluate(store, federation=False))
                if store_only:
                    continue
                fed_results.append(await evaluate(store, federation=True))
                default = store.fed.recall_settings  # session-neighbour expansion the other way too
                store.fed.recall_settings = default.model_copy(update={"neighbour_depth": 0 if default.neighbour_depth else 2})
                other_results.append(await evaluate(store, federation=True))
                store.fed.recall_settings = default
                items = []
                for q in store.conv.questions:
                    s, k, c = await store.legs(q)
                    items.append((q, s, k, c, store.dia_of))
                legs_by_conv[conv.name] = items
                if dump:
                    snapshots[conv.name] = await snapshot(store, asked_at)
                if conv is convs[-1] and not quick:
                    print(f"\n== cost on conversation {conv.name} ({len(conv.turns)} turns) ==")
                    await latency(store)
        print_table("store alone (VectorAdapter.search)", pooled(store_results))
        if store_only:
            return
        for conv, result in zip(convs, fed_results, strict=True):
            print_table(f"through the federation, conversation {conv.name}", pooled([result]))
        print_table("through the federation, all conversations", pooled(fed_results))
        flipped = "off" if RecallConfig().neighbour_depth else "on (recall.neighbour_depth 2)"
        print_table(f"through the federation, all conversations, session-neighbour expansion {flipped}", pooled(other_results))
        if VIA_FROM or VIA_WRITE:
            print(f"\n== reconciliation decisions over every turn ==\n  {dict(DECISIONS)}")
        coverage(legs_by_conv)
        cross_validate(legs_by_conv)
        if "--ranks" in sys.argv:
            Path(sys.argv[sys.argv.index("--ranks") + 1]).write_text(json.dumps(RANKED))
        if dump:
            import pickle

            Path(dump).write_bytes(pickle.dumps(snapshots))
            print(f"\nreplay snapshot written to {dump}")
        if quick:
            return
        # the wall clock: dates shifted so each conversation's last session was yesterday
        await wall_clock(files, embedder, Path(tmp))
    raw = ingest_turns / raw_seconds
    ours = ingest_turns / ingest_seconds
    print(f"\n== ingest ==\n  build_federation write_many {ours:.0f} turns/s, raw fastembed {raw:.0f} texts/s "
          f"({ours / raw:.2f}x)")


if __name__ == "__main__":
    asyncio.run(main())
