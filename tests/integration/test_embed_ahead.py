"""Issue 26: a reconciled ``remember --from`` embeds each batch while the one before it is decided and
written. Every line is still embedded once, one model call at a time; a re-run embeds nothing; and the
decisions are those of an import that embeds each batch only when it gets to it. Real SQLite, real
sqlite-vec, the real offline model."""

from __future__ import annotations

import json

import knowledge_update_eval as ku
import pytest

from memory.config import ReconcileSettings
from memory.operations import bulk_import
from memory.operations.bulk_import import parse, remember_many
from memory.types import MemoryQuery

LINES = [
    *(f"Note {i}: the {w} report for week {i} is filed under {w}-{i}." for i, w in enumerate(["sales", "ops", "hr"] * 20)),
    "I live in Berlin.", "My dentist is Dr. Patel.", "I drink tea every morning.",
    "I moved to Lisbon.", "I switched from tea to coffee.", "My dentist is Dr. Patel.",
]


class Counting:
    """The real embedder, counting the texts it is given and the calls running at once."""

    def __init__(self, embedder):
        self.embedder, self.texts, self.running, self.most, self.events = embedder, [], 0, 0, []

    def __getattr__(self, name):
        return getattr(self.embedder, name)

    async def embed(self, texts):
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            self.texts += texts
            self.events.append("embed")
            return await self.embedder.embed(texts)
        finally:
            self.running -= 1


async def _import(tmp_path, name, offline_embedder, monkeypatch, *, ahead: bool):
    counting = Counting(offline_embedder)
    store, federation = await ku.open_case(tmp_path / f"{name}.db", counting, "en", ReconcileSettings())
    if not ahead:
        monkeypatch.setattr(federation, "embed_ahead", lambda entries, **_: None)
    write_many = federation.write_many

    async def logged(batch, **kwargs):
        counting.events.append("write")
        return await write_many(batch, **kwargs)

    monkeypatch.setattr(federation, "write_many", logged)
    lines = [json.dumps({"content": text, "created_at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00"})
             for i, text in enumerate(LINES)]
    first = await remember_many(federation, parse(lines, "ada"))
    embedded = len(counting.texts)
    again = await remember_many(federation, parse(lines, "ada"))
    current = sorted(e.content for e in await store.page(MemoryQuery(agent_id="ada", limit=1000)))
    await store.aclose()
    return first, again, embedded, counting, current


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(bulk_import, "BATCH", 16)  # four batches of this import, each embedded ahead


async def test_each_line_is_embedded_once_ahead_one_call_at_a_time_and_decided_as_without(
    tmp_path, offline_embedder, monkeypatch, small_batches
):
    first, again, embedded, counting, current = await _import(tmp_path, "ahead", offline_embedder, monkeypatch, ahead=True)
    plain, _, plain_embedded, plain_counting, plain_current = await _import(tmp_path, "plain", offline_embedder, monkeypatch, ahead=False)
    assert first.written == plain.written and first.decisions == plain.decisions
    assert first.decisions["update"] >= 1 and first.decisions["noop"] == 1  # positive controls: Lisbon ends Berlin; the dentist restated
    assert current == plain_current and "I live in Berlin." not in current
    # Once per batch a text is in ("My dentist is Dr. Patel." is said again in the next batch), as when
    # each batch is embedded when its turn comes.
    assert embedded == plain_embedded == sum(len(set(LINES[i : i + 16])) for i in range(0, len(LINES), 16))
    assert counting.most == 1  # the batch ahead never shares the cores with another model call
    # The second batch was embedded while the first was written, not after: two model calls (or, on a busy
    # machine, the third batch's too) before its write.
    assert counting.events[: counting.events.index("write", 1)].count("embed") >= 2
    assert plain_counting.events[: plain_counting.events.index("write", 1)].count("embed") == 1
    assert again.written == 0 and len(counting.texts) == embedded  # a re-run embeds nothing, ahead or not


async def test_a_batch_holds_the_decide_lock_only_after_its_texts_are_embedded(tmp_path, offline_embedder, monkeypatch, small_batches):
    """The model's time for a batch's own texts is spent before the batch takes the agent's decide lock
    (held from its first decision to its settling): a `remember` or an `arcana run` turn waiting on that
    lock beside a large import waited on the model too. The model is slowed so that a batch reaches its
    decisions before its embedding ends unless it waits for it first."""
    import asyncio

    log: list[tuple[str, frozenset[str]]] = []

    class Slow(Counting):
        async def embed(self, texts):
            log.append(("embedding", frozenset(texts)))
            await asyncio.sleep(0.2)
            try:
                return await super().embed(texts)
            finally:
                log.append(("embedded", frozenset(texts)))

    store, federation = await ku.open_case(tmp_path / "slow.db", Slow(offline_embedder), "en", ReconcileSettings())
    decide_many = federation.reconciler.decide_many

    async def deciding(entries):
        log.append(("deciding", frozenset(e.content for e in entries)))
        return await decide_many(entries)

    monkeypatch.setattr(federation.reconciler, "decide_many", deciding)
    report = await remember_many(federation, parse([json.dumps({"content": text}) for text in LINES], "ada"))
    await store.aclose()
    assert report.written == len(LINES) - 1 and report.decisions["update"] >= 1  # control: all decided, Lisbon ends Berlin
    decided = [(at, texts) for at, (what, texts) in enumerate(log) if what == "deciding"]
    assert len(decided) == -(-len(LINES) // 16)  # every batch
    for at, texts in decided:
        for start, (what, embedding) in enumerate(log):
            if what == "embedding" and embedding & texts:
                assert ("embedded", embedding) in log[start:at], f"batch {texts} decided while its texts were embedded"
