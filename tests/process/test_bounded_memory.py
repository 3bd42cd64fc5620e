"""Memory is bounded by design: a command's peak RSS does not grow with its input.

Each measurement is a real process's peak RSS (``ru_maxrss`` of a child).
`remember --from` of 20x the lines peaks within a few MiB of the small run
(it held the whole file and every entry); the embedder pads long texts a few
at a time (32 chunks of a long note took 1.5 GB); a vault note over the
content limit is skipped whatever `max_file_bytes` says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from arcana_cli import exit_codes

ARCANA = [sys.executable, "-m", "arcana_cli.main"]
PEAK = textwrap.dedent(
    """
    import resource, subprocess, sys
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
    sys.exit(done.returncode)
    """
)


def _peak(*cmd: str, env: dict) -> int:
    done = subprocess.run([sys.executable, "-c", PEAK, *cmd], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


def _lines(path: Path, count: int) -> Path:
    filler = "and the notes from that meeting ran on about budgets, rooms and who brings the projector " * 4
    with path.open("w") as handle:
        for i in range(count):
            handle.write(json.dumps({"content": f"line {i}: {filler}{i * 31}"}) + "\n")
    return path


def test_remember_from_peak_does_not_grow_with_the_file(no_embedder, tmp_path):
    env = {**os.environ, "ARCANA_HOME": str(no_embedder.root)}
    small = _peak(*ARCANA, "--quiet", "remember", "--from", str(_lines(tmp_path / "small.jsonl", 2_000)), "--agent",
                  "a", "--no-reconcile", env=env)
    large = _peak(*ARCANA, "--quiet", "remember", "--from", str(_lines(tmp_path / "large.jsonl", 40_000)), "--agent",
                  "b", "--no-reconcile", env=env)
    listed = subprocess.run([*ARCANA, "memory", "list", "--agent", "b", "--json", "--limit", "10000"], env=env,
                            capture_output=True, text=True, timeout=300)
    assert len(json.loads(listed.stdout)) == 10_000  # positive control: the large file went in (listing caps)
    assert large < small + 40, f"peak {small} MiB at 2,000 lines, {large} MiB at 40,000"


EMBED = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from memory.embedding.fastembed import FastEmbedEmbedder
    words = "tide lighthouse harbour ferry gull rope anchor keel mast sail chart compass".split()
    texts = [" ".join(words[(i * 7 + j) % len(words)] + str(j % 13) for j in range(120)) for i in range(64)]
    embedder = FastEmbedEmbedder(models_root=Path(sys.argv[1]))
    together = asyncio.run(embedder.embed(texts))
    alone = [asyncio.run(embedder.embed([text]))[0] for text in texts[:4]]
    worst = min(sum(a * b for a, b in zip(x, y)) for x, y in zip(together, alone))
    print(f"{worst:.6f}")
    """
)


def test_long_texts_are_embedded_a_few_at_a_time(tmp_path):
    env = {**os.environ}
    done = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-c", EMBED, str(tmp_path / "models")], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    cosine, peak = done.stdout.split()[-2:]
    assert float(cosine) > 0.9999  # positive control: batching changes no vector
    assert int(peak) < 800, f"peak {peak} MiB embedding 64 long texts"


def test_a_vault_note_over_the_content_limit_is_skipped_whatever_max_file_bytes_says(cli, no_embedder, make_vault):
    big = "# Big\n\n" + ("a paragraph of words about the harbour and its ferries. " * 20 + "\n\n") * 1100
    assert len(big.encode()) > 1024 * 1024
    folder = make_vault({"Big.md": big, "Small.md": "# Small\n\nthe ferry leaves at nine"})
    assert cli("vault", "add", str(folder), "--name", "v").exit_code == 0
    assert cli("config", "set", "vaults.v.max_file_bytes", str(50 * 1024 * 1024)).exit_code == 0
    result = cli("vault", "index", "v")
    assert result.exit_code == exit_codes.OK, result.stderr
    check = cli("vault", "check", "v", "--json")
    skipped = {row["path"]: row["reason"] for row in json.loads(check.stdout)["skipped"]}
    assert skipped == {"Big.md": "too_large"}, check.stdout
    import asyncio

    from memory.adapters.opener import open_store
    from memory.store_kinds import StoreKind
    from memory.types import MemoryQuery

    async def contents():
        store = open_store(no_embedder, StoreKind.VAULT, "v")
        try:
            return [e.content for e in await store.search(MemoryQuery(limit=10))]
        finally:
            await store.aclose()

    assert [c.split("\n")[0] for c in asyncio.run(contents())] == ["Small"]  # positive control


def _alias_bomb(key: str) -> str:
    """Frontmatter of 88 lines whose ``key`` is ten nested levels of ten references each: 10**9 strings once expanded."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]
    return "---\n" + "\n".join(lines) + f"\n{key}: *l8\n---\nThe bomb note still has words: lighthouse.\n"


def test_a_yaml_alias_bomb_in_a_note_type_is_refused_in_bounded_memory(no_embedder, make_vault):
    """PyYAML builds aliases as shared references (cheap), but turning a non-string `type:` into text
    expanded them all: one 600-byte note took gigabytes and minutes. A type must be a string."""
    import resource

    folder = make_vault({"Bomb.md": _alias_bomb("type"), "Tags.md": _alias_bomb("tags"), "Plain.md": "type-less harbour note"})
    env = {**os.environ, "ARCANA_HOME": str(no_embedder.root)}
    assert subprocess.run([*ARCANA, "vault", "add", str(folder), "--name", "bomb"], env=env, capture_output=True).returncode == 0

    def cap() -> None:  # the child alone: 2 GiB of address space, far more than indexing three notes needs
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run([*ARCANA, "vault", "index", "bomb", "--json"], env=env, capture_output=True, text=True,
                          timeout=120, preexec_fn=cap, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["added"] == 3  # positive control: the plain note and both bombs are notes
    assert report["frontmatter_problems"] == ["Bomb.md", "Tags.md"]


def test_a_wide_yaml_alias_bomb_of_property_links_is_read_in_bounded_memory(no_embedder, make_vault):
    """Properties are read for their [[links]]; YAML aliases make a 24 KB block name 8 * 10**9 link
    strings (three levels of 2,000 references), and walking them all never finished. At most a block's
    worth of property text is looked at."""
    import resource

    refs = ", ".join(["*a"] * 2000)
    block = f'a: &a ["[[Plain]]"]\nb: &b [{refs}]\nc: &c [{refs.replace("a", "b")}]\nrelated: [{refs.replace("a", "c")}]\n'
    folder = make_vault({"Bomb.md": f"---\n{block}---\nbomb body", "Plain.md": "harbour note",
                         "Up.md": '---\nup: "[[Plain]]"\n---\nup body'})
    env = {**os.environ, "ARCANA_HOME": str(no_embedder.root)}
    assert subprocess.run([*ARCANA, "vault", "add", str(folder), "--name", "bomb"], env=env, capture_output=True).returncode == 0

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run([*ARCANA, "vault", "index", "bomb", "--json"], env=env, capture_output=True, text=True,
                          timeout=120, preexec_fn=cap, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["added"] == 3
    assert report["links"]["edges_written"] == 2  # Bomb → Plain once, and Up → Plain: the control
    assert report["links"]["links_found"] < 20_000
