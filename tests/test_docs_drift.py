"""Completions, the man page and README's generated blocks must match the live CLI."""

from __future__ import annotations

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
    readme = (docs_gen.ROOT / "README.md").read_text()
    leaves = _leaf_commands()
    assert len(leaves) >= 20
    for node in leaves:
        assert node.help, f"`arcana {node.key}` has no help text"
        assert f'["{node.key}"]' in bash
        assert f"'{node.path[-1]}'" in fish
        assert node.key.replace("-", "\\-") in man
        assert f"`arcana {node.key}" in readme


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


def test_readme_library_example_runs(tmp_path):
    readme = (docs_gen.ROOT / "README.md").read_text()
    section = readme.split("### As a library", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    env = {**__import__("os").environ, "ARCANA_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "The user prefers metric units." in done.stdout
