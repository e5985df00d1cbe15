"""The layering of `python/perflab`, held by its import graph (see docs/architecture.md).

The graph is read from the source with `ast`, never by importing anything. Every import
counts, wherever it is written:

* at module level and inside functions: a lazy import (kept lazy so that `perflab --help`
  loads no heavy library) is still a dependency — it runs whenever the function does;
* under ``if TYPE_CHECKING:``: an annotation names a definition of the other module, so
  this module cannot be read, type-checked or moved without it, and `typing.get_type_hints`
  resolves it at run time. A ``TYPE_CHECKING`` block is also the usual way to hide a
  cycle from the interpreter, which is what this test is for; counting it means a cycle is
  removed by moving code, not hidden;
* ``importlib.import_module(...)``: the packages' PEP 562 loaders (``__getattr__`` that
  imports a name's home on first use). A literal name counts; a computed one counts as
  every module that the literal strings of that file complete it to (the loader's table).

Rules: (a) no cycle between modules; (b) an import between packages goes down `LAYERS`;
(c) `stats/` imports nothing of perflab outside itself and does no I/O.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "perflab"

#: The layers of perflab, lowest first; each imports only layers before it. A tuple holds
#: layers side by side: neither imports the other. A layer is a top-level module or
#: package of perflab (``perflab`` itself is the package's ``__init__.py``: the public facade,
#: ``perflab.open``/``perflab.run``, loaded from `api` on first use).
LAYERS: list[str | tuple[str, ...]] = [
    # user errors; durations ("30s"); the version (perflab._version); the Rust bindings
    # and the values of stored results (perflab.records: experiments, metrics, runs)
    ("errors", "durations", "_version", "_native", "records"),
    # the machines perflab drives: this one, hosts over SSH, devices booted from here |
    # the commits a bisect walks: a git range and the search's place in it
    ("hosts", "commits"),
    "stats",  # pure statistics: no I/O, no other perflab code
    ("store", "model"),  # the SQLite store | the cross-platform model (pure)
    "workloads",  # load generator config/engine/results, probes, output parsers
    "observe",  # what is watched while a run runs: perf profiles and counters, /proc monitors
    "spec",  # the experiment file: schema, loading, validation (knows the workloads)
    "plan",  # the ordered run list of a spec
    "analysis",  # the question side: request → answer; datasets, comparisons (calls stats)
    "platform",  # CPU topology, core picking, probe results read back from a store
    "importers",  # benchmark tools' result files read (the CSV import reads text with them)
    ("execution", "csv_import", "report"),  # execute a plan | import CSVs | render results
    "api",  # the Python API: a store as DataFrames, typed comparisons, run(), export
    # the two front doors: the command line | the package's facade (perflab.open, perflab.run)
    ("cli", "perflab"),
    "__main__",  # python -m perflab
]

#: Modules `stats/` may not import: files, processes, sockets, the database, logging.
IO_MODULES = frozenset(
    {
        "asyncio",
        "dbm",
        "fileinput",
        "glob",
        "http",
        "io",
        "logging",
        "mmap",
        "os",
        "pathlib",
        "pickle",
        "shelve",
        "shutil",
        "socket",
        "sqlite3",
        "subprocess",
        "tempfile",
        "urllib",
    }
)
#: Built-ins that read or write (a file, the terminal).
IO_BUILTINS = frozenset({"open", "print", "input"})
#: Methods that read or write files (numpy's loaders and savers, pathlib's readers).
IO_METHODS = frozenset(
    {
        "fromfile",
        "genfromtxt",
        "load",
        "loadtxt",
        "memmap",
        "open",
        "read_bytes",
        "read_text",
        "save",
        "savetxt",
        "savez",
        "savez_compressed",
        "tofile",
        "write_bytes",
        "write_text",
    }
)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (the package's __init__ for a name it defines)
    line: int
    typing: bool = False  # under ``if TYPE_CHECKING:``: names a type for annotations only

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}"


@dataclass(frozen=True)
class Graph:
    modules: dict[str, Path]  # dotted name → file
    imports: list[Import]

    def edges(self) -> dict[str, dict[str, int]]:
        """source → {target: first line}."""
        out: dict[str, dict[str, int]] = {m: {} for m in self.modules}
        for i in sorted(self.imports, key=lambda i: (i.source, i.line)):
            out[i.source].setdefault(i.target, i.line)
        return out


# -- the graph


def find_modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root`` (a stub without its .py: a native module)."""
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py*")):
        if path.suffix not in (".py", ".pyi") or "__pycache__" in path.parts:
            continue
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        if path.suffix == ".py" or name not in modules:
            modules[name] = path
    return modules


