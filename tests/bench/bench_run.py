"""`arcana run` overhead — recall + render + extraction + writes — against the model's own time.

One process, one loopback model server (real HTTP, Ollama NDJSON streaming,
a fixed think time per answer). The baseline is the same server called
directly through the provider; each turn is then run through AgentRuntime
with a populated private store, keyword-only and with the offline embedder.
Run: python tests/bench/bench_run.py [--turns N] [--memories N] [--think-ms MS]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

from model_server import LoopbackModelServer  # noqa: E402

from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.agents import AgentRegistry  # noqa: E402
from memory.config import ArcanaConfig, ModelConfig, save_config  # noqa: E402
from memory.home import Home  # noqa: E402
from memory.models.base import ChatMessage, collect  # noqa: E402
from memory.models.registry import provider_for  # noqa: E402
from memory.runtime.agent import AgentRuntime, build_runtime_with_memory  # noqa: E402
from memory.types import MemoryEntry, MemoryType  # noqa: E402

ANSWER = "Here is a considered answer of moderate length. " * 6
TOPICS = ["units", "editor", "coffee", "deploys", "backups", "keyboard", "timezone", "language", "music", "pets"]


def med(values: list[float]) -> float:
    return statistics.median(values)


async def populate(home: Home, agent_id: str, count: int) -> None:
    store = SQLiteAdapter.for_agent(agent_id, home=home)
    entries = [
        MemoryEntry(agent_id=agent_id, type=MemoryType.SEMANTIC,
                    content=f"Note {i}: the user's preference about {TOPICS[i % len(TOPICS)]} is variant {i}.")
        for i in range(count)
    ]
    await store.write_many(entries)
    await store.aclose()


async def turns(home: Home, config: ArcanaConfig, embedding, count: int) -> list[dict]:
    card, federation = await build_runtime_with_memory(home, "bench", config=config, embedding=embedding)
    runtime = AgentRuntime(home, card, provider_for(config, "loop"), memory=federation, config=config)
    timings = []
    try:
        for i in range(count):
            prompt = f"Remember that I prefer option {i} for my {TOPICS[i % len(TOPICS)]}. What do you suggest?"
            result = await runtime.turn(prompt)
            timings.append(result.timings_ms)
    finally:
        await federation.aclose()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--think-ms", type=float, default=200.0, help="The loopback model's time per answer.")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, LoopbackModelServer(lambda body: ANSWER, delay=args.think_ms / 1000) as server:
        home = Home(Path(tmp) / "home")
        home.ensure()
        config = ArcanaConfig(models={"loop": ModelConfig(provider="ollama", base_url=server.url, model="bench")}, default_model="loop")
        save_config(home.config_path, config)
        card = AgentRegistry(home).create("bench")
        asyncio.run(populate(home, card.id, args.memories))

        provider = provider_for(config, "loop")
        direct = []
        for _ in range(args.turns):
            started = time.perf_counter()
            collect(provider, [ChatMessage("user", "hello")])
            direct.append((time.perf_counter() - started) * 1000)
        baseline = med(direct)
        print(f"machine: {sys.platform}, python {sys.version.split()[0]}; {args.memories} memories in the store; {args.turns} turns each")
        print(f"baseline: model server round trip, direct provider call   median {baseline:8.1f} ms")

        from memory.embedding.factory import build_gateway

        for label, embedding in (("keyword (no embedder)", None), ("hybrid (offline MiniLM)", build_gateway(config.embedding, home))):
            timed = asyncio.run(turns(home, config, embedding, args.turns))
            warm = timed[1:] if len(timed) > 1 else timed  # the first turn pays the embedder's model load
            overhead = med([t["overhead"] for t in warm])
            print(f"\n{label}:")
            for key in ("recall_render", "model", "memory_jobs", "total"):
                print(f"  {key:14s} median {med([t[key] for t in warm]):8.1f} ms")
            print(f"  overhead       median {overhead:8.1f} ms  = {overhead / baseline:.2f}× the model's own time"
                  f" (first turn {timed[0]['overhead']:.0f} ms)")

        # The whole CLI, cold process each time, against the same server.
        env = {"ARCANA_HOME": str(home.root), "PATH": "/usr/bin:/bin"}
        wall = []
        for i in range(3):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "arcana_cli.main", "run", "bench", f"Quick question {i}?", "--json"],
                                  env=env, capture_output=True, text=True, cwd=ROOT)
            if done.returncode != 0:
                raise SystemExit(f"arcana run failed ({done.returncode}): {done.stderr.strip()}")
            wall.append((time.perf_counter() - started) * 1000)
        print(f"\n`arcana run` cold process (hybrid, incl. interpreter start + model load): median {med(wall):.0f} ms"
              f" = {med(wall) / baseline:.1f}× the model round trip")


if __name__ == "__main__":
    main()
