"""Run the manual's code blocks as a reader would, and say where one fails.

The conventions are documented for writers in man/README.md ("How these pages
are kept true"). In short: every ``sh`` and ``python`` block of a page runs in
order in one fresh home; ``# → TEXT`` after a command is what it prints,
``# → exit N`` its exit code; ``<!-- not run: WHY -->`` right before a fence
skips it; a ``json`` block with ``mcpServers`` is started as a host would.

A page's shell blocks share their state (variables, exports, the working
folder) through files the runner writes between blocks, so each block is one
``bash`` process and a hung background job cannot outlive its block.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

RUN_LANGS = {"sh", "bash", "shell", "python", "py", "json"}
# Transcripts mix commands and output; they cannot be run, so they are refused.
TRANSCRIPT_LANGS = {"console", "shell-session"}
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<why>.+?)\s*-->\s*$")
ARROW = "→"
ELLIPSIS = "…"
# The values a host configuration shows as examples, replaced by the real ones.
PLACEHOLDER_COMMAND = "/home/you/arcana/.venv/bin/arcana"
PLACEHOLDER_HOME = "/home/you/.arcana"
BLOCK_TIMEOUT = 180


class WalkthroughError(AssertionError):
    """A block failed; the message names page, block, line and command."""


@dataclass
class Block:
    page: str
    number: int  # 1-based among the page's fenced blocks
    line: int  # the opening fence's line, 1-based
    lang: str
    text: str
    not_run: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}, block {self.number} (line {self.line})"


@dataclass
class Command:
    line: int  # page line of its first physical line
    text: str
    exit_code: int = 0
    expect: str | None = None


def parse_blocks(page: str, text: str) -> list[Block]:
    """Every fenced block of a Markdown page, with its language and a not-run reason if marked."""
    blocks: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^(```+|~~~+)\s*([\w+-]*)", lines[i])
        if not fence:
            i += 1
            continue
        marker, lang, start = fence.group(1), fence.group(2).lower(), i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(marker):
            body.append(lines[i])
            i += 1
        previous = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        reason = NOT_RUN.match(previous.strip())
        blocks.append(Block(page, len(blocks) + 1, start + 1, lang, "\n".join(body), reason.group("why") if reason else None))
        i += 1
    return blocks


def parse_expectation(comment: str) -> tuple[int, str | None]:
    """``exit N``, ``exit N: TEXT`` or ``TEXT`` (what follows the arrow) -> (exit code, text or None)."""
    comment = comment.strip()
    code = re.match(r"^exit (\d+)(?::\s*(.*))?$", comment)
    if code:
        return int(code.group(1)), (code.group(2) or None)
    return 0, comment or None


def split_commands(block: Block) -> list[Command]:
    """A shell block's commands: one per line, joined over trailing backslashes and heredocs."""
    commands: list[Command] = []
    lines = block.text.split("\n")
    i = 0
    while i < len(lines):
        first = i
        raw = lines[i]
        if not raw.strip() or raw.lstrip().startswith("#"):
            i += 1
            continue
        parts = [raw]
        heredoc = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", raw)
        while parts[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            parts.append(lines[i])
        if heredoc:
            while i + 1 < len(lines) and lines[i].strip() != heredoc.group(1):
                i += 1
                parts.append(lines[i])
        i += 1
        last = parts[-1]
        code, expect = 0, None
        if ARROW in last and "#" in last[: last.index(ARROW)]:
            code, expect = parse_expectation(last[last.index(ARROW) + 1 :])
        commands.append(Command(block.line + 1 + first, "\n".join(parts), code, expect))
    return commands


def find(expected: str, output: str, start: int = 0) -> int:
    """Where ``expected`` ends in ``output`` (whitespace runs equal, ``…`` anything), or -1.

    ``output`` is compared with its whitespace collapsed, and ``start`` counts in
    that collapsed text.
    """
    pieces = [re.escape(" ".join(p.split())) for p in expected.split(ELLIPSIS)]
    found = re.compile(".*?".join(pieces)).search(" ".join(output.split()), start)
    return found.end() if found else -1


def matches(expected: str, output: str) -> bool:
    return find(expected, output) >= 0


def python_expectations(code: str) -> list[str]:
    return [line.split(ARROW, 1)[1].strip() for line in code.split("\n") if line.strip().startswith("#") and ARROW in line]


@dataclass
class Services:
    """What a page may use: a shared embedder for its home's config, and environment variables."""

    embed_url: str | None = None  # an Ollama-compatible /api/embed serving the offline model as 'all-minilm'
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class PageRun:
    """One page's fresh home, its shell state between blocks, and what ran."""

    page: str
    root: Path
    services: Services
    executed: int = 0
    skipped: list[Block] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.arcana_home = self.root / "arcana-home"
        self.state = self.root / "state"
        for folder in (self.home, self.state, self.root / "tmp"):
            folder.mkdir(parents=True, mode=0o700)
        (self.state / "cwd").write_text(str(self.home))
        if self.services.embed_url:
            self.arcana_home.mkdir(mode=0o700)
            config = self.arcana_home / "config.json"
            config.write_text(json.dumps({"embedding": {
                "providers": ["ollama"], "ollama_url": self.services.embed_url, "ollama_model": "all-minilm"}}))
            config.chmod(0o600)
        bin_dir = Path(sys.executable).parent
        if not (bin_dir / "arcana").exists():
            raise WalkthroughError(f"no `arcana` entry point beside {sys.executable}; pip install -e '.[test]'")
        self.arcana = bin_dir / "arcana"
        self.base_env = {
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "ARCANA_HOME": str(self.arcana_home),
            "TMPDIR": str(self.root / "tmp"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            **self.services.env,
        }

    # -- shell -----------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        """The environment the last shell block left (its exports), else the page's own."""
        saved = self.state / "env"
        if not saved.exists():
            return dict(self.base_env)
        pairs = [item.split("=", 1) for item in saved.read_bytes().decode().split("\0") if "=" in item]
        return {k: v for k, v in pairs if not k.startswith("BASH_FUNC_")}

    def _script(self, commands: list[Command]) -> str:
        out = [
            'cd "$(cat "$__W_STATE/cwd")" || exit 96',
            '[ -f "$__W_STATE/vars" ] && . "$__W_STATE/vars"',
            "set -o pipefail",
            "__w_save() {",
            '  pwd > "$__W_STATE/cwd"',
            '  for __w_v in $(compgen -v); do case " $__W_BASE " in *" $__w_v "*) ;; *) declare -p "$__w_v" 2>/dev/null;; esac; done > "$__W_STATE/vars"',
            '  env -0 > "$__W_STATE/env"',
            "}",
        ]
        for n, command in enumerate(commands):
            out += [
                f"printf '\\n@@w-begin {n}\\n'; printf '\\n@@w-begin {n}\\n' >&2",
                command.text,
                "__w_rc=$?",
                f"printf '\\n@@w-end {n} %d\\n' $__w_rc; printf '\\n@@w-end {n}\\n' >&2",
                f"if [ $__w_rc -ne {command.exit_code} ]; then __w_save; exit 97; fi",
            ]
        out.append("__w_save")
        return "\n".join(out) + "\n"

    def run_shell(self, block: Block) -> None:
        commands = split_commands(block)
        script = self.root / f"block-{block.number}.sh"
        script.write_text(self._script(commands))
        env = {**self._env(), "__W_STATE": str(self.state), "__W_BASE": bash_own_variables()}
        stdout, stderr = self._spawn(["bash", str(script)], env, block)
        outs, errs = _split(stdout), _split(stderr)
        for n, command in enumerate(commands):
            if n not in outs.rcs:
                raise WalkthroughError(
                    f"{block.where}: `{command.text}` (line {command.line}) did not run to its end;\n"
                    f"stdout:\n{outs.text.get(n, '')}\nstderr:\n{errs.text.get(n, stderr[-2000:])}"
                )
            rc, printed = outs.rcs[n], outs.text.get(n, "") + errs.text.get(n, "")
            if rc != command.exit_code:
                raise WalkthroughError(
                    f"{block.where}: `{command.text}` (line {command.line}) exited {rc}, expected {command.exit_code}\n"
                    f"stdout:\n{outs.text.get(n, '')}\nstderr:\n{errs.text.get(n, '')}"
                )
            if command.expect and not matches(command.expect, printed):
                raise WalkthroughError(
                    f"{block.where}: `{command.text}` (line {command.line}) did not print {command.expect!r}\n"
                    f"stdout:\n{outs.text.get(n, '')}\nstderr:\n{errs.text.get(n, '')}"
                )
            self.executed += 1

    # -- python ------------------------------------------------------------------

    def run_python(self, block: Block) -> None:
        script = self.root / f"block-{block.number}.py"
        script.write_text("\n" * block.line + block.text + "\n")  # tracebacks name the page's own lines
        cwd = (self.state / "cwd").read_text().strip()
        stdout, stderr, rc = self._spawn_python(script, cwd, block)
        if rc != 0:
            raise WalkthroughError(f"{block.where}: exited {rc}\nstdout:\n{stdout}\nstderr:\n{stderr[-3000:]}")
        position = 0
        for expected in python_expectations(block.text):
            position = find(expected, stdout + stderr, position)
            if position < 0:
                raise WalkthroughError(f"{block.where}: did not print {expected!r} (in order)\nstdout:\n{stdout}\nstderr:\n{stderr[-3000:]}")
        self.executed += 1

    def _spawn_python(self, script: Path, cwd: str, block: Block) -> tuple[str, str, int]:
        out, err = self.root / "py.out", self.root / "py.err"
        with out.open("w") as o, err.open("w") as e:
            proc = subprocess.Popen([sys.executable, str(script)], cwd=cwd, env=self._env(), stdout=o, stderr=e,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            rc = _wait(proc, block)
        return out.read_text(), err.read_text(), rc

    def _spawn(self, argv: list[str], env: dict[str, str], block: Block) -> tuple[str, str]:
        out, err = self.root / "sh.out", self.root / "sh.err"
        with out.open("w") as o, err.open("w") as e:
            proc = subprocess.Popen(argv, env=env, stdout=o, stderr=e, stdin=subprocess.DEVNULL, start_new_session=True)
            _wait(proc, block)
        return out.read_text(errors="replace"), err.read_text(errors="replace")

    # -- json ------------------------------------------------------------------

    def run_json(self, block: Block) -> None:
        try:
            data = json.loads(block.text)
        except ValueError as exc:
            raise WalkthroughError(f"{block.where}: not valid JSON: {exc}") from None
        if isinstance(data, dict) and "mcpServers" in data:
            for name, server in data["mcpServers"].items():
                self._start_like_a_host(block, name, server)
        self.executed += 1

    def _start_like_a_host(self, block: Block, name: str, server: dict) -> None:
        """Start the server exactly as configured (placeholders made real) and use it through a real client."""
        import anyio

        command = server.get("command", "")
        if not os.path.isabs(command):
            raise WalkthroughError(f"{block.where}: server '{name}' runs {command!r}; a host needs an absolute path")
        env = dict(server.get("env") or {})
        if "ARCANA_HOME" not in env:
            raise WalkthroughError(f"{block.where}: server '{name}' has no env block with ARCANA_HOME")
        page_home = self._env().get("ARCANA_HOME", str(self.arcana_home))
        env = {k: v.replace(PLACEHOLDER_HOME, page_home) for k, v in env.items()}
        command = str(self.arcana) if command == PLACEHOLDER_COMMAND else command
        args = list(server.get("args") or [])
        agent = args[args.index("--agent") + 1] if "--agent" in args else None
        # A host's own environment: no PATH of ours, no ARCANA_HOME but the configured one.
        env = {**env, "PATH": "/usr/bin:/bin", "HOME": str(self.home)}
        content = f"The walkthrough stored this through {name} over MCP."
        try:
            anyio.run(_mcp_round_trip, command, args, env, content, self.root / f"mcp-{name}.log")
        except Exception as exc:  # noqa: BLE001 - any failure of the host's start is the block's failure
            log = (self.root / f"mcp-{name}.log").read_text(errors="replace")[-2000:]
            raise WalkthroughError(f"{block.where}: server '{name}' failed as a host starts it: {exc!r}\nstderr:\n{log}") from None
        listed = subprocess.run([str(self.arcana), "memory", "list", "--agent", agent, "--json"], env=self._env(),
                                capture_output=True, text=True, timeout=60)
        if content not in listed.stdout:
            raise WalkthroughError(f"{block.where}: what server '{name}' stored is not in the page's home ({page_home})")

    # -- a page ----------------------------------------------------------------

    def run(self, blocks: list[Block]) -> None:
        for block in blocks:
            if block.lang in TRANSCRIPT_LANGS:
                raise WalkthroughError(f"{block.where}: a {block.lang} transcript cannot run; write an sh block with `# →` comments")
            if block.lang not in RUN_LANGS:
                continue
            if block.not_run:
                self.skipped.append(block)
                continue
            if block.lang in ("python", "py"):
                self.run_python(block)
            elif block.lang == "json":
                self.run_json(block)
            else:
                self.run_shell(block)


async def _mcp_round_trip(command: str, args: list[str], env: dict[str, str], content: str, log: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args, env=env)
    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"remember", "recall"} <= tools, f"tools: {sorted(tools)}"
            stored = await client.call_tool("remember", {"content": content})
            assert not stored.is_error, stored.content[0].text
            found = await client.call_tool("recall", {"query": "what did the walkthrough store over MCP?"})
            assert not found.is_error and content in found.content[0].text, found.content[0].text


@dataclass
class _Stream:
    text: dict[int, str]
    rcs: dict[int, int]


_MARK = re.compile(r"\n?@@w-(begin|end) (\d+)(?: (\d+))?\n")


def _split(stream: str) -> _Stream:
    """Per-command output from the begin/end markers the script prints on both streams."""
    text: dict[int, str] = {}
    rcs: dict[int, int] = {}
    current, start = None, 0
    for mark in _MARK.finditer(stream):
        kind, n = mark.group(1), int(mark.group(2))
        if kind == "begin":
            current, start = n, mark.end()
        elif current == n:
            text[n] = stream[start : mark.start()]
            if mark.group(3) is not None:
                rcs[n] = int(mark.group(3))
            current = None
    if current is not None:
        text[current] = stream[start:]
    return _Stream(text, rcs)


def _wait(proc: subprocess.Popen, block: Block) -> int:
    """Wait for the block, then end whatever it left running in its process group."""
    try:
        return proc.wait(timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise WalkthroughError(f"{block.where}: still running after {BLOCK_TIMEOUT} s") from None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


_OWN: str | None = None


def bash_own_variables() -> str:
    """Names bash defines by itself: never carried between blocks (many are read-only)."""
    global _OWN
    if _OWN is None:
        done = subprocess.run(["bash", "-c", "compgen -v"], env={}, capture_output=True, text=True, check=True)
        _OWN = " ".join(done.stdout.split() + ["__w_rc", "__w_v", "__W_STATE", "__W_BASE"])
    return _OWN


def run_page(path: Path, root: Path, services: Services, *, name: str | None = None) -> PageRun:
    """Run every runnable block of the page at ``path`` in a fresh home under ``root``."""
    run = PageRun(name or path.name, root, services)
    run.run(parse_blocks(run.page, path.read_text(encoding="utf-8")))
    return run


def needs(text: str) -> set[str]:
    """The services a page's blocks use, by the variables they read."""
    return {var for var in ("OLLAMA_URL", "TEAM_PG", "GLOBAL_PG") if re.search(rf"\$\{{?{var}\b|\b{var}\b", text)}
