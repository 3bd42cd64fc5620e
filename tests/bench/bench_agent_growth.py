"""An agent that runs `arcana run` N times: how its store grows, and how much of what it recalls is echo.

A loopback model server (real HTTP) answers every turn by repeating the
memories it was given, the worst case for echoes. The agent alternates
between stating a fact ("I prefer …", "My … is …") and asking about one it
stated earlier. The same script runs twice in fresh homes: with the
background consolidation ``arcana run`` queues (``memory.consolidate_every``)
and with it off. Printed per run: live rows after, and, over the questions,
how many recalled results are derived (an echo of an earlier turn or a
session summary), and how often the fact asked about was among them and first.

Run: python tests/bench/bench_agent_growth.py [--runs 200] [--every 100]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

from model_server import LoopbackModelServer  # noqa: E402

from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.agents import AgentRegistry  # noqa: E402
from memory.config import ArcanaConfig, MemoryConfig, ModelConfig, save_config  # noqa: E402
from memory.home import Home  # noqa: E402
from memory.models.registry import provider_for  # noqa: E402
from memory.runtime.agent import AgentRuntime, build_runtime_with_memory  # noqa: E402

THINGS = ["editor", "coffee", "keyboard", "timezone", "language", "music", "pet", "city", "bike", "tea",
          "shell", "font", "airline", "bank", "gym", "dentist", "laptop", "phone", "car", "team"]
CHOICES = ["amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper"]


def fact(i: int) -> tuple[str, str, str]:
    """(statement, question, the answer's word) for the i-th fact the agent is told."""
    thing, choice = THINGS[i % len(THINGS)], f"{CHOICES[i % len(CHOICES)]}{i}"
    return f"I prefer the {choice} {thing} from now on.", f"Which {thing} do I prefer?", choice


async def simulate(runs: int, every: int, server: LoopbackModelServer) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        home.ensure()
        config = ArcanaConfig(
            memory=MemoryConfig(consolidate_every=every),
            models={"loop": ModelConfig(provider="ollama", base_url=server.url, model="m")},
            embedding={"providers": []},
        )
        save_config(home.config_path, config)
        card = AgentRegistry(home).create("agent")
        recalled = derived = questions = answered = first = 0
        started = time.perf_counter()
        for run in range(runs):
            stated, asked = run // 2, run % 2 == 1
            statement, question, answer = fact(stated if not asked else max(0, stated - 3))
            _, federation = await build_runtime_with_memory(home, card, config=config)
            try:
                runtime = AgentRuntime(home, card, provider_for(config, "loop"), memory=federation, config=config)
                result = await runtime.turn(question if asked else statement)
            finally:
                await federation.aclose()
            if asked:
                store = SQLiteAdapter.for_agent(card.id, home=home)
                got = [await store.get(i) for i in result.recalled_ids]
                await store.aclose()
                got = [e for e in got if e is not None]
                questions += 1
                recalled += len(got)
                derived += sum(e.derived for e in got)
                answered += any(answer in e.content and not e.derived for e in got)
                first += bool(got) and answer in got[0].content and not got[0].derived
        store = SQLiteAdapter.for_agent(card.id, home=home)
        live, rows = await store.count(include_archived=False), await store.count()
        await store.aclose()
        return {"every": every, "runs": runs, "live": live, "rows": rows, "questions": questions,
                "recalled": recalled, "derived": derived, "answered": answered, "first": first,
                "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--every", type=int, default=100, help="memory.consolidate_every for the run with it on")
    args = parser.parse_args()
    with LoopbackModelServer() as server:
        for every in (0, args.every):
            r = asyncio.run(simulate(args.runs, every, server))
            share = r["derived"] / r["recalled"] if r["recalled"] else 0.0
            print(f"consolidate_every={r['every']}: {r['runs']} runs -> {r['live']} live rows ({r['rows']} with archived); "
                  f"{r['questions']} questions recalled {r['recalled']} results, {r['derived']} derived ({share:.1%}); "
                  f"the fact asked about recalled in {r['answered']}/{r['questions']}, first in {r['first']}; {r['seconds']:.0f} s")


if __name__ == "__main__":
    main()
