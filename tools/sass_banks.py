"""Register banks in a kernel's main loops, read from its machine code (issue 32): how many of a loop's
FMAs fetch two source registers from one bank.

An FFMA reads three registers. A register the previous instruction flagged ``.reuse`` in the same
operand slot comes from that slot's reuse cache; the others are read from the register file, whose
banks are taken here as the register number mod 4 (and, for comparison, mod 2). An FMA whose fetched
registers share a bank is counted as a collision. The model is a reading of the machine code, not a
measurement: the stall probes (``tools/matmul_stall_probe.py``) say whether the warps wait on it.

For every loop (a backward branch) of at least ``--min`` instructions it prints the instruction count,
the FMAs, how many FMAs flag each slot for reuse, the collisions under both models, and the registers an
FMA fetches from the register file on average when each slot's reuse cache holds one register, or two
(one even, one odd: the reading under which cuBLAS's flags, set on an operand that the FMA after next
reads, save a fetch).

    python3 tools/sass_banks.py kernels/matmul/v26_rotated_b.cu matmul_rotated_b -D BM=256 -D BN=128 \\
        -D WM=128 -D WN=32 -D S=8 -D THREADS=256
    python3 tools/sass_banks.py --sass cublas.sass --function sm80_xmma_gemm_..._execute_kernel__5x_cublas

The first form builds the source as ``report run`` does (the offline NVRTC) and disassembles it with
``cuobjdump`` (``--cuobjdump PATH``, ``$CUOBJDUMP``, the PATH, or pip's ``nvidia-cuda-cuobjdump``, a test
dependency). The
second reads a listing already written by ``cuobjdump -sass`` (for a library's kernel: ``cuobjdump
-xelf all`` on the library, then ``-sass`` on the cubin that holds it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reporter.cuda.nvrtc import nvidia_wheel_file  # noqa: E402

_LINE = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_PRED = re.compile(r"^@!?U?P\w+\s+")
_BRANCH = re.compile(r"\bBRA(?:\.\w+)*\s+(?:!?U?P\w+,\s*)?0x([0-9a-f]+)")
_REG = re.compile(r"-?\|?R(\d+)(\.reuse)?\|?")


@dataclass(frozen=True)
class Instruction:
    address: int
    text: str  # without the predicate guard's

    @property
    def opcode(self) -> str:
        return self.text.split(None, 1)[0]


@dataclass
class LoopBanks:
    start: int
    end: int
    instructions: int
    ffma: int
    reuse_by_slot: dict[int, int] = field(default_factory=dict)
    collisions: dict[int, int] = field(default_factory=dict)  # banks (4 or 2) -> FMAs whose fetched registers share one
    fetched: dict[int, float] = field(default_factory=dict)  # reuse-cache entries a slot (1 or 2) -> registers fetched an FMA
    opcodes: Counter = field(default_factory=Counter)


def functions(listing: str) -> dict[str, list[Instruction]]:
    """Each function of a ``cuobjdump -sass`` listing, its instructions in address order."""
    out: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    for line in listing.splitlines():
        m = re.match(r"\s*Function\s*:\s*(\S+)", line)
        if m:
            current = out.setdefault(m.group(1), [])
            continue
        m = _LINE.match(line)
        if m and current is not None:
            current.append(Instruction(int(m.group(1), 16), _PRED.sub("", m.group(2).strip())))
    return out


def loops(code: list[Instruction]) -> list[list[Instruction]]:
    """The instructions from each backward branch's target to the branch, in address order."""
    out = []
    for ins in code:
        m = _BRANCH.search(ins.text)
        if m and int(m.group(1), 16) < ins.address:
            target = int(m.group(1), 16)
            out.append([i for i in code if target <= i.address <= ins.address])
    return out


def ffma_sources(text: str) -> list[tuple[int, int, bool]]:
    """An FFMA's register sources as (slot, register, flagged .reuse); constants and immediates left out."""
    args = [a.strip() for a in text.split(None, 1)[1].split(",")]
    out = []
    for slot, a in enumerate(args[1:4]):
        m = _REG.fullmatch(a)
        if m:
            out.append((slot, int(m.group(1)), bool(m.group(2))))
    return out


def loop_banks(body: list[Instruction], banks: tuple[int, ...] = (4, 2)) -> LoopBanks:
    """Reuse flags and bank collisions of the FFMAs of one loop body (the reuse cache is taken to serve
    a source whose register the previous FFMA flagged in the same slot)."""
    res = LoopBanks(body[0].address, body[-1].address, len(body), 0, opcodes=Counter(i.opcode for i in body))
    res.collisions = {b: 0 for b in banks}
    reuse: Counter = Counter()
    prev: list[tuple[int, int, bool]] = []
    for ins in body:
        if ins.opcode.split(".")[0] != "FFMA":
            continue
        res.ffma += 1
        srcs = ffma_sources(ins.text)
        served = {slot for slot, reg, _ in srcs if (slot, reg, True) in prev}
        fetched = {reg for slot, reg, _ in srcs if slot not in served}
        for b in banks:
            if any(n >= 2 for n in Counter(r % b for r in fetched).values()):
                res.collisions[b] += 1
        for slot, _, flagged in srcs:
            reuse[slot] += flagged
        prev = srcs
    res.reuse_by_slot = dict(sorted(reuse.items()))
    res.fetched = {e: fetched_per_ffma(body, e) for e in (1, 2)}
    return res