def build_graph(root: Path) -> Graph:
    modules = find_modules(root)
    imports: list[Import] = []
    for name, path in modules.items():
        if path.suffix == ".py":
            source = path.read_text(encoding="utf-8")
            imports += imports_of(name, path.name == "__init__.py", source, modules)
    return Graph(modules, imports)


def imports_of(name: str, is_package: bool, source: str, modules: Iterable[str]) -> list[Import]:
    """The imports of module ``name`` of the package (``modules``): every one, anywhere."""
    known = set(modules)
    top = name.split(".")[0]
    package = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(source)
    strings = [
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    typing_lines = _type_checking_lines(tree)
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):  # every node: function bodies, `if TYPE_CHECKING:` blocks
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for a in node.names:
                sub = f"{module}.{a.name}"
                found.append((sub if sub in known else module, node.lineno))
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((arg.value, node.lineno))
            else:  # a computed name: its literal prefix, completed by the file's strings
                prefix = _literal_prefix(arg)
                found += [(prefix + s, node.lineno) for s in strings if prefix + s in known]
    out: list[Import] = []
    for module, line in found:
        if module != top and not module.startswith(top + "."):
            continue
        while module not in known and "." in module:
            module = module.rpartition(".")[0]  # a name defined in a module: that module
        found_import = Import(name, module, line, line in typing_lines)
        if module in known and module != name and found_import not in out:
            out.append(found_import)
    return out


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """The lines of the module's ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        named = isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
        if named or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            assert isinstance(node, ast.If)
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def _literal_prefix(node: ast.expr) -> str:
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return ""


# -- the checks


def find_cycles(graph: Graph) -> list[str]:
    """The cycles between modules, as chains of imports: ``a:12 → b:3 → a`` (a, at line 12,
    imports b, which at line 3 imports a)."""
    edges = graph.edges()
    return [
        " → ".join([*(f"{a}:{edges[a][b]}" for a, b in itertools.pairwise(path)), path[0]])
        for path in _cycles(edges)
    ]


def _cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """For each group of nodes that reach each other, the shortest cycle through each of
    its nodes (``[a, b, a]``), each cycle once."""
    cycles = []
    for group in _strongly_connected(edges):
        seen: set[tuple[str, ...]] = set()
        for start in sorted(group):
            path = _shortest_path_back(edges, start, group)
            turn = path.index(min(path))  # the same cycle seen from another node: once
            key = tuple(path[turn:-1] + path[:turn])
            if key not in seen:
                seen.add(key)
                cycles.append(path)
    return cycles


def _strongly_connected(edges: dict[str, dict[str, int]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative; groups of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in edges:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.add(w)
                    if w == v:
                        break
                if len(group) > 1:
                    groups.append(group)
    return sorted(groups, key=min)


def _shortest_path_back(edges: dict[str, dict[str, int]], start: str, group: set[str]) -> list:
    """start → … → start within ``group`` (breadth first: the shortest cycle through start)."""
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v]):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if w in group and w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")


def layer_of(module: str) -> str:
    """``perflab.spec.load`` → ``spec``; ``perflab.errors`` → ``errors``; ``perflab`` →
    ``perflab``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(graph: Graph, layers: Sequence[str | tuple[str, ...]]) -> list[str]:
    """Imports between layers that do not go down ``layers`` (and modules in no layer)."""
    rank = {
        name: i
        for i, entry in enumerate(layers)
        for name in (entry if isinstance(entry, tuple) else (entry,))
    }
    problems = [
        f"{m}: its layer '{layer_of(m)}' is not in LAYERS (place it in the order)"
        for m in sorted(graph.modules)
        if layer_of(m) not in rank
    ]
    for i in sorted(graph.imports, key=lambda i: (i.source, i.line)):
        a, b = layer_of(i.source), layer_of(i.target)
        if a == b or a not in rank or b not in rank:
            continue
        if rank[b] > rank[a]:
            problems.append(f"{i}: '{a}' may not import '{b}', a layer above it")
        elif rank[b] == rank[a]:
            problems.append(f"{i}: '{a}' and '{b}' are side by side; neither imports the other")
    return problems


def package_cycles(graph: Graph) -> list[str]:
    """Cycles between layers (packages), each edge named by one import that makes it."""
    edges: dict[str, dict[str, int]] = {layer_of(m): {} for m in graph.modules}
    first: dict[tuple[str, str], Import] = {}
    for i in sorted(graph.imports, key=lambda i: (i.source, i.line)):
        a, b = layer_of(i.source), layer_of(i.target)
        if a != b:
            edges[a].setdefault(b, i.line)
            first.setdefault((a, b), i)
    return [
        " → ".join(path)
        + " ("
        + "; ".join(str(first[a, b]) for a, b in itertools.pairwise(path))
        + ")"
        for path in _cycles(edges)
    ]


