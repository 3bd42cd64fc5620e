"""A consolidate killed mid-run leaves every decision done or not done, and a re-run finishes the job.

A real `arcana consolidate` process over a keyword-only store of 400 old
sessions (1,600 digests to make, 200 a transaction) is killed with SIGKILL
once some sources are archived and before the last batch. Then no digest is
without its sources archived and no source is archived without a current
digest carrying it; a re-run leaves the store exactly as one uninterrupted
run does (the same turns archived, the same digests), on a copy made before
either ran.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

from runner import arcana, kill_when

SESSIONS, TURNS = 400, 21  # 4 digests and a bit of small talk a session


def _lines() -> str:
    lines = []
    for s in range(SESSIONS):
        day = f"2023-{1 + s % 12:02d}-{1 + s % 28:02d}T10:00:00+00:00"
        for t in range(TURNS):
            content = "haha, yes!" if t == 7 else f"Ada: crate {s}-{t} went to shelf {(s * TURNS + t) % 997} near dock {t}"
            lines.append(json.dumps({"content": content, "session": f"s{s}", "type": "episodic", "created_at": day}))
    return "\n".join(lines) + "\n"


def _state(db) -> tuple[set[str], list[str]]:
    """(ids archived, contents of the current digests, sorted) as committed."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        archived = {r[0] for r in conn.execute("SELECT id FROM memories WHERE archived != 0")}
        digests = sorted(r[0] for r in conn.execute(
            "SELECT content FROM memories WHERE archived = 0 AND id IN (SELECT src_id FROM memory_edges)"))
        return archived, digests
    finally:
        conn.close()


def _half_applied(db) -> list[str]:
    """Edges of a batch that did not land whole: a source still current, or one archived under no current digest."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        current_sources = conn.execute(
            "SELECT e.dst_id FROM memory_edges e JOIN memories m ON m.id = e.dst_id WHERE m.archived = 0").fetchall()
        orphans = conn.execute(
            "SELECT m.id FROM memories m WHERE m.archived != 0 AND m.content != 'haha, yes!' AND NOT EXISTS "
            "(SELECT 1 FROM memory_edges e JOIN memories d ON d.id = e.src_id WHERE e.dst_id = m.id AND d.archived = 0)"
        ).fetchall()
        return [r[0] for r in (*current_sources, *orphans)]
    finally:
        conn.close()


def _archived_count(db) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
    try:
        return conn.execute("SELECT count(*) FROM memories WHERE archived != 0").fetchone()[0]
    finally:
        conn.close()


def _killed_midway(home) -> None:
    db = next(home.root.glob("agents/*/memory.db"))
    kill_when(home, ["consolidate", "--agent", "ada"], lambda: _archived_count(db) > 0, "a batch was seen")


def _imported_then_consolidated_whole(home, tmp_path, lines: str):
    """``lines`` imported into ada's store of ``home``; a copy of the home consolidated in one run
    (what a killed run and its re-run must end as) and that copy's state."""
    source = tmp_path / "lines.jsonl"
    source.write_text(lines)
    arcana("--quiet", "remember", "--from", str(source), "--agent", "ada", "--no-reconcile", home=home)
    whole = tmp_path / "whole"
    shutil.copytree(home.root, whole)
    arcana("--quiet", "consolidate", "--agent", "ada", home=whole)
    return whole, _state(next(whole.glob("agents/*/memory.db")))


def test_a_killed_consolidate_leaves_whole_batches_and_a_rerun_ends_as_one_run_would(no_embedder, tmp_path):
    whole, expected = _imported_then_consolidated_whole(no_embedder, tmp_path, _lines())
    assert len(expected[1]) >= SESSIONS * 4 and len(expected[0]) == SESSIONS * TURNS  # positive control: it digests

    _killed_midway(no_embedder)
    db = next(no_embedder.root.glob("agents/*/memory.db"))
    partial = _state(db)
    assert 0 < len(partial[0]) < len(expected[0]), "the kill did not land mid-run"
    assert _half_applied(db) == []
    assert partial[0] <= expected[0]

    arcana("--quiet", "consolidate", "--agent", "ada", home=no_embedder)
    assert _state(db) == expected
    assert _half_applied(db) == []


