"""Every shell and Python block of README.md and man/*.md runs as written (tests/support/walkthrough.py).

One test per page: its blocks run in order in a fresh ARCANA_HOME and HOME,
through the installed `arcana` in real processes, with expected output and
exit codes checked where the page states them. The runner's own behaviour is
tested first, on small pages written here, so a runner that passes everything
fails.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import docs_gen
import walkthrough
from walkthrough import Block, PageRun, Services, WalkthroughError, parse_blocks, split_commands

PAGES = docs_gen.pages()
MAX_NOT_RUN = 8


@pytest.fixture(scope="session")
def shared_embedder(offline_embedder):
    """The offline model loaded once, served to every page's home as Ollama's 'all-minilm' (same family)."""
    from embed_server import LoopbackEmbedServer

    def embed(texts):
        return asyncio.run(offline_embedder.embed(list(texts)))

    with LoopbackEmbedServer({"all-minilm": embed}) as server:
        yield server


def _is_readme(page: Path) -> bool:
    return page == docs_gen.ROOT / "README.md"


def _walk(page: Path, root: Path, embed_url: str | None, databases) -> PageRun:
    """Run one page with the services its blocks name; raises WalkthroughError where it fails."""
    from contextlib import ExitStack

    blocks = parse_blocks(str(page.relative_to(docs_gen.ROOT)), page.read_text(encoding="utf-8"))
    wanted = walkthrough.needs("\n".join(b.text for b in blocks if not b.not_run))
    with ExitStack() as stack:
        env = {}
        if "OLLAMA_URL" in wanted:
            from model_server import LoopbackModelServer

            env["OLLAMA_URL"] = stack.enter_context(LoopbackModelServer()).url
        for var in sorted(wanted & {"TEAM_PG", "GLOBAL_PG"}):
            env[var] = databases(page, var)
        run = PageRun(blocks[0].page if blocks else page.name, root, Services(embed_url=embed_url, env=env))
        run.run(blocks)
    return run


def _selected_pages(session) -> list[Path]:
    return [item.callspec.params["page"] for item in session.items
            if getattr(item, "originalname", "") == "test_page_walks_through_as_written"]


@pytest.fixture(scope="session")
def walkthroughs(request, tmp_path_factory):
    """Every selected page started at once, two at a time (pages are independent: one home each).

    A page's test waits for its own result, so a failure is reported on that page.
    """
    from concurrent.futures import ThreadPoolExecutor

    pages = _selected_pages(request.session)
    texts = {page: page.read_text(encoding="utf-8") for page in pages}
    embed_url = request.getfixturevalue("shared_embedder").url if any(not _is_readme(p) for p in pages) else None
    server, no_server = None, None
    if any(walkthrough.needs(text) & {"TEAM_PG", "GLOBAL_PG"} for text in texts.values()):
        try:
            server = request.getfixturevalue("pg_server")
        except (pytest.skip.Exception, pytest.fail.Exception) as outcome:
            no_server = outcome

    def databases(page: Path, var: str) -> str:
        if server is None:
            raise no_server
        url = server.fresh_database(f"walk_{page.stem.replace('-', '_')}_{var.lower()}")
        return url.replace("postgresql://postgres@", "postgresql://postgres:PASSWORD@")  # trust auth ignores it

    walkthrough.bash_own_variables()  # computed once, before the threads
    longest_first = sorted(pages, key=lambda p: -texts[p].count("\n```"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        # The README runs with the default in-process model, as a newcomer gets it; the pages share one copy.
        futures = {page: pool.submit(_walk, page, tmp_path_factory.mktemp(page.stem), None if _is_readme(page) else embed_url,
                                     databases) for page in longest_first}
        yield futures


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(docs_gen.ROOT)) for p in PAGES])
def test_page_walks_through_as_written(page, walkthroughs):
    blocks = parse_blocks(page.name, page.read_text(encoding="utf-8"))
    if not any(b.lang in walkthrough.RUN_LANGS and not b.not_run for b in blocks):
        pytest.skip("no runnable blocks")
    run = walkthroughs[page].result()
    assert run.executed > 0


def test_not_run_markers_are_rare_and_say_why():
    marked = [b for page in PAGES for b in parse_blocks(page.name, page.read_text(encoding="utf-8")) if b.not_run]
    assert all(len(b.not_run) > 10 for b in marked), [b.where for b in marked]
    assert len(marked) <= MAX_NOT_RUN, [f"{b.where}: {b.not_run}" for b in marked]


# -- the runner itself ---------------------------------------------------------


def _page(tmp_path: Path, text: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    return path


def _run(tmp_path: Path, text: str) -> PageRun:
    return walkthrough.run_page(_page(tmp_path, text), tmp_path / "run", Services(), name="page.md")


def test_a_failing_command_names_page_block_line_and_command(tmp_path):
    text = "# T\n\n```sh\narcana --version\n```\n\nprose\n\n```sh\ntrue\nsh -c 'echo oops >&2; exit 3'\necho never\n```\n"
    with pytest.raises(WalkthroughError) as failed:
        _run(tmp_path, text)
    message = str(failed.value)
    assert "page.md, block 2 (line 9)" in message and "(line 11)" in message
    assert "`sh -c 'echo oops >&2; exit 3'`" in message and "exited 3, expected 0" in message
    assert "oops" in message and "never" not in message  # what it printed; nothing ran after it


def test_a_stated_exit_code_and_output_are_checked(tmp_path):
    ok = "```sh\nsh -c 'echo no such thing; exit 3'   # → exit 3: no such\necho 'hello world'  # a greeting → hello … world\n```\n"
    assert _run(tmp_path / "ok", ok).executed == 2  # positive control
    wrong_text = "```sh\necho 'hello world'  # → goodbye\n```\n"
    with pytest.raises(WalkthroughError, match="did not print 'goodbye'"):
        _run(tmp_path / "text", wrong_text)
    wrong_code = "```sh\nsh -c 'exit 3'   # → exit 2\n```\n"
    with pytest.raises(WalkthroughError, match="exited 3, expected 2"):
        _run(tmp_path / "code", wrong_code)


def test_a_pipeline_fails_when_any_part_fails(tmp_path):
    with pytest.raises(WalkthroughError, match="exited 3"):
        _run(tmp_path, "```sh\nsh -c 'exit 3' | cat\n```\n")


def test_state_carries_between_blocks_of_a_page_and_home_is_fresh(tmp_path):
    text = (
        "```sh\nname=alice\nexport COLOUR=blue\nmkdir sub && cd sub\necho \"$ARCANA_HOME\" > ../home.txt\n```\n\n"
        "```sh\necho \"$name $COLOUR $(basename \"$PWD\")\"   # → alice blue sub\n```\n\n"
        "```python\nimport os\nprint(os.environ['COLOUR'], os.path.basename(os.getcwd()))\n# → blue sub\n```\n"
    )
    run = _run(tmp_path, text)
    assert run.executed == 6
    home = Path((run.home / "home.txt").read_text().strip())
    assert home == run.arcana_home and run.home != Path.home()


def test_python_expectations_are_checked_in_order(tmp_path):
    assert _run(tmp_path / "ok", "```python\nprint('one'); print('two')\n# → one\n# → two\n```\n").executed == 1
    with pytest.raises(WalkthroughError, match="did not print 'one'"):
        _run(tmp_path / "order", "```python\nprint('two'); print('one')\n# → two\n# → one\n# → one\n```\n")
    with pytest.raises(WalkthroughError, match="exited 1"):
        _run(tmp_path / "raise", "```python\nraise SystemExit(1)\n```\n")


def test_a_marked_block_is_skipped_and_counted(tmp_path):
    text = "<!-- not run: needs a real model provider -->\n```sh\nexit 1\n```\n\n```sh\ntrue\n```\n"
    run = _run(tmp_path, text)
    assert run.executed == 1 and [b.not_run for b in run.skipped] == ["needs a real model provider"]


def test_a_transcript_block_is_refused_not_skipped(tmp_path):
    with pytest.raises(WalkthroughError, match="transcript cannot run"):
        _run(tmp_path, "```console\n$ arcana --version\narcana 0.1.0\n```\n")


def test_commands_join_continuations_and_heredocs():
    block = Block("p", 1, 10, "sh", "echo a \\\n  b   # → a b\ncat <<'EOF'\nx → y\nEOF\n# a comment\n\necho c")
    commands = split_commands(block)
    assert [c.line for c in commands] == [11, 13, 18]
    assert commands[0].expect == "a b" and commands[1].expect is None and commands[1].text.endswith("EOF")


def test_a_host_snippet_needs_an_absolute_command_and_an_env_block(tmp_path):
    relative = {"mcpServers": {"a": {"command": "arcana", "args": ["mcp", "--agent", "x"], "env": {"ARCANA_HOME": "/h"}}}}
    with pytest.raises(WalkthroughError, match="absolute path"):
        _run(tmp_path / "rel", f"```json\n{json.dumps(relative)}\n```\n")
    no_env = {"mcpServers": {"a": {"command": walkthrough.PLACEHOLDER_COMMAND, "args": ["mcp", "--agent", "x"]}}}
    with pytest.raises(WalkthroughError, match="no env block"):
        _run(tmp_path / "env", f"```json\n{json.dumps(no_env)}\n```\n")
    with pytest.raises(WalkthroughError, match="not valid JSON"):
        _run(tmp_path / "bad", "```json\n{\"a\": 1,}\n```\n")
