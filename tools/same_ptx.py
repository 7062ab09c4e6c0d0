"""Prove that a rewrite of CUDA sources left the compiled code unchanged: same machine code, build by build.

For every version of every assignment that has a CUDA source (``kernels/<name>/vNN_*.cu``), this
compiles (a) the source as it is at a git revision (default ``HEAD``: that revision's ``kernels/``
is materialised into a temporary folder with ``git archive REV kernels | tar -x``, so its headers
are the revision's too) and (b) the source in the working tree, each with the offline NVRTC
(:func:`reporter.cuda.nvrtc_ptx_offline`: ``report run``'s options for sm_90a, without
``-lineinfo``, so the PTX carries no source positions), once with the source's defaults and once
per ``CONFIG`` / ``SWEEP`` entry of the version's ``.py`` whose keys are all ``#ifndef`` macros of
the source or of a header it reaches. CONFIG and SWEEP are read without importing the ``.py``
(:func:`reporter.assignments.read_literal`); where one is not a literal, only the literal part
is built and the table says so. ``--define K=V,K2=V2`` adds builds of one's own (a debug mode, a
CONFIG that is not a literal), for every source that has all those macros.

Each build is compared kernel by kernel, for each kernel the working tree's source defines (so a
source that stops compiling another version's kernel into its module, by including that version's
header instead of its whole ``.cu``, is compared on its own kernels): its machine code
(:func:`reporter.cuda.kernel_code_sha256` of the cubin, as ``report same-code`` compares it), and its
PTX, the entry with the module's declarations and device functions
(:func:`reporter.samecode.kernel_ptx`). The machine code decides: NVRTC's PTX of one source with one
set of options is not reproducible for every kernel (matmul v17's fp16 build gave two PTX texts in
four compiles, one machine code), so equal machine code with unequal PTX is listed as "same code".
Equal machine code for every build means the rewrite (moving helpers into headers, renaming,
reordering) changed nothing that runs, for the configurations that are run. The table lists version,
build, verdict and a short sha256 of the PTX; the exit status is 1 when any build differs or compiles
on one side only, 0
otherwise. A build both sides refuse (a ``--define`` that does not fit, say) is listed as
"refused" and is no difference: neither compiled. ``--diff`` prints a unified diff of the first
differing build.

    python tools/same_ptx.py --rev c0d7577 [--assignment flashattn] [--only v15] [--diff]

The revision side is cached by commit, source and defines under ``--cache`` (the commit's text
cannot change), so repeated runs only recompile the working tree.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reporter import cuda, samecode
from reporter.assignments import read_literal

SOURCE_RE = re.compile(r"^v\d{2,3}_[A-Za-z0-9_]*\.cu$")
IFNDEF_RE = re.compile(r"^\s*#\s*ifndef\s+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
Defines = dict[str, Any]


@dataclass
class Build:
    """One compile of one source on both sides."""

    relpath: str  # 'flashattn/v15_kv176_multicast.cu', relative to kernels/
    label: str  # 'defaults', 'config', 'sweep-1', 'define' (one of --define)
    defines: Defines
    old_ptx: str | None = None
    new_ptx: str | None = None
    old_code: dict[str, str] = field(default_factory=dict)  # kernel -> sha256 of its machine code
    new_code: dict[str, str] = field(default_factory=dict)
    old_error: str = ""
    new_error: str = ""

    @property
    def version(self) -> str:
        return Path(self.relpath).stem

    @property
    def same_ptx(self) -> bool:
        return self.old_ptx is not None and self.old_ptx == self.new_ptx

    @property
    def same_code(self) -> bool:
        """Every kernel of the tree's source has the same machine code on both sides."""
        return bool(self.new_code) and all(self.old_code.get(k) == v for k, v in self.new_code.items())

    @property
    def same(self) -> bool:
        """The machine code decides, as in ``report same-code`` (NVRTC's PTX of one source can differ
        compile to compile); the PTX where no machine code was compared."""
        if self.old_code or self.new_code:
            return self.same_code
        return self.same_ptx

    @property
    def refused(self) -> bool:
        """Neither side compiles: nothing to compare, and no difference."""
        return bool(self.old_error and self.new_error)

    @property
    def ok(self) -> bool:
        return self.same or self.refused

    @property
    def verdict(self) -> str:
        if self.refused:
            return "refused"
        if self.old_error or self.new_error:
            return "FAILS OLD" if self.old_error else "FAILS NEW"
        if self.same:
            return "same" if self.same_ptx else "same code"
        return "DIFFERENT"


@dataclass
class Plan:
    builds: list[Build] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def sha_short(text: str | None) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12] if text is not None else "-" * 12


