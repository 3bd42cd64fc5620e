"""Facts phrased in new ways: does an everyday change ("I switched dentists, I see Dr X now")
end the old fact, with default settings and no model?

``phrased_updates.json`` holds pairs (a first statement, then a second) of
three kinds: ``update`` (recall must answer the new value, and the old
version must be superseded), ``restatement`` (same meaning in other words:
``noop``) and ``control`` (a different fact sharing words: never superseded,
the first still answers). Its ``held_out`` part was written before any rule
was changed for it and is never tuned on; ``tuning`` is the rest.

Each pair runs in a fresh agent store behind a reconciling federation, as
``arcana remember`` writes (``ReconcileSettings()`` defaults, ``heuristic``),
with the real offline embedder and again keyword-only (no vectors). The few
background memories are embedded too, as every memory of a real store is, so
they are vector candidates beside the first statement.

Reported per split and mode: update precision (supersessions that ended the
right memory of a true update) and recall (updates that ended the old fact
and whose new value answers at rank 1), ``update_ended`` (the old fact ended,
however recall then ranks: the reconciler's share apart from retrieval's),
the noop rate on restatements, and false supersessions on the controls.

``phrased_updates_unseen.json`` holds four more sets of the same shape, each
written by someone who never saw the rules or the other sets, never tuned on:
pass it with ``--cases``. ``phrased_updates_unseen6.json`` is a sixth such set (24 updates, 16 controls,
8 restatements), scored once before any change and never tuned on. ``phrased_updates_shared_topic.json`` holds
different facts that share a topic word ("My dentist is Dr Smith", "The
dentist appointment is on May 7"), written by the engineer who fixed such
false supersessions: not blind, not tuned on by the other sets.
``phrased_updates_locomo.json`` holds real changes, controls and restatements mined from the
LoCoMo development conversations (two turns of one speaker, in their words), scored once blind, never tuned on.

Run: ``python tests/eval/phrased_update_eval.py [--misses] [--cases PATH]``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import knowledge_update_eval as ku  # noqa: E402

from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.config import ReconcileSettings  # noqa: E402
from memory.federation.federation import MemoryFederation  # noqa: E402
from memory.federation.router import MemoryRouter  # noqa: E402
from memory.reconcile.reconciler import Reconciler  # noqa: E402
from memory.types import MemoryEntry, MemoryQuery, MemoryType, RetrievalMode  # noqa: E402

DATA = Path(__file__).with_name("phrased_updates.json")


def load(default: Path = DATA, key: str = "cases") -> list[dict]:
    """The ``key`` list of ``--cases PATH`` (a set of the same shape written elsewhere), else of ``default``."""
    path = Path(sys.argv[sys.argv.index("--cases") + 1]) if "--cases" in sys.argv else default
    return json.loads(path.read_text(encoding="utf-8"))[key]


async def _keyword_case(path: Path) -> tuple[SQLiteAdapter, MemoryFederation]:
    store = SQLiteAdapter(path, actor="eval")
    await store.connect()
    reconciler = Reconciler(store, None, ReconcileSettings())
    return store, MemoryFederation(MemoryRouter(private=store), on_degraded=lambda event: None, reconciler=reconciler)


async def open_store(path: Path, embedder) -> tuple[SQLiteAdapter, MemoryFederation]:
    """A fresh agent store behind a reconciling federation: with ``embedder``'s vectors, else keyword-only."""
    if embedder is not None:
        return await ku.open_case(path, embedder, "en", ReconcileSettings())
    return await _keyword_case(path)


async def run_case(root: Path, embedder, case: dict, index: int) -> dict:
    """Background memories, the first statement, the second; then the question."""
    store, federation = await open_store(root / f"phrased-{index}-{'v' if embedder else 'k'}.db", embedder)
    agent = f"case-{index}"
    try:
        backend = federation.router.private
        await backend.write_many(
            [MemoryEntry(agent_id=agent, content=t, type=MemoryType.SEMANTIC) for t in ku.background()[: 2 + index % 3]]
        )
        first = MemoryEntry(agent_id=agent, content=case["first"], type=MemoryType.SEMANTIC)
        await federation.write(first)
        report = await federation.write(MemoryEntry(agent_id=agent, content=case["second"], type=MemoryType.SEMANTIC))
        mode = RetrievalMode.hybrid if embedder is not None else RetrievalMode.keyword
        query = MemoryQuery(agent_id=agent, text=case["question"], retrieval_mode=mode, limit=ku.TOP)
        found = (await federation.recall(query)).entries
        top = found[0].content if found else ""
    finally:
        await store.aclose()
    return {
        "case": case, "decision": report.decision, "ended": list(report.supersedes), "first_id": first.id,
        "answers": case["answer"].lower() in top.lower(), "top": top,
    }


def metrics(outcomes: list[dict]) -> dict:
    out = {}
    for split in dict.fromkeys(o["case"]["split"] for o in outcomes):
        chosen = [o for o in outcomes if o["case"]["split"] == split]
        updates = [o for o in chosen if o["case"]["kind"] == "update"]
        superseding = [o for o in chosen if o["ended"]]
        right = [o for o in superseding if o["case"]["kind"] == "update" and o["ended"] == [o["first_id"]]]
        recalled = [o for o in updates if o["ended"] == [o["first_id"]] and o["answers"]]
        restated = [o for o in chosen if o["case"]["kind"] == "restatement"]
        controls = [o for o in chosen if o["case"]["kind"] == "control"]
        out[split] = {
            "updates": len(updates),
            "update_precision": round(len(right) / len(superseding), 3) if superseding else 1.0,
            "update_recall": round(len(recalled) / len(updates), 3) if updates else 1.0,
            # The write-time decision alone (the old fact ended), whether or not recall then ranks the new one first.
            "update_ended": round(sum(o["ended"] == [o["first_id"]] for o in updates) / len(updates), 3) if updates else 1.0,
            "noop_rate": round(sum(o["decision"] == "noop" for o in restated) / len(restated), 3) if restated else 1.0,
            "false_supersessions": sum(bool(o["ended"]) for o in controls),
            "controls": len(controls),
            "controls_answering": sum(o["answers"] for o in controls),
        }
    return out


def missed(o: dict) -> bool:
    kind = o["case"]["kind"]
    if kind == "update":
        return not (o["ended"] == [o["first_id"]] and o["answers"])
    if kind == "restatement":
        return o["decision"] != "noop"
    return bool(o["ended"]) or not o["answers"]


async def evaluate(root: Path, embedder, cases: list[dict]) -> list[dict]:
    return [await run_case(root, embedder, case, i) for i, case in enumerate(cases)]


async def main() -> None:
    from memory.embedding.fastembed import FastEmbedEmbedder

    with tempfile.TemporaryDirectory() as tmp:
        embedder = FastEmbedEmbedder(models_root=Path(tmp) / "models")
        for name, chosen in (("fastembed", embedder), ("keyword-only", None)):
            outcomes = await evaluate(Path(tmp), chosen, load())
            for split, row in metrics(outcomes).items():
                print(f"{name:12} {split:9} {json.dumps(row)}")
            if "--misses" in sys.argv:
                for o in outcomes:
                    if missed(o):
                        c = o["case"]
                        print(f"   [{c['split']}] {c['kind']}: {c['first']!r} -> {c['second']!r}: {o['decision']}, top {o['top']!r}")


if __name__ == "__main__":
    asyncio.run(main())
