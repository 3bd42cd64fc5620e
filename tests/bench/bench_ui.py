"""`arcana ui` page loads on a store of N memories against the same recall from the CLI.

One agent is given N memories (embedded with the offline model, so hybrid and
semantic recall run for real). The baseline is `arcana recall QUERY --agent a
--mode M` as a user runs it (a process per query); the contender is the web
view's search page for the same query and mode over HTTP, the HTML read whole,
from one `arcana ui` process (the model stays loaded). Interleaved per query.
Also timed: the page's first search (model load included), the listing at
page 1 and deep in the store, the operator listing, one memory, the home
page and the activity page.
Run: python tests/bench/bench_ui.py [--memories 10000] [--queries 8]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "bench")]

from cli_env import cli_env  # noqa: E402

WORDS = (
    "kettle deploy coffee backup keyboard timezone editor printer standup invoice laptop garden budget release "
    "ticket server window meeting holiday recipe bicycle library battery camera passport dentist train violin"
).split()


async def fill(home: Path, count: int) -> str:
    """N memories for agent 'a' through the core's batch write (vectors included); its id."""
    from memory.agents import AgentRegistry
    from memory.config import load_config
    from memory.adapters.opener import vector_adapter
    from memory.home import Home
    from memory.adapters.opener import open_store
    from memory.store_kinds import StoreKind
    from memory.types import MemoryEntry

    h = Home(home)
    h.ensure()
    card = AgentRegistry(h).create("a")
    rng = random.Random(11)
    entries = [
        MemoryEntry(agent_id=card.id, importance=round(rng.uniform(0.1, 0.85), 2),
                    content=f"note {i}: " + " ".join(rng.sample(WORDS, 7)))
        for i in range(count)
    ]
    store = open_store(h, StoreKind.PRIVATE, card.id, actor="bench")
    await store.connect()
    layered = vector_adapter(store, load_config(h.config_path).embedding, h)
    try:
        await layered.write_many(entries)
    finally:
        await layered.aclose()
    return entries[count // 2].id


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main(memories: int, queries: int) -> None:
    import urllib.error
    import urllib.request

    with tempfile.TemporaryDirectory(prefix="arcana-bench-ui-") as tmp:
        home = Path(tmp) / "home"
        env = cli_env(home)
        subprocess.run([sys.executable, "-m", "arcana_cli.main", "init"], env=env, check=True, capture_output=True)
        started = time.perf_counter()
        some_id = asyncio.run(fill(home, memories))
        print(f"store: {memories} memories written and embedded in {time.perf_counter() - started:.1f} s")
        errors = Path(tmp) / "ui.err"
        with errors.open("w") as sink:
            proc = subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "ui", "--bind", "127.0.0.1:0"],
                                    env=env, stdout=subprocess.DEVNULL, stderr=sink)
        try:
            url = None
            while url is None:
                found = re.search(r"http://127\.0\.0\.1:\d+/\S*\?token=\S+", errors.read_text())
                url = found.group(0) if found else None
                if proc.poll() is not None:
                    raise SystemExit(errors.read_text())
                time.sleep(0.05)
            base = url.split("/?token=")[0]
            # The token for its cookie, as a browser does (urllib: httpx's keep-alive added ~40 ms a request here).
            class Keep(urllib.request.HTTPRedirectHandler):
                def redirect_request(self, *args):
                    return None

            try:
                urllib.request.build_opener(Keep).open(url)
            except urllib.error.HTTPError as swap:
                cookie = swap.headers["set-cookie"].split(";")[0]
            rng = random.Random(5)
            asked = [" ".join(rng.sample(WORDS, 2)) for _ in range(queries)]

            def page(path: str) -> None:
                with urllib.request.urlopen(urllib.request.Request(base + path, headers={"Cookie": cookie}), timeout=120) as answer:
                    assert answer.status == 200 and b"</html>" in answer.read()[-20:], path

            def search(query: str, mode: str) -> None:
                page(f"/memories?agent=a&mode={mode}&q={query.replace(' ', '+')}")

            def cli(query: str, mode: str) -> None:
                subprocess.run([sys.executable, "-m", "arcana_cli.main", "recall", query, "--agent", "a", "--mode", mode],
                               env=env, check=True, capture_output=True)

            first = timed(lambda: search(asked[0], "hybrid"))
            print(f"first search page (embedder loaded by it): {first:.0f} ms")
            print(f"{'mode':9} {'CLI recall p50':>15} {'page p50':>9} {'page p90':>9} {'ratio':>6}")
            for mode in ("keyword", "semantic", "hybrid"):
                cli_ms, page_ms = [], []
                for query in asked:
                    cli_ms.append(timed(lambda: cli(query, mode)))
                    page_ms.append(timed(lambda: search(query, mode)))
                c, p = statistics.median(cli_ms), statistics.median(page_ms)
                p90 = statistics.quantiles(page_ms, n=10)[-1] if len(page_ms) > 1 else p
                print(f"{mode:9} {c:13.0f} ms {p:6.0f} ms {p90:6.0f} ms {p / c:6.3f}")
            deep = max(1, memories // 50 - 1)
            for label, path in (
                ("home (census of every store)", "/"),
                ("listing, page 1", "/memories?agent=a"),
                (f"listing, page {deep} (rows {(deep - 1) * 50 + 1}..)", f"/memories?agent=a&page={deep}"),
                ("operator listing with archived, page 1", "/memories?agent=a&view=operator&archived=1"),
                ("operator keyword search", f"/memories?agent=a&view=operator&q={asked[0].replace(' ', '+')}"),
                ("one memory", f"/memory/{some_id}?agent=a"),
                ("activity (growth summed first time)", "/activity?agent=a"),
                ("activity (again: only new ledger rows)", "/activity?agent=a"),
                ("audit log", "/audit"),
            ):
                times = [timed(lambda: page(path)) for _ in range(1 if "first time" in label else 5)]
                print(f"{label:42} {statistics.median(times):7.1f} ms")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=8)
    args = parser.parse_args()
    main(args.memories, args.queries)
