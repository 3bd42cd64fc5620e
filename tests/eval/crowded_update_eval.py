"""Changes in a crowded store: does a message end the one fact it changes, and nothing when it changes none?

The pair evaluations (``phrased_update_eval.py``) put two statements in a
near-empty store, so a cue word can only ever point at the one fact there. A
user's store is full: "I stopped by the bakery", "the gym was closed today",
"my phone died at lunch" sit beside "I buy bread at Gail's", "My gym is
PureGym", "My phone is a Pixel 8". Ending one of those wrongly is the worst
error reconciliation can make: the assistant forgets something true.

``crowded_updates.json`` holds *lives*: a person's 30 current facts, then 25
later messages in order, each either ``changes: null`` (a visit, a one-off,
someone else's change, an addition, an intention, a question: it must end
nothing) or ``changes: N`` (it makes fact N no longer true: it must end that
fact and nothing else). The facts are stored first as given (embedded, not
reconciled: an existing store); each message is then written through a
reconciling federation as ``arcana remember`` writes, with the real offline
embedder and again keyword-only.

Reported per split (``tuning``, ``held_out``) and mode:

- ``false_supersessions``: messages that change nothing but ended something
  (a fact or an earlier message), of ``quiet`` such messages;
- ``change_recall``: changes that ended exactly their fact;
- ``wrong_target``: changes that ended something other than their fact.

The set was written blind, by a writer who never saw the rules; every
second life was held out in a first round of tuning and read in a second
(the JSON's ``about`` says so): a set written later and scored with
``--cases PATH`` is what says how the rules hold on messages nobody read.

Run: ``python tests/eval/crowded_update_eval.py [--misses] [--cases PATH]``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import phrased_update_eval as pe  # noqa: E402

from memory.types import MemoryEntry, MemoryType  # noqa: E402

DATA = Path(__file__).with_name("crowded_updates.json")


async def run_life(root: Path, embedder, life: dict) -> list[dict]:
    """The life's facts as an existing store, then each message through ``write``: what each one ended."""
    store, federation = await pe.open_store(root / f"{life['id']}-{'v' if embedder else 'k'}.db", embedder)
    agent = life["id"]
    facts = [MemoryEntry(agent_id=agent, content=text, type=MemoryType.SEMANTIC) for text in life["facts"]]
    outcomes = []
    try:
        await federation.router.private.write_many(facts)
        said = {f.id: f.content for f in facts}
        for message in life["messages"]:
            entry = MemoryEntry(agent_id=agent, content=message["text"], type=MemoryType.SEMANTIC)
            report = await federation.write(entry)
            said[entry.id] = entry.content
            expected = None if message["changes"] is None else facts[message["changes"]].id
            outcomes.append({
                "life": life, "message": message, "ended": [said[i] for i in report.supersedes],
                "right": report.supersedes == ([expected] if expected else []), "expected": said.get(expected),
            })
    finally:
        await store.aclose()
    return outcomes


def metrics(outcomes: list[dict]) -> dict:
    quiet = [o for o in outcomes if o["message"]["changes"] is None]
    changes = [o for o in outcomes if o["message"]["changes"] is not None]
    return {
        "quiet": len(quiet),
        "false_supersessions": sum(bool(o["ended"]) for o in quiet),
        "changes": len(changes),
        "change_recall": round(sum(o["right"] for o in changes) / len(changes), 3) if changes else 1.0,
        "wrong_target": sum(bool(o["ended"]) and not o["right"] for o in changes),
    }


def split_of(index: int) -> str:
    """Every second life is held out and never tuned on."""
    return "tuning" if index % 2 == 0 else "held_out"


async def main() -> None:
    from memory.embedding.fastembed import FastEmbedEmbedder

    lives = pe.load(DATA, "lives")
    with tempfile.TemporaryDirectory() as tmp:
        embedder = FastEmbedEmbedder(models_root=Path(tmp) / "models")
        for name, chosen in (("fastembed", embedder), ("keyword-only", None)):
            by_split: dict[str, list[dict]] = {}
            for index, life in enumerate(lives):
                by_split.setdefault(split_of(index), []).extend(await run_life(Path(tmp), chosen, life))
            for split, outcomes in by_split.items():
                print(f"{name:12} {split:9} {json.dumps(metrics(outcomes))}")
                if "--misses" in sys.argv:
                    for o in outcomes:
                        if not o["right"]:
                            print(f"   [{o['life']['id']}] {o['message']['text']!r}: ended {o['ended']}, expected {o['expected']!r}")


if __name__ == "__main__":
    asyncio.run(main())