def imports_outside(
    graph: Graph, layer: str, allowed: frozenset[str], *, types_anywhere: bool = False
) -> list[str]:
    """Imports of ``layer`` that reach a layer (or a module, dotted under the package:
    ``store.location``) not in ``allowed`` (itself always is);
    ``types_anywhere``: an import for annotations only (``TYPE_CHECKING``) may reach any
    layer below (the layering rule holds it) — naming a type is not calling its code."""
    return [
        f"{i}: {layer}/ may import only {', '.join(sorted(allowed))}"
        + (" (any type, under TYPE_CHECKING)" if types_anywhere else "")
        for i in sorted(graph.imports, key=lambda i: (i.source, i.line))
        if layer_of(i.source) == layer
        and layer_of(i.target) not in allowed | {layer}
        and i.target.partition(".")[2] not in allowed
        and not (types_anywhere and i.typing)
    ]


def impure_stats(graph: Graph, layer: str = "stats") -> list[str]:
    """What a pure layer does beyond computing: imports of other perflab code, of I/O
    modules, and calls that read or write (a reasonable static check, not a proof)."""
    problems = [
        f"{i}: {layer}/ imports nothing of perflab outside itself"
        for i in graph.imports
        if layer_of(i.source) == layer and layer_of(i.target) != layer
    ]
    for name, path in sorted(graph.modules.items()):
        if layer_of(name) == layer and path.suffix == ".py":
            problems += [f"{name}:{line}: {what}" for line, what in io_uses(path.read_text())]
    return problems


def io_uses(source: str) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        out += [(node.lineno, f"imports {n} (I/O)") for n in names if n.split(".")[0] in IO_MODULES]
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in IO_BUILTINS:
                out.append((node.lineno, f"calls {f.id}() (I/O)"))
            elif isinstance(f, ast.Attribute) and f.attr in IO_METHODS:
                out.append((node.lineno, f"calls .{f.attr}() (file I/O)"))
    return out


# -- perflab


GRAPH = build_graph(PACKAGE)


def _report(title: str, problems: list[str]) -> str:
    return title + ":\n  " + "\n  ".join(problems)


def test_the_graph_is_read():
    """The reader sees the package: lazy, TYPE_CHECKING and PEP 562 imports included."""
    edges = GRAPH.edges()
    assert len(GRAPH.modules) > 100 and "perflab._native" in GRAPH.modules
    assert "perflab.execution.runner" in edges["perflab.api.running"]  # inside a function
    assert "perflab.spec.load" in edges["perflab.spec"]  # TYPE_CHECKING and import_module
    assert "perflab.store.db" in edges["perflab.store"]  # the loader's table
    assert "perflab.cli.run" in edges["perflab.cli"]  # import_module(f"perflab.cli.{name}")


def test_every_module_is_in_a_layer():
    placed = {n for e in LAYERS for n in (e if isinstance(e, tuple) else (e,))}
    assert {layer_of(m) for m in GRAPH.modules} == placed


def doc_layers(text: str) -> list[tuple[str, ...]]:
    """The numbered layer list of docs/architecture.md (after "The same order, lowest
    first"): each item's layers, the backticked names that open it and follow a " · ",
    as `LAYERS` names them (``errors.py`` → ``errors``, ``__init__.py`` → ``perflab``)."""
    section = text.split("The same order, lowest first", 1)[1].split("\n\n", 2)[1]
    items = re.split(r"^\d+\. ", section, flags=re.M)[1:]
    names = {"__init__.py": "perflab"}
    out = []
    for item in items:
        heads = [item, *item.split(" · ")[1:]]
        found = [re.match(r"\s*`([^`]+)`", h) for h in heads]
        out.append(
            tuple(
                names.get(m[1], m[1].removesuffix(".py").removesuffix("/"))
                for m in found
                if m is not None
            )
        )
    return out


def test_the_architecture_page_lists_the_layers_in_their_order():
    """docs/architecture.md's list is `LAYERS`: a package added, moved or dropped changes
    both, or this fails naming the first difference."""
    doc = doc_layers((PACKAGE.parents[1] / "docs" / "architecture.md").read_text())
    want = [e if isinstance(e, tuple) else (e,) for e in LAYERS]
    for i, (d, w) in enumerate(itertools.zip_longest(doc, want), 1):
        assert d == w, f"docs/architecture.md layer {i}: {d}, LAYERS: {w}"


