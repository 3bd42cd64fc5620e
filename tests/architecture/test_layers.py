"""The folders are the layers (man/layout.md): no circles, no upward imports, a light kernel.

The folder-to-folder rules are import-linter contracts in pyproject.toml; this
file runs them and checks what they cannot say: the kernel (the root modules
of ``memory/``) imports only itself, no module imports in a circle, and
importing a kernel module loads nothing but the kernel.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports, counting imports inside functions and under TYPE_CHECKING.
    Parsed once per process: every parametrised case asks for it."""
    files = {module_name(p): p for d in ("memory", "arcana_cli") for p in (ROOT / d).rglob("*.py")}

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in files:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    graph: dict[str, set[str]] = {m: set() for m in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            graph[name] |= {t for t in map(resolve, targets) if t and t != name}
    return graph


def kernel_modules(graph) -> set[str]:
    return {m for m in graph if m.count(".") == 1 and m.startswith("memory.") and not (ROOT / m.replace(".", "/")).is_dir()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), a package's own face excluded."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def edges(v):
        return [w for w in graph[v] if w not in ("memory", "arcana_cli")]

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_layer_contracts_hold():
    done = subprocess.run(["lint-imports", "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 kept, 0 broken" in done.stdout  # control: every contract was read and checked


def test_no_module_imports_in_a_circle():
    graph = import_graph()
    assert circles(graph) == []
    # control: a circle is found when there is one
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_a_kernel_module_imports_only_kernel_modules():
    graph = import_graph()
    kernel = kernel_modules(graph)
    assert {"memory.types", "memory.config", "memory.home", "memory.errors"} <= kernel  # control
    upward = sorted(f"{m} -> {t}" for m in kernel for t in graph[m] if t not in kernel and t != "memory")
    assert upward == []


# One interpreter, forked once per module: each child imports one module into a sys.modules that
# holds no project module yet, as a fresh process would (an interpreter per module cost ~30 starts).
PROBE = """
import importlib, json, os, sys
assert not any(m == "memory" or m.startswith("memory.") for m in sys.modules)
found = {}
for name in sys.argv[1:]:
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        importlib.import_module(name)
        os.write(write, json.dumps(sorted(m for m in sys.modules if m == "memory" or m.startswith("memory."))).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        found[name] = json.loads(pipe.read() or "null")
    os.wait()
print(json.dumps(found))
"""


@functools.cache
def loaded_by_import() -> dict[str, list[str] | None]:
    """Kernel module -> the project modules importing it alone loads."""
    done = subprocess.run([sys.executable, "-c", PROBE, *sorted(kernel_modules(import_graph()))],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", sorted(kernel_modules(import_graph())))
def test_importing_a_kernel_module_loads_only_the_kernel(name):
    loaded = set(loaded_by_import()[name] or ())
    assert name in loaded  # control: the probe saw the import
    outside = sorted(m for m in loaded if m != "memory" and m not in kernel_modules(import_graph()))
    assert outside == []
