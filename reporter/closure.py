"""A version's source closure: every file whose text decides what the version runs.

One answer, used by the run records (``Version.snapshot``), ``report export`` and the tests:

* the version's ``.py``;
* the modules of the assignment's folder it imports, transitively (their code runs at import);
* the CUDA sources the code *compiles*: a module's own source, named in that module by
  ``Path(__file__).with_suffix(".cu")`` or by a string constant (``"probes.cu"``), and another
  module's source where a module names it (``v15.SOURCE``, ``from v05_persistent import SOURCE``) or
  calls that module's kernel entry (``v21.custom_kernel``, ``v05.make_kernel``), which builds it.
  A module imported for its constants or helpers does not bring its ``.cu`` along: v14 imports
  v06's block sizes and never compiles ``v06_wgmma.cu``;
* every local header those sources reach through ``#include "..."``, transitively, as the
  compiler finds them (:func:`reporter.cuda.includes`): siblings, and shared headers under
  ``kernels/common/``.

The compile cache key (:func:`reporter.cuda.source_digest`) covers the same headers, and a
build records the files it read with their sha256 (:attr:`reporter.cuda.CudaModule.sources`), so
a record can show what was compiled beside what the closure says.

Nothing in this module knows any particular assignment.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .cuda import includes

CUDA_SUFFIXES = (".cu", ".cuh", ".h", ".hpp")
Role = Literal["version", "module", "cuda", "header"]


class ClosureError(Exception):
    """A version whose sources cannot be followed (a syntax error, an import cycle); names the file."""


@dataclass(frozen=True)
class ClosureFile:
    path: Path  # absolute
    rel: str  # its place beside the version: 'v04_exp2.py', 'v15_kv176_multicast.cu', 'common/sm90/wgmma.cuh'
    role: Role
    module: str | None = None  # the name a Python file is imported under

    @property
    def is_cuda(self) -> bool:
        return self.role in ("cuda", "header")


@dataclass(frozen=True)
class Closure:
    version: str
    files: list[ClosureFile]  # the version first, then its CUDA sources and headers, then the modules it imports
    module_order: list[str]  # the assignment's modules in import order: a module's imports first, the version last

    def paths(self) -> list[Path]:
        return [f.path for f in self.files]

    def rels(self) -> list[str]:
        return [f.rel for f in self.files]


_TREES: dict[Path, tuple[tuple[int, int], ast.Module]] = {}


def parse(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once per version of the file (its modification time and
    size): a report follows the closures of every version, which share most of their modules.
    Callers read the tree; none changes it."""
    st = path.stat()
    key = (st.st_mtime_ns, st.st_size)
    hit = _TREES.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as e:
        raise ClosureError(f"{path}:{e.lineno}: syntax error: {e.msg}") from e
    _TREES[path] = (key, tree)
    return tree


_IMPORTS: dict[int, tuple[ast.Module, list[tuple[str, str | None, list[str]]]]] = {}


