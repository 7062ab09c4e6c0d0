"""The reporter package's layers, enforced: data flows one way, kernels -> harness -> records ->
analysis -> render, with the commands on top; no module imports one that imports it back; nothing
under kernels/ imports the harness; the harness prints nothing itself.

- base (records and what every layer reads: the record models, their packed arrays, the store, the
  source store, rewriting and merging records, the assignments and their
  source closures, the CUDA build, the course's file formats, the one answers to "which run stands
  for a version", "does its code still stand" and "which run did the person name", the worklog's
  structure, the ncu metric names, an output compared with its reference);
- harness: measures and writes records; imports only the base;
- analysis: reads records and derives figures, verdicts, sentences; imports only the base;
- render: turns records and analysis into text, HTML, PDF, charts and the export; imports the base
  and the analysis, never the harness;
- cli: the typer commands and the scaffolding they run; may import anything.

Every import counts, including the ones inside functions (the CLI imports lazily, so could any
module). A module added to ``reporter/`` must be placed in a layer here, so the rule cannot be
dodged by a new file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "reporter"

LAYERS: dict[str, tuple[str, ...]] = {
    "base": ("records", "packed", "atomic", "outputs", "store", "sources", "migrate", "merge", "assignments", "closure", "cuda", "course", "course_imports",
             "submission", "standing", "samecode", "cudatext", "cudabranches", "lookup", "worklog_sections", "ncu_metrics",
             "compare"),
    "harness": ("harness",),
    "analysis": ("analysis",),
    "render": ("render", "export"),
    "cli": ("cli", "commands", "scaffold", "scaffold_cuda"),
}
MAY_IMPORT: dict[str, set[str]] = {
    "base": {"base"},
    "harness": {"base", "harness"},
    "analysis": {"base", "analysis"},
    "render": {"base", "analysis", "render"},
    "cli": set(LAYERS),
}


def layer_of(module: str) -> str:
    """'reporter.harness.run' -> 'harness'; fails for a module placed in no layer."""
    top = module.split(".")[1]
    for layer, members in LAYERS.items():
        if top in members:
            return layer
    raise AssertionError(f"reporter.{top} is in no layer: add it to LAYERS in {Path(__file__).name}")


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        if len(parts) > 1:
            out[".".join(parts)] = path
    return out


def imported(module: str, path: Path) -> list[tuple[str, int]]:
    """(reporter module, line) of every import in ``path``, relative ones resolved."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.startswith("reporter.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if not target.startswith("reporter.") and target != "reporter":
                continue
            if target == "reporter" or (node.module is None and node.level):
                # `from . import store` / `from reporter import store`: the names are modules
                found += [(f"{target}.{a.name}", node.lineno) for a in node.names]
            else:
                found.append((target, node.lineno))
    return [(m, line) for m, line in found if m.count(".") >= 1]


def test_every_module_is_in_a_layer():
    for module in modules():
        layer_of(module)


def violations(package: Path = PACKAGE) -> list[str]:
    out = []
    for module, path in modules(package).items():
        mine = layer_of(module)
        for target, line in imported(module, path):
            theirs = layer_of(target)
            if theirs not in MAY_IMPORT[mine]:
                out.append(f"{path.relative_to(package.parent)}:{line}: {mine} imports {target} ({theirs})")
    return out


def test_layers_import_only_downstream_of_the_data():
    assert violations() == []


@pytest.mark.parametrize("code,expect", [
    ("from ..analysis.metrics import figures\n", "harness imports reporter.analysis.metrics (analysis)"),
    ("def f():\n    from ..render.text import device_lines\n", "harness imports reporter.render.text (render)"),
    ("from .. import export\n", "harness imports reporter.export (render)"),
])
def test_the_check_catches_an_upward_import(tmp_path, code, expect):
    """A harness module that reaches up (at the top or inside a function) is reported."""
    fake = tmp_path / "reporter"
    (fake / "harness").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "harness" / "__init__.py").write_text("")
    (fake / "harness" / "bad.py").write_text(code)
    found = violations(fake)
    assert len(found) == 1 and expect in found[0], found