def test_the_page_check_sees_a_missing_layer():
    text = "The same order, lowest first:\n\n1. `errors.py` · `durations.py`;\n2. `hosts/` — x\n"
    assert doc_layers(text) == [("errors", "durations"), ("hosts",)]
    assert doc_layers(text.replace(" · `durations.py`", "")) == [("errors",), ("hosts",)]


def test_no_cycle_between_modules():
    cycles = find_cycles(GRAPH)
    assert not cycles, _report("import cycles (module:line imports the next)", cycles)


def test_no_cycle_between_packages():
    cycles = package_cycles(GRAPH)
    assert not cycles, _report("cycles between layers", cycles)


def test_imports_go_down_the_layers():
    problems = upward_imports(GRAPH, LAYERS)
    assert not problems, _report(
        "imports against the layer order (tests/test_architecture.py: LAYERS)", problems
    )


#: What the command line may import: the use-case layer (`api/`: the one orchestrator of
#: what perflab does) and the renderers (`report/`), besides its own and the basic values.
#: What cli/ may call: the use cases (api/), questions about stored runs asked and
#: answered (analysis/: `request`, `answer`), the renderers (report/), the leaves (with
#: the values of stored results, `records`), and what it shows or reads as it is, with no
#: use case around it — this machine's CPUs and checks (platform/), the pure model
#: (model/), an experiment file loaded (spec/), what a --store value names and the
#: methods' option choices. A function in api/ that only forwarded to one of these would
#: exist for this rule alone. Types for its annotations it takes from where they are
#: defined (under TYPE_CHECKING), never through a re-export.
CLI_MAY_IMPORT = frozenset(
    {
        "api",
        "analysis",
        "report",
        "errors",
        "durations",
        "_version",
        "records",
        "platform",
        "model",
        "spec",
        "store.location",
        "stats.options",  # the methods' option choices, for argparse
    }
)


def test_the_command_line_calls_only_the_use_cases_and_the_renderers():
    problems = imports_outside(GRAPH, "cli", CLI_MAY_IMPORT, types_anywhere=True)
    assert not problems, _report(
        "cli/ parses, calls api/ or analysis/, prints with report/", problems
    )


def test_the_report_reads_no_store():
    """The report lays out what the use-case layer read (`perflab.api.reporting`)."""
    problems = [p for p in imports_outside(GRAPH, "report", frozenset(_BELOW_REPORT)) if p]
    assert not problems, _report("report/ reads no store", problems)


#: Every layer below report/ but the store.
_BELOW_REPORT = [
    n
    for e in LAYERS[: next(i for i, e in enumerate(LAYERS) if "report" in e)]
    for n in (e if isinstance(e, tuple) else (e,))
    if n != "store"
]


def test_stats_is_pure():
    problems = impure_stats(GRAPH)
    assert not problems, _report("stats/ is pure statistics", problems)


# -- the checker itself: each check fails on a graph that breaks its rule


def _fake_package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "fake" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "fake"


def test_the_checks_report_a_cycle_an_upward_import_and_impure_stats(tmp_path):
    pkg = _fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            # a lazy, upward import of high.b ...
            "low/a.py": "def f():\n    from fake.high.b import g\n    return g\n",
            "high/__init__.py": "",
            # ... and an import back, seen only by the type checker: a cycle all the same
            "high/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from fake.low import a\n"
                "def g():\n"
                "    pass\n"
            ),
            "stats/__init__.py": (
                "import os\n"
                "from fake.low.a import f\n"
                "def mean(path):\n"
                "    with open(path) as fh:\n"
                "        return sum(map(float, fh)) + f()\n"
            ),
        },
    )
    graph = build_graph(pkg)
    assert find_cycles(graph) == ["fake.high.b:3 → fake.low.a:2 → fake.high.b"]
    assert package_cycles(graph) == [
        "high → low → high (fake.high.b:3 imports fake.low.a; fake.low.a:2 imports fake.high.b)"
    ]
    assert upward_imports(graph, [("fake", "low"), "stats", "high"]) == [
        "fake.low.a:2 imports fake.high.b: 'low' may not import 'high', a layer above it"
    ]
    assert upward_imports(graph, [("fake", "high"), "low", "stats"]) == [
        "fake.high.b:3 imports fake.low.a: 'high' may not import 'low', a layer above it"
    ]
    side_by_side = "are side by side; neither imports the other"
    assert upward_imports(graph, ["fake", ("low", "high"), "stats"]) == [
        f"fake.high.b:3 imports fake.low.a: 'high' and 'low' {side_by_side}",
        f"fake.low.a:2 imports fake.high.b: 'low' and 'high' {side_by_side}",
    ]
    assert upward_imports(graph, ["fake", "low", "high"]) == [
        "fake.stats: its layer 'stats' is not in LAYERS (place it in the order)",
        "fake.low.a:2 imports fake.high.b: 'low' may not import 'high', a layer above it",
    ]
    assert impure_stats(graph) == [
        "fake.stats:2 imports fake.low.a: stats/ imports nothing of perflab outside itself",
        "fake.stats:1: imports os (I/O)",
        "fake.stats:4: calls open() (I/O)",
    ]


