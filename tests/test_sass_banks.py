"""tools/sass_banks.py: the loops of a cuobjdump listing, the FMAs' reuse flags, and the FMAs whose fetched
registers share a bank, on a listing written for the test and, where a disassembler is at hand, on v17's
and v26's builds."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LISTING = Path(__file__).resolve().parent / "fixtures" / "sass_banks_listing.sass"


def _tool():
    spec = importlib.util.spec_from_file_location("sass_banks", ROOT / "tools" / "sass_banks.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sass_banks"] = mod  # its dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def test_loops_and_collisions_of_a_listing():
    sb = _tool()
    funcs = sb.functions(LISTING.read_text())
    assert list(funcs) == ["toy_loop", "other"]
    assert [len(b) for b in sb.loops(funcs["toy_loop"])] == [8]  # 0x10 .. 0x80, the branch included
    assert sb.loops(funcs["other"]) == []  # a branch to itself is no loop body before it
    r = sb.loop_banks(sb.loops(funcs["toy_loop"])[0])
    assert (r.instructions, r.ffma) == (8, 6)
    assert r.reuse_by_slot == {0: 1, 1: 2, 2: 0}
    # R4 = R8 * R12 + R4: fetched R8, R12, R4, all 0 mod 4 -> a collision (mod 4 and mod 2)
    # R5 = R9 * R12(cached) + R5: fetched R9, R5, both 1 mod 4 -> a collision
    # R7 = R9 * R12(cached) + R6: fetched R9, R6: 1 and 2 mod 4, odd and even -> none
    # R6 = R10 * R13 + R6: R12 flagged nothing on the previous FMA, R10/R13/R6: 2, 1, 2 mod 4 -> a collision
    # R16 = R10(cached, predicated) * R17 + R19: R17 and R19, 1 and 3 mod 4 but both odd -> mod 2 only
    # R20 = R21 * 2 + R22: the immediate fetches nothing; R21 and R22: 1 and 2 -> none
    assert r.collisions == {4: 3, 2: 4}
    # fetched: 3 + 2 (R12 cached) + 2 (R12 still cached) + 3 + 2 (R10 cached) + 2 (an immediate) = 14 for 6 FMAs
    assert r.fetched == {1: pytest.approx(14 / 6), 2: pytest.approx(14 / 6)}


def test_two_reuse_entries_keep_an_operand_the_fma_after_next_reads():
    """cuBLAS's pattern: b0 flagged, then b1 flagged, then b0 read again. With one entry a slot b1 evicts
    b0; with two (told apart by parity) b0 is still there."""
    sb = _tool()
    body = [sb.Instruction(0x10, "FFMA R7, R132.reuse, R136.reuse, R7"),
            sb.Instruction(0x20, "FFMA R11, R132, R137.reuse, R11"),
            sb.Instruction(0x30, "LDS.128 R160, [R0+0x200]"),
            sb.Instruction(0x40, "FFMA R6, R133.reuse, R136, R6")]
    assert sb.fetched_per_ffma(body, 1) == pytest.approx(8 / 3)
    assert sb.fetched_per_ffma(body, 2) == pytest.approx(7 / 3)


def test_bad_input_is_named(tmp_path, capsys):
    sb = _tool()
    with pytest.raises(SystemExit, match="no function 'nope'"):
        sb.main(["--sass", str(LISTING), "--function", "nope"])
    with pytest.raises(SystemExit):
        sb.main(["kernels/matmul/v26_rotated_b.cu", "matmul_rotated_b", "-D", "S", "--cuobjdump", "/bin/true"])
    assert "-D wants NAME=VALUE, got 'S'" in capsys.readouterr().err


def test_v26_rotation_parts_the_b_registers_from_the_accumulators():
    """v26's hypothesis as its docstring states it: on v17's tiles, the vector loop's FMAs whose fetched
    registers share a bank mod 4 fall from 912 to 90, the loop's length unchanged (the disassembler is a
    test dependency: pip's nvidia-cuda-cuobjdump)."""
    sb = _tool()
    cuobjdump = sb.find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("no cuobjdump (pip install -e '.[test]' brings one on Linux)")
    tiles = {"BM": "256", "BN": "128", "WM": "128", "WN": "32", "S": "8", "THREADS": "256"}
    found = {}
    for source, kernel in (("v17_unguarded_loop.cu", "matmul_unguarded_loop"), ("v26_rotated_b.cu", "matmul_rotated_b")):
        listing = sb.disassemble(ROOT / "kernels" / "matmul" / source, kernel, tiles, cuobjdump)
        vector_loop = [b for b in sb.loops(sb.functions(listing)[kernel]) if any("LDG.E.128" in i.text for i in b)]
        assert len(vector_loop) == 1
        found[kernel] = sb.loop_banks(vector_loop[0])
    v17, v26 = found["matmul_unguarded_loop"], found["matmul_rotated_b"]
    assert v17.instructions == v26.instructions == 1108 and v17.ffma == v26.ffma == 1024
    assert (v17.collisions[4], v26.collisions[4]) == (912, 90)
    assert round(v17.fetched[2], 2) == 2.14  # the worklog's figure for v17's loop (cuBLAS's: 1.57)