def test_a_module_in_no_layer_is_refused():
    with pytest.raises(AssertionError, match="in no layer"):
        layer_of("reporter.somewhere_new")


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports when it runs (at the top or inside a
    function; not under ``if TYPE_CHECKING:``, which never runs): ``from .worker import x`` and
    ``from . import worker`` both give ``reporter.harness.worker``; a name that is not a module
    gives the module it comes from."""
    mods = modules(package)
    graph: dict[str, set[str]] = {m: set() for m in mods}

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in mods.items():
        here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for stmt in node.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join([*here[: len(here) - node.level + 1], *([node.module] if node.module else [])]) \
                    if node.level else node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else known(base) for a in node.names]
            graph[module].update(t for t in targets if t is not None and t != module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
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
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


#: cycles that were there before this check, through imports inside functions; each is a debt to
#: pay by moving what both sides need to a module of its own (as reporter.harness.jobs did for
#: run and worker), after which it leaves this list. Nothing joins it.
KNOWN_CYCLES = [
    ["reporter.analysis.compare", "reporter.analysis.diff", "reporter.analysis.facts", "reporter.analysis.sweep"],
    ["reporter.render.tables", "reporter.render.text"],
]


def test_no_module_imports_one_that_imports_it_back():
    """No import cycle in the package, the imports inside functions included: two modules that need
    each other share a third (reporter.harness.run and .worker share .jobs)."""
    assert cycles(import_graph()) == KNOWN_CYCLES


def test_the_cycle_check_catches_run_and_worker_importing_each_other(tmp_path):
    """The shape reporter.harness had: the parent imports the worker's Session, the worker takes
    helpers from the parent inside its functions."""
    fake = tmp_path / "reporter"
    (fake / "harness").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "harness" / "__init__.py").write_text("")
    (fake / "harness" / "jobs.py").write_text("X = 1\n")
    (fake / "harness" / "run.py").write_text("from .jobs import X\n\ndef go():\n    from .worker import Session\n")
    (fake / "harness" / "worker.py").write_text("class Session:\n    def task(self):\n        from . import run\n")
    assert cycles(import_graph(fake)) == [["reporter.harness.run", "reporter.harness.worker"]]
    (fake / "harness" / "worker.py").write_text("from .jobs import X\n\nclass Session:\n    pass\n")
    (fake / "harness" / "run.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                             "    from .worker import Session\nWORKER = 'reporter.harness.worker'\n")
    assert cycles(import_graph(fake)) == []  # a name for the type checker only is no import at run time
    (fake / "harness" / "worker.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                                "    from .run import WORKER\n")
    assert cycles(import_graph(fake)) == []


def test_the_cuda_package_imports_only_itself():
    """`report export` carries reporter.cuda whole into a submission that holds nothing else of the
    package, so its modules import only each other."""
    def cuda(m: str) -> bool:
        return m == "reporter.cuda" or m.startswith("reporter.cuda.")

    assert [f"{m} imports {t}" for m, ts in import_graph().items() if cuda(m) for t in ts if not cuda(t)] == []


KERNELS = PACKAGE.parent / "kernels"


def kernels_importing_the_harness(kernels: Path = KERNELS) -> list[str]:
    """Every Python file under kernels/ that imports reporter.harness (or a module of it): the
    versions, their helpers and their self-tests run on top of the harness, never inside it."""
    out = []
    for path in sorted(kernels.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            if any(n == "reporter.harness" or n.startswith("reporter.harness.") for n in names):
                out.append(f"{path.relative_to(kernels.parent)}:{node.lineno}")
    return sorted(set(out))


def test_nothing_under_kernels_imports_the_harness():
    assert kernels_importing_the_harness() == []


@pytest.mark.parametrize("code", ["from reporter.harness.check import compare\n",
                                  "def f():\n    import reporter.harness.timing\n",
                                  "from reporter import harness\n"])
def test_the_kernels_check_catches_a_harness_import(tmp_path, code):
    (tmp_path / "kernels" / "toy").mkdir(parents=True)
    (tmp_path / "kernels" / "toy" / "selftest.py").write_text(code)
    assert kernels_importing_the_harness(tmp_path / "kernels") == [f"kernels/toy/selftest.py:{code.count(chr(10))}"]


#: entry points of child processes, whose stdout or stderr the process that started them reads:
#: the ncu report reader's JSON, and the profiled target's one line when it cannot load the version
CHILD_OUTPUT = {("harness/profile.py", "_read_report_main"), ("harness/profile_target.py", "main")}


def prints(package: Path = PACKAGE) -> list[str]:
    """Where a harness module imports a terminal library (rich) or uses ``print`` (called, or passed
    on as a default) outside :data:`CHILD_OUTPUT`."""
    out = []
    for path in sorted((package / "harness").rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        owner: dict[ast.AST, str] = {}  # node -> the innermost function holding it (ast.walk goes outside in)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                owner.update((node, fn.name) for node in ast.walk(fn) if node is not fn)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "rich" for a in node.names) or \
                    isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "rich":
                out.append(f"{rel}:{node.lineno}: imports rich")
            elif isinstance(node, ast.Name) and node.id == "print" and (rel, owner.get(node)) not in CHILD_OUTPUT:
                out.append(f"{rel}:{node.lineno}: print in {owner.get(node, 'the module')}")
    return out


def test_the_harness_prints_nothing():
    """What a person sees of the harness goes through its events (reporter.harness.events), drawn by
    the command that called it (reporter.render.text.TerminalEvents): no harness module imports a
    terminal library or prints, except the entry points of child processes, whose output their
    parent reads."""
    assert prints() == []


def test_the_print_check_sees_a_print_and_a_console(tmp_path):
    fake = tmp_path / "reporter"
    (fake / "harness").mkdir(parents=True)
    (fake / "harness" / "loud.py").write_text("from rich.console import Console\n\ndef f(say=print):\n    print('hi')\n")
    assert sorted(prints(fake)) == ["harness/loud.py:1: imports rich", "harness/loud.py:3: print in f",
                                    "harness/loud.py:4: print in f"]