def imported_modules(tree: ast.Module) -> list[tuple[str, str | None, list[str]]]:
    """(module, alias, names) of each absolute import anywhere in the file: ``import a as b`` gives
    ('a', 'b', []), ``from a import x, y`` gives ('a', None, ['x', 'y']). Walked once per tree."""
    hit = _IMPORTS.get(id(tree))
    if hit is not None and hit[0] is tree:
        return hit[1]
    out: list[tuple[str, str | None, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((a.name, a.asname or a.name, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, None, [a.name for a in node.names]))
    _IMPORTS[id(tree)] = (tree, out)  # the tree is kept, so its id names no other tree while cached
    return out


def local_imports(tree: ast.Module, folder: Path) -> list[str]:
    """The modules of the assignment's folder a file imports, in order, once each."""
    names = [m for m, _, _ in imported_modules(tree)]
    return [n for n in dict.fromkeys(names) if (folder / f"{n}.py").is_file()]


def own_cuda_sources(path: Path, tree: ast.Module) -> list[Path]:
    """The CUDA sources a module names for itself: ``with_suffix(".cu")`` on its own path (the
    same-stem file), or a string constant naming a file in its folder."""
    hit = _OWN.get(id(tree))
    if hit is not None and hit[0] is tree and hit[1] == path:
        return list(hit[2])
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "with_suffix" \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in CUDA_SUFFIXES:
            q = path.with_suffix(node.args[0].value)
            if q.is_file():
                found.append(q)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(CUDA_SUFFIXES) \
                and "\n" not in node.value and len(node.value) < 256:
            q = path.parent / node.value
            if q.is_file() and inside(q, path.parent):
                found.append(q)
    out = list(dict.fromkeys(q.resolve() for q in found))
    _OWN[id(tree)] = (tree, path, tuple(out))
    return out


_OWN: dict[int, tuple[ast.Module, Path, tuple[Path, ...]]] = {}


# what a module names of a sibling when it compiles the sibling's CUDA source: the source itself, or
# the sibling's kernel entry, whose call builds and runs it (v22 calls v16's and v21's custom_kernel)
COMPILING_NAMES = ("SOURCE", "custom_kernel", "make_kernel")


def named_sources(tree: ast.Module, folder: Path) -> list[str]:
    """The sibling modules whose CUDA source this file compiles: it names their ``SOURCE`` or calls their
    kernel entry (``alias.SOURCE``, ``alias.custom_kernel``, ``alias.make_kernel`` after ``import m as
    alias``, or ``from m import`` one of those names)."""
    aliases = {alias: m for m, alias, names in imported_modules(tree) if alias and (folder / f"{m}.py").is_file()}
    out = [m for m, alias, names in imported_modules(tree)
           if set(COMPILING_NAMES) & set(names) and (folder / f"{m}.py").is_file()]
    out += [aliases[name] for name in _source_attributes(tree) if name in aliases]
    return list(dict.fromkeys(out))


_ATTRS: dict[int, tuple[ast.Module, tuple[str, ...]]] = {}


def _source_attributes(tree: ast.Module) -> tuple[str, ...]:
    """The names ``x`` of every ``x.SOURCE``, ``x.custom_kernel`` and ``x.make_kernel`` in the file,
    walked once per tree."""
    hit = _ATTRS.get(id(tree))
    if hit is None or hit[0] is not tree:
        names = tuple(node.value.id for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                      and node.attr in COMPILING_NAMES and isinstance(node.value, ast.Name))
        hit = _ATTRS[id(tree)] = (tree, names)
    return hit[1]


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies below it (links resolved)."""
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def source_closure(version_path: Path, version_name: str | None = None) -> Closure:
    """The closure of the version at ``version_path`` (a ``vNN_slug.py`` in its assignment's folder)."""
    version_path = Path(version_path).resolve()
    folder = version_path.parent
    name = version_name or version_path.stem
    trees: dict[str, tuple[Path, ast.Module]] = {}
    order: list[str] = []
    visiting: list[str] = []

    def visit(mod: str, path: Path) -> None:
        if mod in order:
            return
        if mod in visiting:
            cycle = " -> ".join([*visiting[visiting.index(mod):], mod])
            raise ClosureError(f"{path}: import cycle between the assignment's modules: {cycle}")
        visiting.append(mod)
        tree = parse(path)
        trees[mod] = (path, tree)
        for dep in local_imports(tree, folder):
            if dep != mod:
                visit(dep, folder / f"{dep}.py")
        visiting.pop()
        order.append(mod)

    visit(name, version_path)

    # the CUDA sources compiled: each module's own, and another module's where one names its SOURCE
    compiled: list[Path] = []
    for mod in order:
        path, tree = trees[mod]
        if mod == name or any(mod in named_sources(t, folder) for _, t in trees.values()):
            compiled.extend(own_cuda_sources(path, tree))
    compiled = list(dict.fromkeys(compiled))

    files: list[ClosureFile] = [ClosureFile(version_path, version_path.name, "version", name)]
    seen = {version_path}
    for src in compiled:
        if src not in seen:
            seen.add(src)
            files.append(ClosureFile(src, _rel(src, folder), "cuda"))
        for inc in includes(src):
            if inc.path not in seen:
                seen.add(inc.path)
                files.append(ClosureFile(inc.path, _rel(inc.path, folder, inc.root), "header"))
    for mod in reversed(order[:-1]):
        path, _ = trees[mod]
        if path not in seen:
            seen.add(path)
            files.append(ClosureFile(path, path.name, "module", mod))
    return Closure(version=name, files=files, module_order=order)


def _rel(path: Path, folder: Path, root: Path | None = None) -> str:
    """A file's place beside the version: relative to the assignment's folder when inside it, else
    relative to the include folder it was found under (``common/sm90/wgmma.cuh``)."""
    for base in (folder, root):
        if base is not None and inside(path, base):
            return path.resolve().relative_to(base.resolve()).as_posix()
    raise ClosureError(f"{path}: a header reached from outside the assignment's folder and the include folders "
                       f"({folder}, {folder.parent}); include shared headers by their path from {folder.parent}")