def _missing_vectors(home) -> int:
    (status,) = json.loads(arcana("embeddings", "status", "--json", home=home))["databases"]
    return status["missing"]


def test_digests_a_killed_run_wrote_before_embedding_them_are_embedded_by_the_rerun(arcana_home, tmp_path):
    """A batch's digests are embedded after its transaction: a kill in between left them without
    vectors, the re-run never wrote them again, and semantic recall never found them (only a
    `reindex` did)."""
    source = tmp_path / "lines.jsonl"
    source.write_text("".join(json.dumps({"content": f"Ada: crate {s}-{t} went to shelf {s * 7 + t} near dock {t}",
                                          "session": f"s{s}", "type": "episodic",
                                          "created_at": f"2023-{1 + s % 12:02d}-{1 + s % 28:02d}T10:00:00+00:00"}) + "\n"
                              for s in range(40) for t in range(6)))
    arcana("--quiet", "remember", "--from", str(source), "--agent", "ada", "--no-reconcile", home=arcana_home)
    assert _missing_vectors(arcana_home) == 0  # control: every turn was embedded as it was written

    _killed_midway(arcana_home)
    assert _missing_vectors(arcana_home) > 0, "the kill did not land between the digests and their vectors"
    arcana("--quiet", "consolidate", "--agent", "ada", home=arcana_home)
    assert _missing_vectors(arcana_home) == 0
    digests = _state(next(arcana_home.root.glob("agents/*/memory.db")))[1]
    assert len(digests) == 80  # 40 sessions of 6 contentful turns: 5 and 1 a session


def _copies_then_pairs() -> str:
    """2,600 spellings of one fact (more than a page: a merge in parts before) tagged by where they
    fall (the keeper first and earliest, "early" on its page, "late" past it), then 1,000 pairs
    that merge after it, so a kill once the first sources are archived lands mid-run."""
    letters = [i for i, c in enumerate(FERRY) if c.isalpha()]

    def spelled(n: int) -> str:
        return "".join(c.upper() if i in letters and n >> letters.index(i) & 1 else c for i, c in enumerate(FERRY))

    lines = [{"content": spelled(n), "tags": ["keeper" if n == 0 else "early" if n < 2000 else "late"],
              "created_at": "2024-01-01T00:00:00Z" if n == 0 else "2024-02-01T00:00:00Z"} for n in range(2600)]
    lines += [{"content": text.format(i), "created_at": "2024-03-01T00:00:00Z"}
              for i in range(1000) for text in ("crate {0} sits on shelf 4", "Crate {0} sits on shelf 4!")]
    return "".join(json.dumps({"type": "semantic", **line}) + "\n" for line in lines)


FERRY = "the ferry leaves at nine"


def _tagged(home, tag: str) -> list[str]:
    found = json.loads(arcana("recall", "ferry", "--agent", "ada", "--tag", tag, "--json", home=home))["results"]
    return [r["content"] for r in found]


def test_a_fact_said_thousands_of_times_keeps_every_tag_when_its_merge_is_killed(no_embedder, tmp_path):
    """A cluster bigger than a page was merged in parts, the keeper lifted by the last: a kill between
    parts left it without the tags of the sources archived first, and `recall --tag early` found none
    of the 1,999 memories that had it. Now the merge is one decision in one transaction."""
    whole, expected = _imported_then_consolidated_whole(no_embedder, tmp_path, _copies_then_pairs())
    assert len(expected[0]) == 2599 + 1000
    assert _tagged(whole, "early") == [FERRY] and _tagged(whole, "late") == [FERRY]  # control: one run keeps both

    _killed_midway(no_embedder)
    db = next(no_embedder.root.glob("agents/*/memory.db"))
    assert 0 < len(_state(db)[0]) < len(expected[0]), "the kill did not land mid-run"
    assert _half_applied(db) == []
    arcana("--quiet", "consolidate", "--agent", "ada", home=no_embedder)
    assert _state(db) == expected
    assert _tagged(no_embedder, "early") == [FERRY] and _tagged(no_embedder, "late") == [FERRY]
