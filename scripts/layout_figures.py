"""The layout figures of ARCHITECTURE.md ("Measurements"), read from the imports with ``ast`` (standard library only).

    python scripts/layout_figures.py [-v]

Prints the lines per package, the import statements that run sideways between two agent kinds, those that run
upward (an agent into ``jobs/`` or the registry; the library below the agents, ``training/`` and ``networks/``, into
an agent), private names imported from another package, module cycles (lazy imports included) and package pairs
that import each other. A statement counts once however many names it imports; "lazy" means inside a function.
``-v`` lists each import counted.
"""

from __future__ import annotations

import ast
import collections
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class Import(NamedTuple):
    source: str  # the importing module
    target: str  # the module (or package) named by the statement
    lazy: bool  # inside a function
    names: tuple[str, ...]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def agent_kind(module: str) -> str | None:
    """The ``agents/<kind>`` package of a module, or None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "agents" else None


def package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


def imports(path: Path) -> list[Import]:
    source, tree = module_name(path), ast.parse(path.read_text())
    lazy = {id(node) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(fn)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = source.split(".")[: len(source.split(".")) - node.level + (path.name == "__init__.py")]
                target = ".".join(base + [node.module or ""]).strip(".")
            else:
                target = node.module or ""
            if target.startswith("rlrepro"):
                found.append(Import(source, target, id(node) in lazy, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Import):
            found += [Import(source, a.name, id(node) in lazy, ()) for a in node.names if a.name.startswith("rlrepro")]
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def main() -> None:
    verbose = "-v" in sys.argv
    paths = sorted((ROOT / "rlrepro").rglob("*.py"))
    lines = collections.Counter()
    for path in paths:
        parts = path.relative_to(ROOT).parts
        lines[parts[1] if len(parts) > 2 else "(top-level modules)"] += len(path.read_text().splitlines())
    print("lines:", sum(lines.values()), "; ".join(f"{k} {v}" for k, v in lines.most_common()))

    rows = [row for path in paths for row in imports(path)]
    sideways = [r for r in rows if agent_kind(r.source) and agent_kind(r.target) and
                agent_kind(r.source) != agent_kind(r.target)]
    upward = {
        "agents -> jobs": [r for r in rows if agent_kind(r.source) and r.target.startswith("rlrepro.jobs")],
        "agents -> registry": [r for r in rows if agent_kind(r.source) and r.target == "rlrepro.agents.registry"],
        "training/networks -> agents": [r for r in rows if package(r.source) in ("rlrepro.training", "rlrepro.networks")
                                        and agent_kind(r.target)],
    }
    for name, found in (("sideways between agent kinds", sideways), *upward.items()):
        print(f"{name}: {len(found)} (lazy {sum(r.lazy for r in found)})")
        for r in found if verbose else ():
            print("   ", r.source, "->", r.target, "(lazy)" if r.lazy else "")
    private = [(r.source, r.target, name) for r in rows for name in r.names
               if name.startswith("_") and not name.startswith("__")
               and (package(r.source) != package(r.target) or agent_kind(r.source) != agent_kind(r.target))]
    print("private names imported from another package:", len(private))
    for source, target, name in private:
        print("   ", source, "<-", target, name)

    modules = {module_name(p) for p in paths}

    def resolve(target: str) -> str:
        while target and target not in modules:
            target = target.rsplit(".", 1)[0] if "." in target else ""
        return target

    graph: dict[str, set[str]] = collections.defaultdict(set)
    for r in rows:
        if (target := resolve(r.target)) and target != r.source:
            graph[r.source].add(target)
    found = cycles(graph)
    print("module cycles (lazy imports included):", len(found))
    for component in found:
        print("   ", " <-> ".join(component))
    pairs = {(package(s), package(t)) for s, targets in graph.items() for t in targets if package(s) != package(t)}
    mutual = sorted({tuple(sorted(p)) for p in pairs if (p[1], p[0]) in pairs})
    print("package pairs that import each other:", len(mutual), ", ".join(f"{a}/{b}" for a, b in mutual))


if __name__ == "__main__":
    main()