def macros_of(source: Path) -> set[str]:
    """The ``#ifndef`` macros of a source and of every local header it reaches."""
    out: set[str] = set()
    for p in cuda.source_files(source):
        out |= set(IFNDEF_RE.findall(p.read_text(encoding="utf-8")))
    return out


def materialise(rev: str, dest: Path) -> str:
    """``rev``'s ``kernels/`` under ``dest``; returns the full commit id."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    archive = subprocess.run(["git", "archive", commit, "kernels"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return commit


def config_builds(py: Path, macros: set[str], plan: Plan, relpath: str) -> list[tuple[str, Defines]]:
    """(label, defines) of the CONFIG and SWEEP entries of ``py`` that the source can take."""
    out: list[tuple[str, Defines]] = []
    missing = object()
    config = read_literal(py, "CONFIG", missing) if py.is_file() else None
    sweep = read_literal(py, "SWEEP", missing) if py.is_file() else None
    for name, value in (("CONFIG", config), ("SWEEP", sweep)):
        if value is missing:
            has_name = re.search(rf"^{name}\b", py.read_text(encoding="utf-8"), re.MULTILINE) is not None
            if has_name:
                plan.notes.append(f"{relpath}: {py.name}'s {name} is not a literal: its builds are not compared")
    entries: list[tuple[str, Any]] = []
    if isinstance(config, dict):
        entries.append(("config", config))
    if isinstance(sweep, list):
        entries += [(f"sweep-{i}", c) for i, c in enumerate(sweep)]
    seen: list[Defines] = []
    for label, cfg in entries:
        if not isinstance(cfg, dict) or not cfg:
            continue
        if not set(cfg) <= macros:
            plan.notes.append(f"{relpath}: {label} {cfg} names keys that are not #ifndef macros: not built")
            continue
        if cfg in seen:
            continue
        seen.append(dict(cfg))
        out.append((label, dict(cfg)))
    return out


def parse_defines(text: str) -> Defines:
    """'DBG_MODE=1,STAGES=3' -> {'DBG_MODE': '1', 'STAGES': '3'}; a bare 'FLAG' defines it empty."""
    out: Defines = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        out[name.strip()] = value.strip() if value else None
    return out


def make_plan(
    old_kernels: Path, new_kernels: Path, assignments: Sequence[str], only: Sequence[str], extra: Sequence[str]
) -> Plan:
    plan = Plan()
    rels: set[str] = set()
    for top in (old_kernels, new_kernels):
        for p in top.glob("*/*.cu"):
            if SOURCE_RE.match(p.name) and (not assignments or p.parent.name in assignments):
                rels.add(p.relative_to(top).as_posix())
    for rel in sorted(rels):
        if only and not any(Path(rel).stem.startswith(o) for o in only):
            continue
        old, new = old_kernels / rel, new_kernels / rel
        if not old.is_file() or not new.is_file():
            plan.notes.append(f"{rel}: {'new in the working tree' if new.is_file() else 'removed'}: nothing to compare")
            continue
        macros = macros_of(old) | macros_of(new)
        plan.builds.append(Build(rel, "defaults", {}))
        for label, defines in config_builds(new.with_suffix(".py"), macros, plan, rel):
            plan.builds.append(Build(rel, label, defines))
        for d in extra:
            defines = parse_defines(d)
            if defines and set(defines) <= macros:
                plan.builds.append(Build(rel, "define", defines))
    return plan


def compile_one(args: tuple[str, Defines]) -> tuple[str | None, dict[str, str], str]:
    """(the PTX, each kernel's machine-code sha256, the error of a failing compile)."""
    path, defines = args
    try:
        built = cuda.nvrtc_build_offline(path, defines=defines)
    except (cuda.CudaCompileError, OSError, RuntimeError) as exc:  # a failing compile is a result, not a crash
        return None, {}, str(exc)
    return built.ptx, {k: cuda.kernel_code_sha256(built.cubin, k) for k in cuda.kernel_names(built.cubin)}, ""


def cache_key(commit: str, rel: str, defines: Mapping[str, Any], library: str) -> str:
    blob = json.dumps([commit, rel, sorted((k, str(v)) for k, v in defines.items()), library])
    return hashlib.sha256(blob.encode()).hexdigest()


def run(plan: Plan, old_kernels: Path, new_kernels: Path, commit: str, cache: Path | None, jobs: int) -> None:
    library = str(cuda.find_nvrtc_library())
    todo_old: list[Build] = []
    for b in plan.builds:
        f = cache / f"{cache_key(commit, b.relpath, b.defines, library)}.json" if cache else None
        if f is not None and f.is_file():
            held = json.loads(f.read_text(encoding="utf-8"))
            b.old_ptx, b.old_code = held["ptx"], held["code"]
        else:
            todo_old.append(b)
    work = [(str(old_kernels / b.relpath), b.defines) for b in todo_old]
    work += [(str(new_kernels / b.relpath), b.defines) for b in plan.builds]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(compile_one, work))
    for b, (ptx, code, err) in zip(todo_old, results[: len(todo_old)]):
        b.old_ptx, b.old_code, b.old_error = ptx, code, err
        if cache is not None and ptx is not None:
            cache.mkdir(parents=True, exist_ok=True)
            (cache / f"{cache_key(commit, b.relpath, b.defines, library)}.json").write_text(
                json.dumps({"ptx": ptx, "code": code}), encoding="utf-8")
    for b, (ptx, code, err) in zip(plan.builds, results[len(todo_old) :]):
        b.new_ptx, b.new_code, b.new_error = ptx, code, err
    for b in plan.builds:  # the kernels the working tree's source defines, each as kernel_ptx gives it
        if b.old_ptx is not None and b.new_ptx is not None:
            entries = sorted(m.group(2) for m in samecode._FUNCTION.finditer(b.new_ptx) if m.group(1) == "entry")
            b.old_ptx, b.new_ptx = (_kernels(b.old_ptx, entries), _kernels(b.new_ptx, entries))
            b.new_code = {k: v for k, v in b.new_code.items() if k in entries}


