"""Semantic search asked for in a home with no embedder says it cannot run (man/recall.md).

`embedding.providers = []` is keyword-only by choice, so the vector layer stays
quiet; `--mode semantic` was then answered by keyword (or by nothing) without a
word, in `arcana recall`, the web view and the MCP recall tool. Each now says so
in one line; the controls are hybrid and keyword in the same home, which stay quiet.
"""

from __future__ import annotations

import json

import pytest
from mcp_client import call, session
from runner import keyword_only, run_arcana

from arcana_cli.ui.reads import ListRequest, Reader
from arcana_cli.ui.targets import Target
from memory.types import RetrievalMode

NOTICE = "semantic search needs an embedder and none is configured"


@pytest.fixture
def home(arcana_home):
    keyword_only(arcana_home)
    done = run_arcana("remember", "The user prefers green tea", "--agent", "ada", home=arcana_home)
    assert done.returncode == 0, done.stderr
    return arcana_home


def test_recall_says_semantic_cannot_run_and_hybrid_stays_quiet(home):
    for query in ("green tea", "hot beverage"):  # a keyword hit, and none: either way it is said
        done = run_arcana("recall", query, "--agent", "ada", "--mode", "semantic", "--json", home=home)
        assert done.returncode == 0 and NOTICE in done.stderr and done.stderr.count(NOTICE) == 1
        assert json.loads(done.stdout)["legs"] == (["keyword"] if query == "green tea" else [])
    for mode in ("hybrid", "keyword"):  # the control: keyword-only by choice is not a degradation
        done = run_arcana("recall", "green tea", "--agent", "ada", "--mode", mode, "--json", home=home)
        assert done.returncode == 0 and NOTICE not in done.stderr
        assert [r["content"] for r in json.loads(done.stdout)["results"]] == ["The user prefers green tea"]


async def test_the_mcp_recall_tool_says_it_in_its_result(home):
    async with session("--agent", "ada") as client:
        error, found = await call(client, "recall", query="green tea", mode="semantic")
        assert not error and found["notices"] == [found["notices"][0]] and NOTICE in found["notices"][0]
        assert [r["content"] for r in found["results"]] == ["The user prefers green tea"]
        error, found = await call(client, "recall", query="green tea", mode="hybrid")  # the control
        assert not error and "notices" not in found and found["results"]


async def test_the_web_view_says_it_on_the_page(home):
    reader = Reader(home)  # the web view's own reads, as its /memories page calls them
    for mode, said in ((RetrievalMode.semantic, True), (RetrievalMode.hybrid, False)):
        listing = await reader.memories(Target("agent", "ada"), ListRequest(text="green tea", mode=mode))
        assert [e.content for e in listing.entries] == ["The user prefers green tea"]
        assert any(NOTICE in n for n in listing.notices) is said, mode
