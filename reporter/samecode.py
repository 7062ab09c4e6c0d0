"""Whether a run's figure still describes the code in the tree: one answer (:func:`code_status`), and
the proof that a rewrite changed nothing that runs (:func:`prove`, ``report same-code``).

A run records every file of its version's source closure (:mod:`reporter.closure`) by path and
sha256, and the texts are in the source store. When the tree's closure holds the same files with
the same hashes, the run's code is the code now. When it differs (a helper moved into a shared
header, a launcher moved into a module the versions share), the figure still stands if a
:class:`~reporter.records.SameCode` record proves that the difference compiles to nothing:

* every CUDA build the run recorded (:attr:`~reporter.records.Run.builds`: the source, the
  options, defines included, and the kernel launched), compiled from the recorded texts and from
  the tree's by one NVRTC with the run's options less ``-lineinfo``, gives the same machine code:
  the cubin of that compile, compared kernel by kernel (line information adds sections, never
  instructions) (:func:`reporter.cuda.sass.kernel_code_sha256`: the SASS, its relocations,
  attributes and resources, by name). Where the run recorded the machine code it loaded
  (:attr:`~reporter.records.KernelBuild.code_sha256`) and that compiler is the one here, the
  tree's must be that very code. The kernel's PTX (:func:`kernel_ptx`: the module's
  declarations, the kernel and the device functions) is compared and kept too, but decides only
  in proofs made before the machine code was kept: NVRTC's PTX is not reproducible compile to
  compile for every kernel (:attr:`~reporter.records.PtxComparison.same`);
* every Python file of either side has the same syntax tree, docstrings aside: the same program.
  A file moved to another module, or a function that changed, is not the same: a host path that
  changed is re-timed, not argued.

A chain of proofs counts (code A proven to be B, B to be C). Otherwise the figure is on earlier
code, and :class:`CodeStatus` names the files that changed: the report says so beside the figure,
and the export's header too.

Nothing in this module knows any particular assignment.
"""

from __future__ import annotations

import ast
import hashlib
import re
import shlex
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from . import sources
from .assignments import Version
from .records import CodeSnapshot, PtxComparison, PythonComparison, Run, SameCode, SourceFile

Files = dict[str, str]  # path relative to the repository root -> sha256 of its text


class SameCodeError(Exception):
    """A proof that cannot be attempted here (no NVRTC, a text missing from the store); names what."""


# --------------------------------------------------------------------------- the one answer


@dataclass(frozen=True)
class CodeStatus:
    """How a run's recorded code stands to the tree's: ``current`` (the same files, the same
    hashes), ``proven`` (different files, proven to compile to the same code by ``proofs``), or
    ``changed`` (``changed`` names the files added, removed or rewritten since)."""

    state: Literal["current", "proven", "changed"]
    changed: tuple[str, ...] = ()
    proofs: tuple[SameCode, ...] = ()

    @property
    def machine_code(self) -> bool:
        """Every proof it stands on compared the machine code of each CUDA build it compiled (proofs
        made before that compared PTX only); True when it stands on none."""
        return all(b.before_code_sha256 is not None for p in self.proofs for b in p.builds)

    @property
    def stands(self) -> bool:
        """The run's figure describes the code in the tree."""
        return self.state != "changed"

    def words(self) -> str:
        """What a reader is told, or "" when the code is the tree's as it is."""
        if self.state == "current":
            return ""
        names = ", ".join(Path(p).name for p in self.changed[:4]) + (
            f" and {len(self.changed) - 4} more" if len(self.changed) > 4 else "")
        if self.state == "proven":
            last = self.proofs[-1]
            return (f"its code has been rewritten since ({names}), proven to compile to the same kernels and the same "
                    f"Python ({last.compiler}; record {last.run_id})")
        return f"its code has changed since ({names}) and was not re-timed: the figure is the earlier code's"


def machine_code_proven(status: CodeStatus) -> bool:
    """Every proof ``status`` stands on compared the machine code of each CUDA build it compiled
    (proofs made before that compared PTX only); True when it stands on none."""
    return status.machine_code


def digest(files: Files) -> str:
    """The short hash of a set of files, as :attr:`CodeSnapshot.digest` gives it."""
    h = hashlib.sha256()
    for path, sha in sorted(files.items()):
        h.update(path.encode() + b"\0" + sha.encode())
    return h.hexdigest()[:12]


