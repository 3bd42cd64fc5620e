"""Completions, the man page and the manual's generated blocks match the live CLI; its links resolve."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import docs_gen
from arcana_cli.app import app
import typer.main


def test_generated_docs_are_current():
    stale = [str(p.relative_to(docs_gen.ROOT)) for p in docs_gen.stale()]
    assert stale == [], f"regenerate with `python tests/docs_gen.py`: {stale}"


def _leaf_commands():
    tree = docs_gen._tree()
    return [n for n in docs_gen._walk(tree) if n.path and not n.children]


def test_every_command_has_help_and_is_in_every_artifact():
    bash = (docs_gen.ROOT / "completions" / "arcana.bash").read_text()
    fish = (docs_gen.ROOT / "completions" / "arcana.fish").read_text()
    man = (docs_gen.ROOT / "man" / "arcana.1").read_text()
    listing = (docs_gen.ROOT / "man" / "commands.md").read_text()
    leaves = _leaf_commands()
    assert len(leaves) >= 20
    for node in leaves:
        assert node.help, f"`arcana {node.key}` has no help text"
        assert f'["{node.key}"]' in bash
        assert f"'{node.path[-1]}'" in fish
        assert node.key.replace("-", "\\-") in man
        assert f"`arcana {node.key}" in listing


def test_every_option_has_help():
    command = typer.main.get_command(app)
    for node in docs_gen._walk(docs_gen._tree(command)):
        for opt in node.options:
            assert opt.help, f"`arcana {node.key}` option {opt.names} has no help"


def _complete(line: str) -> list[str]:
    """Drive the generated bash completion the way bash would."""
    words = line.split(" ")
    script = f"""
source {docs_gen.ROOT / 'completions' / 'arcana.bash'}
COMP_WORDS=({' '.join(repr(w) for w in words)})
COMP_CWORD={len(words) - 1}
_arcana
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    return result.stdout.split()


@pytest.mark.skipif(sys.platform != "linux", reason="bash completion exercised on Linux")
def test_bash_completion_completes_subcommands_options_and_choices():
    assert "memory" in _complete("arcana me")
    assert _complete("arcana memory li") == ["list"]
    assert "--archived" in _complete("arcana memory list --ar")
    assert _complete("arcana memory list --type ") == ["episodic", "semantic", "procedural", "preference"]
    # positive control: 'list' under agent is a different command with different options
    assert "--archived" not in _complete("arcana agent list --")


# -- the manual's pages and links ---------------------------------------------------

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    prose = _FENCE.sub("", text)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", prose, re.M)}


def _links(text: str) -> list[str]:
    return _LINK.findall(_FENCE.sub("", text))


def test_every_manual_page_is_in_the_index():
    index = (docs_gen.ROOT / "man" / "README.md").read_text()
    linked = {target.split("#")[0] for target in _links(index)}
    pages = {p.name for p in (docs_gen.ROOT / "man").glob("*.md")} - {"README.md"}
    assert len(pages) >= 12
    assert pages - linked == set(), "man/README.md must link every page"


def test_every_relative_link_and_anchor_resolves():
    checked = 0
    for page in docs_gen.pages():
        for target in _links(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            where = f"{page.relative_to(docs_gen.ROOT)}: ({target})"
            assert dest.exists(), f"{where} points at a missing file"
            if anchor:
                assert anchor in _anchors(dest.read_text(encoding="utf-8")), f"{where}: no such heading"
            checked += 1
    assert checked > 50  # positive control: the links were found at all


def test_the_link_checker_sees_a_broken_anchor(tmp_path):
    """Positive control for the slug rule: a real heading matches, a misspelt one does not."""
    text = "# Ingest: `remember --from`\n\n```sh\n# not a heading\n```\n"
    assert _anchors(text) == {"ingest-remember---from"}
    assert "not-a-heading" not in _anchors(text)
