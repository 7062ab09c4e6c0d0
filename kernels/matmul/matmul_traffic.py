"""The CSE-234 lecture's traffic model (``../shared/references/cse234-lecture6-gpu-matmul.txt``):
how many elements each version reads from global memory and from shared memory to multiply two
N x N matrices, as a formula of N and the version's tile parameters.

The lecture counts *element reads issued by the threads*, not bytes that reach DRAM: a read the
L1 or L2 serves counts the same as one from HBM. That is the point of setting these numbers beside
the profiles' DRAM, L2 and shared-memory bytes: the gap between the model's global reads and the
measured DRAM reads is what the caches saved. Writes of C (N² elements) are the same for every
version and left out, as the lecture leaves them out.

* v1, one thread per output: each of the N² threads reads a row of A and a column of B, 2N
  elements: **2N³** global reads.
* v1.5, thread tiling: each of the N²/V² threads computes a V x V block and keeps a row of A while
  it walks V columns of B: NV + NV² reads, **N³/V + N³** in all.
* v2, register tiling: for each k a thread loads V values of A and V of B into registers and adds
  their outer product: 2NV reads per thread, **2N³/V** in all.
* v3, shared-memory tiling: a block computes an L x L tile and reads its N x L strips of A and B
  once, cooperatively, S columns at a time: 2NL per block, **2N³/L** global reads; its threads read
  them from shared memory, 2NV each, **2N³/V** shared reads.

Every later fp32 version keeps v3's two-level tiling (the block's L x L tile, the thread's V x V
block) and changes how the reads are made, not how many: its model is v3's.

No torch or GPU here: the report and the CPU tests read these as plain functions.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Traffic:
    """Element reads of one N x N x N product: from global memory and from shared memory."""

    formula: str  # the lecture's, in N, V, L ("2N³/L")
    global_reads: float
    shared_reads: float = 0.0
    shared_formula: str = ""

    def global_bytes(self, itemsize: int) -> float:
        return self.global_reads * itemsize

    def shared_bytes(self, itemsize: int) -> float:
        return self.shared_reads * itemsize


def _check(n: int, **tiles: int) -> None:
    if n <= 0:
        raise ValueError(f"N must be positive, got {n}")
    for name, value in tiles.items():
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")


def one_per_output(n: int) -> Traffic:
    """v1: 2N³ global reads."""
    _check(n)
    return Traffic("2N³", 2.0 * n**3)


def thread_tiled(n: int, v: int) -> Traffic:
    """v1.5: (N²/V²)(NV + NV²) = N³/V + N³ global reads."""
    _check(n, V=v)
    return Traffic("N³/V + N³", (n * n / (v * v)) * (n * v + n * v * v))


def register_tiled(n: int, v: int) -> Traffic:
    """v2: (N²/V²) · 2NV = 2N³/V global reads."""
    _check(n, V=v)
    return Traffic("2N³/V", (n * n / (v * v)) * 2 * n * v)


def shared_tiled(n: int, l: int, v: int, v_cols: int | None = None) -> Traffic:  # noqa: E741  (the lecture's L)
    """v3: (N²/L²) · 2NL = 2N³/L global reads, (N²/V²) · 2NV = 2N³/V shared reads. A thread block of
    V rows by ``v_cols`` columns (v08's lanes) reads N(V + v_cols) shared values for V·v_cols
    outputs: N³/v_cols + N³/V, which is 2N³/V when the two agree."""
    vc = v if v_cols is None else v_cols
    _check(n, L=l, V=v, V_cols=vc)
    if l % v or l % vc:
        raise ValueError(f"a block's L = {l} must be a multiple of a thread's V = {v} and {vc}")
    shared = (n * n / (v * vc)) * n * (v + vc)
    return Traffic("2N³/L", (n * n / (l * l)) * 2 * n * l, shared, "2N³/V" if vc == v else "N³/V_rows + N³/V_cols")