def test_a_layer_may_name_a_type_from_below_but_call_only_what_it_is_allowed(tmp_path):
    pkg = _fake_package(
        tmp_path,
        {
            "__init__.py": "",
            "store.py": "class Database:\n    pass\n",
            "api.py": "def open_store():\n    pass\n",
            "cli.py": (
                "from typing import TYPE_CHECKING\n"
                "from fake.api import open_store\n"
                "if TYPE_CHECKING:\n"
                "    from fake.store import Database\n"
                "def run() -> 'Database':\n"
                "    from fake.store import Database\n"
                "    return Database()\n"
            ),
        },
    )
    graph = build_graph(pkg)
    allowed = frozenset({"api"})
    called = "fake.cli:6 imports fake.store: cli/ may import only api"
    assert imports_outside(graph, "cli", allowed, types_anywhere=True) == [
        f"{called} (any type, under TYPE_CHECKING)"
    ]
    assert imports_outside(graph, "cli", allowed) == [
        "fake.cli:4 imports fake.store: cli/ may import only api",
        called,
    ]


def names_shadowed_by_modules(package: Path) -> list[str]:
    """Names a package exports (its ``__all__``) that are also the name of one of its
    modules or subpackages: importing that module replaces the name on the package
    (a module exported as itself — its loader's table maps the name to the module — is
    no clash)."""
    out = []
    for init in sorted(package.rglob("__init__.py")):
        exported: list[str] = []
        tree = ast.parse(init.read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                exported = list(ast.literal_eval(node.value))
        folder = init.parent
        dotted = ".".join(folder.relative_to(package.parent).parts)
        itself = {
            k.value
            for d in ast.walk(tree)
            if isinstance(d, ast.Dict)
            for k, v in zip(d.keys, d.values)
            if isinstance(k, ast.Constant)
            and isinstance(v, ast.Constant)
            and v.value == f"{dotted}.{k.value}"
        }
        for name in exported:
            if name in itself:
                continue
            if (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists():
                where = folder.relative_to(package.parent)
                out.append(f"{where}: exports {name!r} and has a module of that name")
    return out


def test_no_module_is_named_like_a_name_its_package_exports():
    problems = names_shadowed_by_modules(PACKAGE)
    assert not problems, _report("a module named like its package's function", problems)


def test_the_shadowing_check_finds_a_module_named_like_an_export(tmp_path):
    pkg = _fake_package(
        tmp_path,
        {"__init__.py": '__all__ = ["fit", "open"]\n', "fit.py": "def fit():\n    pass\n"},
    )
    assert names_shadowed_by_modules(pkg) == ["fake: exports 'fit' and has a module of that name"]


#: A module longer than this holds more than one concern; a function longer than this
#: says why in its docstring ("long because …").
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def too_long(package: Path) -> list[str]:
    """Modules over MAX_MODULE_LINES and functions over MAX_FUNCTION_LINES (without a
    docstring saying why) under ``package``, as "path:line: what"."""
    out = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text()
        where = path.relative_to(package.parent)
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            out.append(f"{where}: {lines} lines (at most {MAX_MODULE_LINES}: split it by concern)")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            doc = ast.get_docstring(node) or ""
            if length > MAX_FUNCTION_LINES and "long because" not in doc:
                out.append(f"{where}:{node.lineno}: {node.name} is {length} lines")
    return out


def test_modules_and_functions_stay_short():
    assert too_long(PACKAGE) == []


def test_the_length_check_reports_a_long_module_and_function(tmp_path):
    pkg = tmp_path / "fake"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long.py").write_text(f"def f():\n{body}\n" + "\n" * MAX_MODULE_LINES)
    (pkg / "said.py").write_text(f'def g():\n    """long because: a table."""\n{body}\n')
    lines = MAX_FUNCTION_LINES + 1 + MAX_MODULE_LINES
    assert too_long(pkg) == [
        f"fake/long.py: {lines} lines (at most {MAX_MODULE_LINES}: split it by concern)",
        f"fake/long.py:1: f is {MAX_FUNCTION_LINES + 1} lines",
    ]
