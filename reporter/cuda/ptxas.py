"""What ptxas reports of each kernel (registers, shared memory, stack, spills, barriers and its
performance advisories), parsed from NVRTC's program log or from ``nvcc -Xptxas -v``, which
:func:`ptxas_report` runs without a GPU. ``python -m reporter.cuda FILE.cu ...`` prints it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .options import CudaCompileError, define_options
from .sources import include_dirs

@dataclass
class KernelResources:
    """What ``ptxas -v`` says about one kernel (or device function), whether through nvcc or NVRTC."""

    name: str
    arch: str = ""
    registers: int | None = None
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    barriers: int = 0
    advisories: list[str] = field(default_factory=list)  # ptxas warnings and (C75xx) advisories naming it
    entry: bool = False  # a kernel ('Compiling entry function'), not a device function with its own frame


@dataclass
class PtxasReport:
    """A whole ``ptxas -v`` report: each function's resources, and the advisories naming no kernel."""

    kernels: list[KernelResources]
    advisories: list[str] = field(default_factory=list)


def ptxas_report(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                 nvcc: str | None = None) -> list[KernelResources]:
    """Compile ``path`` to a cubin with ``nvcc -Xptxas -v`` (no GPU needed) and parse the report.

    Raises :class:`CudaCompileError` with nvcc's output when the build fails.
    """
    path = Path(path).resolve()
    nvcc = nvcc or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cc = arch.removeprefix("sm_")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, f"-gencode=arch=compute_{cc},code={arch}", "-cubin", "-std=c++17", "-Xptxas", "-v",
               *(f"-I{d}" for d in include_dirs(path)), *define_options(defines), "-o", str(Path(tmp) / "out.cubin"), str(path)]
        res = subprocess.run(cmd, capture_output=True, text=True)
    text = res.stdout + res.stderr
    if res.returncode != 0:
        raise CudaCompileError(f"{path}: nvcc failed\n$ {' '.join(cmd)}\n{text}")
    return parse_ptxas(text)


_FUNCTION_RE = re.compile(r"(?:Compiling entry function|Function properties for) '?([A-Za-z_][\w$]*)'?"
                          r"(?: for '(sm_\w+)')?")
# 'ptxas info    : (C7512) Potential Performance Loss: ...', 'ptxas warning : ...'
_ADVISORY_RE = re.compile(r"^\s*ptxas\s+(info|warning|error)\s*:\s*(.*\S)\s*$")
_QUOTED_RE = re.compile(r"'([A-Za-z_][\w$]*)'")
_NAMED_FUNCTION_RE = re.compile(r"\b(?:function|entry)\s+'?([A-Za-z_][\w$]*)'?")


def _advisory(line: str) -> str | None:
    """The text of a ptxas warning or performance advisory line, None for an ordinary report line."""
    m = _ADVISORY_RE.match(line)
    if m is None:
        return None
    level, text = m.groups()
    if level == "info" and not re.match(r"\(C\d{4}\)", text) and "Performance Loss" not in text:
        return None
    return text if level == "info" else f"{level}: {text}"


def parse_ptxas_log(text: str) -> PtxasReport:
    """Parse a ``ptxas -v`` report as nvcc prints it or as NVRTC's program log holds it
    (``--ptxas-options=-v``). An advisory goes to the kernel it names (quoted, or after
    'function'/'entry'), wherever in the log that kernel's own lines are; one that names no
    kernel of the report (nothing, or only a device function) goes to :attr:`PtxasReport.advisories`."""
    out: list[KernelResources] = []
    advisories: list[str] = []
    cur: KernelResources | None = None
    for line in text.splitlines():
        if (adv := _advisory(line)) is not None:
            advisories.append(adv)
            continue
        m = _FUNCTION_RE.search(line)
        if m:
            name = m.group(1)
            cur = next((k for k in out if k.name == name), None)
            if cur is None:
                cur = KernelResources(name=name, arch=m.group(2) or "")
                out.append(cur)
            elif m.group(2) and not cur.arch:
                cur.arch = m.group(2)
            cur.entry = cur.entry or "Compiling entry function" in line
            continue
        if cur is None:
            continue
        # nvcc: 'ptxas info    : Used 40 registers, ...'; NVRTC adds 'ptxas         .     152 bytes stack frame, ...'
        if m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            cur.stack_bytes, cur.spill_stores, cur.spill_loads = (int(g) for g in m.groups())
        if m := re.search(r"Used (\d+) registers", line):
            cur.registers = int(m.group(1))
        if m := re.search(r"used (\d+) barriers", line):
            cur.barriers = int(m.group(1))
        if m := re.search(r"(\d+) bytes smem", line):
            cur.shared_bytes = int(m.group(1))
    by_name = {k.name: k for k in out if k.entry}
    unnamed: list[str] = []
    for adv in advisories:
        names = _QUOTED_RE.findall(adv) + _NAMED_FUNCTION_RE.findall(adv)
        owner = next((by_name[n] for n in names if n in by_name), None)
        if owner is None:
            unnamed.append(adv)
        elif adv not in owner.advisories:
            owner.advisories.append(adv)
    return PtxasReport(kernels=out, advisories=unnamed)


def parse_ptxas(text: str) -> list[KernelResources]:
    """Each function's resources from a ``ptxas -v`` report (see :func:`parse_ptxas_log`)."""
    return parse_ptxas_log(text).kernels


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reporter.cuda [--arch sm_90a] [-DNAME=VALUE ...] FILE.cu ...``"""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m reporter.cuda", description=main.__doc__)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args(argv)
    defines = dict(d.split("=", 1) if "=" in d else (d, None) for d in args.defines)
    status = 0
    for f in args.files:
        try:
            rows = ptxas_report(f, arch=args.arch, defines=defines)
        except CudaCompileError as e:
            print(e, file=sys.stderr)
            status = 1
            continue
        for r in rows:
            print(f"{f.name:<28} {r.name:<34} {r.arch:<8} regs {r.registers!s:>3}  smem {r.shared_bytes:>6} B  "
                  f"stack {r.stack_bytes} B  spills {r.spill_stores}/{r.spill_loads} B  barriers {r.barriers}")
            for adv in r.advisories:
                print(f"{'':<28} {adv}")
    return status