def _kernels(ptx: str, entries: list[str]) -> str:
    out = []
    for e in entries:
        try:
            out.append(samecode.kernel_ptx(ptx, e))
        except KeyError:
            out.append(f"// no kernel {e}")
    return "\n".join(out)


def print_table(plan: Plan, commit: str) -> None:
    print(f"Builds at {commit[:12]} (old) against the working tree (new)\n")
    w = max([len(b.version) for b in plan.builds] + [7])
    print(f"{'version':{w}}  {'build':34}  {'verdict':10}  {'old sha256':12}  {'new sha256':12}")
    for b in plan.builds:
        build = b.label if b.label == "defaults" else f"{b.label} {json.dumps(b.defines, separators=(',', ':'))}"
        print(f"{b.version:{w}}  {build[:34]:34}  {b.verdict:10}  {sha_short(b.old_ptx)}  {sha_short(b.new_ptx)}")
    for n in plan.notes:
        print(f"note: {n}")
    same = sum(b.same for b in plan.builds)
    refused = sum(b.refused for b in plan.builds)
    print(
        f"\n{same} of {len(plan.builds)} builds give the same machine code"
        + (f"; {refused} refused by both sides (not compiled, no difference)" if refused else "")
    )


def print_first_diff(plan: Plan) -> None:
    for b in plan.builds:
        if b.ok:
            continue
        print(f"\n--- first difference: {b.relpath} {b.label} {b.defines}")
        if b.old_error or b.new_error:
            print(b.old_error or "", b.new_error or "", sep="\n")
            return
        assert b.old_ptx is not None and b.new_ptx is not None
        sys.stdout.writelines(
            difflib.unified_diff(
                b.old_ptx.splitlines(True),
                b.new_ptx.splitlines(True),
                fromfile=f"old/{b.relpath}",
                tofile=f"new/{b.relpath}",
                n=3,
            )
        )
        return


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rev", default="HEAD", help="git revision whose kernels/ is the reference (default HEAD)")
    ap.add_argument("--assignment", action="append", default=[], help="only this assignment (repeatable)")
    ap.add_argument(
        "--only", action="append", default=[], help="only sources whose stem starts so, e.g. v15 (repeatable)"
    )
    ap.add_argument(
        "--define",
        action="append",
        default=[],
        metavar="K=V[,K=V...]",
        help="an extra build with these defines, for every source that has all of them as #ifndef macros",
    )
    ap.add_argument("--diff", action="store_true", help="print a unified diff of the first differing build")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compiles in parallel")
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "same_ptx",
        help="where the revision's PTX is kept between runs",
    )
    ap.add_argument("--no-cache", action="store_true")
    args = ap.parse_args(argv)
    if cuda.find_nvrtc_library() is None:
        print("no libnvrtc found (pip install nvidia-cuda-nvrtc)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="same_ptx_") as tmp:
        commit = materialise(args.rev, Path(tmp))
        old_kernels, new_kernels = Path(tmp) / "kernels", ROOT / "kernels"
        plan = make_plan(old_kernels, new_kernels, args.assignment, args.only, args.define)
        run(plan, old_kernels, new_kernels, commit, None if args.no_cache else args.cache, args.jobs)
    print_table(plan, commit)
    if args.diff:
        print_first_diff(plan)
    return 0 if all(b.ok for b in plan.builds) else 1


if __name__ == "__main__":
    raise SystemExit(main())
