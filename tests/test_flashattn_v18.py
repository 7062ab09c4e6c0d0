"""flashattn v18_prefetch without a GPU: v17's kernel plus a prefetch warp and trace marks, every
swept geometry (and the traced build) compiles for sm_90a without spills, and the host's view of
the trace layout is trace.cuh's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "kernels" / "flashattn"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
LIBRARY = cuda.find_nvrtc_library()


@pytest.fixture(scope="module")
def v18():
    return ASSIGNMENT.version("v18").load()


def _kernel_body(path: Path) -> str:
    text = path.read_text()
    return text[text.index('extern "C"'):]


def _without_v18_additions(body: str) -> str:
    """v18's kernel with its additions taken out: the #if PREFETCH block and the trace marks."""
    lines, out, depth = body.splitlines(), [], 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "#if PREFETCH":
            depth = 1
            i += 1
            while depth:
                s = lines[i].strip()
                depth += s.startswith("#if") - (s == "#endif")
                i += 1
            continue
        if "TRACE_" in line:
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def test_v18_is_v17_s_kernel_plus_the_prefetch_warp_and_trace_marks():
    v17 = _kernel_body(FOLDER / "v17_persistent.cu").replace("attn_fwd_persistent(", "attn_fwd_prefetch(")
    v18 = _without_v18_additions(_kernel_body(FOLDER / "v18_prefetch.cu"))

    def norm(s: str) -> str:  # the per-step loop gained braces around the marked calls
        return re.sub(r"[{}\s]+", " ", s)

    assert norm(v18) == norm(v17)
    text = (FOLDER / "v18_prefetch.cu").read_text()
    assert '#include "v15_kv176_multicast.cu"' in text and '#include "trace.cuh"' in text
    assert text.count("__device__") == 1, "one helper of its own (the L2 prefetch); the rest is v15's"


def test_trace_layout_is_the_same_on_both_sides(v18):
    header = (FOLDER / "trace.cuh").read_text()
    for name in ("TRACE_MAX_CTAS", "TRACE_UNITS", "TRACE_PER_UNIT", "TRACE_UNIT0"):
        m = re.search(rf"#define {name} (\d+)", header)
        assert m and int(m.group(1)) == getattr(v18, name), name
    probe_text = (ROOT / "tools" / "trace_probe.py").read_text()
    for key, slot in (("q_ready", "TR_Q_READY"), ("s0_done", "TR_S0_DONE"), ("step1", "TR_STEP1"),
                      ("last_pv", "TR_LAST_PV"), ("epi_done", "TR_EPI_DONE")):
        m = re.search(rf"#define {slot} (\d+)", header)
        assert m and re.search(rf"{key}={m.group(1)}\b", probe_text), (key, slot)


@pytest.mark.skipif(LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
def test_every_swept_geometry_and_the_traced_build_compile_without_spills(v18):
    configs = [dict(c) for c in v18.SWEEP] + [{**v18.CONFIG, "TRACE": 1}, {**v18.CONFIG, "CLUSTER": 1}]
    for defines in configs:
        ok, log = cuda.nvrtc_compile_offline(FOLDER / "v18_prefetch.cu", defines=defines, library=LIBRARY)
        assert ok, (defines, log[-3000:])
        report = cuda.parse_ptxas_log(log)
        k = next(k for k in report.kernels if k.name == "attn_fwd_prefetch" and k.entry)
        assert k.spill_stores == 0 and k.spill_loads == 0 and not k.advisories, (defines, k, report.advisories)
