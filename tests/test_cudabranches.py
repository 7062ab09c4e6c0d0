"""A shared kernel header as one version compiles it (reporter.cudabranches): the #if branches each
version takes, decided from its own #defines and its headers' defaults, line numbers kept."""

from __future__ import annotations

from pathlib import Path

from reporter.cudabranches import as_compiled

FOLDER = Path(__file__).resolve().parents[1] / "kernels" / "flashattn"
HEADER = FOLDER / "attn_sm90_overlap.cuh"


def _code(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip())


def test_each_version_reads_the_branches_it_compiles():
    v08, v11, v12 = (as_compiled(FOLDER / f, HEADER) for f in ("v08_overlap.cu", "v11_q_in_registers.cu", "v12_kv176.cu"))
    raw = HEADER.read_text()
    assert len(v08.splitlines()) == len(raw.splitlines())  # blanked, not removed: excerpts keep their line numbers
    # v08: Q in shared memory, no partial tile
    assert "mbar_wait(bar_q, 0);" in v08 and "load_q_frags(qf" not in v08 and "mask_tail" not in v08
    assert "const int n_tiles = seqlen / BLOCK_N;" in v08
    # v11 (Q_IN_SMEM 0): Q in registers, no Q barrier
    assert "load_q_frags(qf" in v11 and "mbar_wait(bar_q, 0);" not in v11
    # v12 (KV_TAIL 1): the rounded tile count and both masks
    assert _code(v12).count("mask_tail(sc, tail, col)") == 2 and "(seqlen + BLOCK_N - 1) / BLOCK_N" in v12
    assert "#if" not in v08 and "#endif" not in v12  # the conditionals themselves are blanked


def test_a_header_the_entry_never_reaches_reads_as_written():
    assert as_compiled(FOLDER / "v08_overlap.cu", FOLDER / "attn_sm90_kv176.cuh") == (FOLDER / "attn_sm90_kv176.cuh").read_text()


def test_an_expression_it_cannot_decide_keeps_both_branches(tmp_path):
    (tmp_path / "h.cuh").write_text("#if FANCY(1)\nint a;\n#else\nint b;\n#endif\n#if 2 > 1 && !defined(X)\nint c;\n#endif\n")
    (tmp_path / "v.cu").write_text('#include "h.cuh"\n')
    text = as_compiled(tmp_path / "v.cu", tmp_path / "h.cuh")
    assert "int a;" in text and "int b;" in text and "int c;" in text