def fetched_per_ffma(body: list[Instruction], entries: int) -> float:
    """Registers an FFMA of ``body`` reads from the register file, on average, when each operand slot
    caches the registers flagged ``.reuse`` in it, ``entries`` of them told apart by register number
    mod ``entries``; an operand read without the flag leaves its entry empty."""
    caches: list[dict[int, int]] = [{}, {}, {}]
    fetched = count = 0
    for ins in body:
        if ins.opcode.split(".")[0] != "FFMA":
            continue
        count += 1
        srcs = ffma_sources(ins.text)
        fetched += sum(caches[slot].get(reg % entries) != reg for slot, reg, _ in srcs)
        for slot, reg, flagged in srcs:
            if flagged:
                caches[slot][reg % entries] = reg
            else:
                caches[slot].pop(reg % entries, None)
    return fetched / count if count else 0.0


def _wheel_binary(name: str) -> str | None:
    """``name`` as pip's nvidia-cuda-* wheels install it (nvidia/cu13/bin, ...), or None."""
    found = nvidia_wheel_file("bin", name, f"cuda_{name}")
    return str(found) if found is not None else None


def find_cuobjdump() -> str | None:
    """``$CUOBJDUMP``, else ``cuobjdump`` on the PATH, else the one pip's ``nvidia-cuda-cuobjdump`` installs."""
    return os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or _wheel_binary("cuobjdump")


def disassemble(source: Path, kernel: str, defines: dict[str, str], cuobjdump: str) -> str:
    from reporter import cuda

    cubin = cuda.nvrtc_cubin_offline(source, defines=defines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        env = dict(os.environ)
        nvdisasm = shutil.which("nvdisasm") or _wheel_binary("nvdisasm")  # cuobjdump -sass runs it
        if nvdisasm:
            env["PATH"] = os.pathsep.join([str(Path(nvdisasm).parent), env.get("PATH", "")])
        out = subprocess.run([cuobjdump, "-sass", "-fun", kernel, str(path)], capture_output=True, text=True, env=env)
    if out.returncode != 0 or "Function" not in out.stdout:
        raise SystemExit(f"sass_banks: cuobjdump found no kernel {kernel!r} in {source}: {out.stderr.strip()}")
    return out.stdout


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source", nargs="?", type=Path, help="a .cu file to build (with kernel)")
    p.add_argument("kernel", nargs="?", help="the kernel's name in the build")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--sass", type=Path, help="a cuobjdump -sass listing to read instead of building")
    p.add_argument("--function", help="with --sass: the function to read (default: every one)")
    p.add_argument("--cuobjdump", default=None, help="the disassembler (default: $CUOBJDUMP, the PATH, or pip's "
                   "nvidia-cuda-cuobjdump)")
    p.add_argument("--min", type=int, default=500, help="shortest loop reported, in instructions (default 500)")
    args = p.parse_args(argv)
    if args.sass:
        listing = args.sass.read_text()
    else:
        if not (args.source and args.kernel):
            p.error("give a source and its kernel, or --sass LISTING")
        args.cuobjdump = args.cuobjdump or find_cuobjdump()
        if not args.cuobjdump:
            p.error("no cuobjdump: pass --cuobjdump PATH or set $CUOBJDUMP (pip install nvidia-cuda-cuobjdump)")
        bad = [d for d in args.defines if "=" not in d]
        if bad:
            p.error(f"-D wants NAME=VALUE, got {bad[0]!r}")
        listing = disassemble(args.source, args.kernel, dict(d.split("=", 1) for d in args.defines), args.cuobjdump)
    funcs = functions(listing)
    if args.function:
        if args.function not in funcs:
            raise SystemExit(f"sass_banks: no function {args.function!r} in {args.sass or args.source}")
        funcs = {args.function: funcs[args.function]}
    for name, code in funcs.items():
        for body in loops(code):
            if len(body) < args.min:
                continue
            r = loop_banks(body)
            print(f"{name[:60]} loop {r.start:#x}-{r.end:#x}: {r.instructions} instructions, {r.ffma} FFMA, "
                  f"reuse flags by slot {r.reuse_by_slot}, FMAs with fetched registers in one bank: "
                  f"{r.collisions[4]} (mod 4), {r.collisions[2]} (mod 2); registers fetched an FMA: "
                  f"{r.fetched[1]:.2f} (one reuse entry a slot), {r.fetched[2]:.2f} (two)")


if __name__ == "__main__":
    main()