def recorded(code: CodeSnapshot) -> Files:
    return {f.path: f.sha256 for f in code.files}


def tree_files(version: Version, repo: Path, cache: Path | None = None) -> Files:
    """The version's closure in the tree now, as a run made now would record it. ``cache``: a folder
    where the answer is kept by the state (path, modification time, size) of every file under the
    assignment's folder and the shared headers, so a build of unchanged kernels does not follow the
    closures again."""
    if cache is not None:
        import json

        from .atomic import write_atomic

        kernels = version.assignment_dir.parent
        h = hashlib.sha256(f"{version.name}\0{repo.resolve()}\0".encode())
        for f in sorted(p for top in (version.assignment_dir, kernels / "common") if top.is_dir()
                        for p in top.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            st = f.stat()
            h.update(f"{f}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
        kept = cache / f"tree-{h.hexdigest()[:32]}.json"
        try:
            return {str(k): str(v) for k, v in json.loads(kept.read_text(encoding="utf-8")).items()}
        except (OSError, ValueError, AttributeError):
            pass
        files = tree_files(version, repo)
        try:
            cache.mkdir(parents=True, exist_ok=True)
            write_atomic(kept, json.dumps(files, sort_keys=True))
            for old in sorted(cache.glob("tree-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)[256:]:
                old.unlink(missing_ok=True)
        except OSError:
            pass  # a cache that cannot be written only costs the next build the work
        return files
    out: Files = {}
    root = repo.resolve()
    for p in version.sources:
        try:
            rel = p.resolve().relative_to(root).as_posix()
        except ValueError:
            rel = str(p)
        out[rel] = _text_sha256(p)
    return out


_SHAS: dict[Path, tuple[tuple[int, int], str]] = {}


def _text_sha256(path: Path) -> str:
    """sha256 of a file's text, computed once per version of the file (its modification time and
    size): the versions of an assignment share most of their headers."""
    st = path.stat()
    key = (st.st_mtime_ns, st.st_size)
    hit = _SHAS.get(path)
    if hit is None or hit[0] != key:
        hit = _SHAS[path] = (key, hashlib.sha256(path.read_text(encoding="utf-8").encode()).hexdigest())
    return hit[1]


def code_status(code: CodeSnapshot, now: Files, proofs: Sequence[SameCode] = ()) -> CodeStatus:
    """How the code a run recorded stands to ``now`` (:func:`tree_files`), given the version's proofs."""
    then = recorded(code)
    if then == now:
        return CodeStatus("current")
    changed = tuple(sorted(p for p in then.keys() | now.keys() if then.get(p) != now.get(p)))
    good = [p for p in proofs if p.same]
    # a chain of proofs that compared the machine code is the stronger answer: taken where there is one
    chain = _chain(then, now, [p for p in good if all(b.before_code_sha256 is not None for b in p.builds)]) \
        or _chain(then, now, good)
    if chain:
        return CodeStatus("proven", changed, tuple(chain))
    return CodeStatus("changed", changed)


def _chain(then: Files, now: Files, proofs: list[SameCode]) -> list[SameCode]:
    """Proofs leading from ``then`` to ``now``, shortest first found (breadth first); [] if none."""
    goal = digest(now)
    start = digest(then)
    edges: dict[str, list[tuple[str, SameCode]]] = {}
    for p in proofs:
        edges.setdefault(p.before.digest, []).append((p.after.digest, p))
    paths: dict[str, list[SameCode]] = {start: []}
    frontier = [start]
    while frontier:
        nxt = []
        for d in frontier:
            for to, p in edges.get(d, []):
                if to not in paths:
                    paths[to] = [*paths[d], p]
                    nxt.append(to)
        frontier = nxt
    return paths.get(goal, [])


# --------------------------------------------------------------------------- the proof


def python_tree(text: str, path: str) -> str:
    """The syntax tree of a Python file without its docstrings, as text: equal for two files that
    are the same program."""
    tree = ast.parse(text, filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


_FUNCTION = re.compile(r"^(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)",
                       re.MULTILINE)


def kernel_ptx(ptx: str, kernel: str) -> str:
    """The part of a module's PTX that one kernel is: the module's declarations, the kernel's entry
    and every device function (``.func``), without the other kernels. A rewrite that stops compiling
    another version's kernel into a module (v17 including v15's whole source, then only its header)
    leaves this text as it was. Raises KeyError when the module has no such kernel."""
    found = list(_FUNCTION.finditer(ptx))
    if not any(m.group(1) == "entry" and m.group(2) == kernel for m in found):
        raise KeyError(kernel)
    parts = [ptx[: found[0].start()] if found else ptx]
    for m, nxt in zip(found, [*found[1:], None], strict=True):
        if m.group(1) == "func" or m.group(2) == kernel:
            parts.append(ptx[m.start(): nxt.start() if nxt is not None else len(ptx)])
    text = "".join(parts)  # without the '// .globl' comments, which sit in whichever chunk precedes their kernel
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("// .globl"))
    # a function's local labels and stack are numbered by its place in the module ($L__BB1_7 in the
    # module's second function): the same kernel, placed first, reads $L__BB0_7
    return _LOCAL_NAMES.sub(lambda m: m.group(1), text)


_LOCAL_NAMES = re.compile(r"(\$L__BB|__local_depot)\d+(?=_|\b)")


@dataclass(frozen=True)
class BuildOptions:
    arch: str
    defines: dict[str, str | None]


def parse_options(options: str) -> BuildOptions | None:
    """A recorded build's options as the offline compile takes them, or None when they hold more
    than the harness's defaults, the architecture and defines (that build cannot be reproduced)."""
    from .cuda import DEFAULT_OPTIONS

    arch = None
    defines: dict[str, str | None] = {}
    for tok in shlex.split(options):
        if tok.startswith("--gpu-architecture="):
            arch = tok.split("=", 1)[1]
        elif tok.startswith("-D"):
            name, eq, value = tok[2:].partition("=")
            defines[name] = value if eq else None  # '-DFLAG' defines it as 1, '-DFLAG=' as empty
        elif tok not in DEFAULT_OPTIONS:
            return None
    return BuildOptions(arch, defines) if arch else None


@dataclass
class Attempt:
    """What :func:`prove` found: the proof (when ``proof.same``) or what stands in its way."""

    proof: SameCode | None
    differences: list[str]

    @property
    def same(self) -> bool:
        return self.proof is not None and self.proof.same and not self.differences


def prove(runs: Sequence[Run], version: Version, repo: Path, logs: Path, *, library: Path | None = None,
          now_code: CodeSnapshot | None = None) -> Attempt:
    """Compare the code ``runs`` recorded (one code, which they share) with the version's code in the
    tree (``now_code``: the tree's snapshot, taken here when not given): every CUDA build any of them
    recorded, compiled from both sides with its options, and every Python file's syntax tree.
    Raises :class:`SameCodeError` when the comparison cannot be made here."""
    from .cuda import CudaCompileError, find_nvrtc_library, kernel_code_sha256, nvrtc_build_offline

    if not runs or len({r.code.digest for r in runs}) != 1:
        raise ValueError("prove: give runs of one code")
    lib = library or find_nvrtc_library()
    after = now_code or version.snapshot(repo)
    before = runs[0].code
    missing = [f.path for f in before.files if not sources.available(logs, f)]
    if missing:
        raise SameCodeError(f"{runs[0].run_id}: texts not in {sources.folder(logs)}: {', '.join(missing)}")
    differences: list[str] = []
    then, now = recorded(before), recorded(after)
    texts_now = {f.path: f.text if f.text is not None else (repo / f.path).read_text(encoding="utf-8")
                 for f in after.files}
    python: list[PythonComparison] = []
    for path in sorted(p for p in then.keys() | now.keys() if p.endswith(".py")):
        old = sources.read(logs, _file(before.files, path)) if path in then else None
        new = texts_now.get(path)
        same = old is not None and new is not None and (old == new or python_tree(old, path) == python_tree(new, path))
        python.append(PythonComparison(path=path, before_sha256=then.get(path), after_sha256=now.get(path),
                                       same_tree=same))
        if not same:
            differences.append(f"{path}: " + ("not in the recorded code" if old is None else
                                              "not in the tree's code" if new is None else "a different program"))
    builds: list[PtxComparison] = []
    cuda_changed = any(then.get(p) != now.get(p) for p in then.keys() | now.keys() if not p.endswith(".py"))
    wanted = list(dict.fromkeys((b.source, b.options, b.kernel) for r in runs for b in r.builds))
    # the machine code a run recorded of each build, with the compiler that made it ('nvrtc 13.0')
    recorded_code = {(b.source, b.options, b.kernel): (b.compiler, b.code_sha256)
                     for r in runs for b in r.builds if b.code_sha256}
    if cuda_changed and not wanted:
        differences.append("the run recorded no CUDA build (made before builds were kept): its kernels cannot be "
                           "compiled as it compiled them")
    if cuda_changed and wanted and differences:
        differences.append("the CUDA builds were not compiled: the Python differs already")
    elif cuda_changed and wanted:
        if lib is None:
            raise SameCodeError("no libnvrtc to compile with: install the nvidia-cuda-nvrtc wheel (pip install -e "
                                "'.[test]') or set REPORTER_NVRTC_LIBRARY")
        compiler_name = _compiler(lib).split(" (")[0]  # 'nvrtc 13.0', as a run's build names its compiler
        with tempfile.TemporaryDirectory(prefix="same-code-") as tmp:
            root = Path(tmp)
            for f in before.files:
                (root / f.path).parent.mkdir(parents=True, exist_ok=True)
                (root / f.path).write_text(sources.read(logs, f), encoding="utf-8")
            for name, options, kernel in wanted:
                source = next((p for p in then if Path(p).name == name), None)
                parsed = parse_options(options)
                if source is None or parsed is None:
                    differences.append(f"{name}: " + ("not among the recorded files" if source is None else
                                                      f"options that cannot be reproduced offline ({options})"))
                    builds.append(PtxComparison(source=source or name, kernel=kernel, options=options,
                                                before_ptx_sha256=None, after_ptx_sha256=None))
                    continue
                shas: list[str | None] = []
                codes: list[str | None] = []
                for side in (root / source, repo / source):
                    label = "recorded" if side.is_relative_to(root) else "tree"
                    try:
                        built = nvrtc_build_offline(side, arch=parsed.arch, defines=parsed.defines, library=lib)
                        shas.append(hashlib.sha256(kernel_ptx(built.ptx, kernel).encode()).hexdigest())
                        codes.append(kernel_code_sha256(built.cubin, kernel))
                    except KeyError:
                        shas.append(None)
                        codes.append(None)
                        differences.append(f"{source} ({label}): has no kernel {kernel}")
                    except (CudaCompileError, OSError) as e:
                        shas.append(None)
                        codes.append(None)
                        differences.append(f"{source} ({label}): does not compile: {str(e).splitlines()[0]}")
                ran = recorded_code.get((name, options, kernel))
                comparison = PtxComparison(source=source, kernel=kernel, options=options, before_ptx_sha256=shas[0],
                                           after_ptx_sha256=shas[1], before_code_sha256=codes[0],
                                           after_code_sha256=codes[1],
                                           recorded_code_sha256=ran[1] if ran and ran[0] == compiler_name else None)
                builds.append(comparison)
                if shas[0] is not None and shas[1] is not None and not comparison.same:
                    flags = " ".join(f"-D{k}" if v is None else f"-D{k}={v}" for k, v in parsed.defines.items())
                    what = ("machine code" if codes[0] != codes[1] else "machine code from the one the run recorded")
                    differences.append(f"{source} with {flags}: different {what} for {kernel}")
    created = datetime.now(UTC)
    proof = SameCode(
        run_id=f"{created:%Y%m%dT%H%M%S%f}"[:-3] + f"Z_{before.digest}_{after.digest}", assignment=runs[0].assignment,
        version=runs[0].version, created_utc=created, before=before,
        after=after, proven_for=[r.run_id for r in runs], compiler=_compiler(lib) if builds else "none needed (no CUDA file changed)",
        builds=builds, python=python)
    return Attempt(proof, differences)


def _file(files: Iterable[SourceFile], path: str) -> SourceFile:
    return next(f for f in files if f.path == path)


def _compiler(lib: Path | None) -> str:
    from .cuda import nvrtc_version_offline

    if lib is None:
        return "nvrtc (none found)"
    return (f"{nvrtc_version_offline(lib) or 'nvrtc'} ({lib.name}, offline, without -lineinfo)")
