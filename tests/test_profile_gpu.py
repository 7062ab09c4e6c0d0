"""The profile's report file on a real GPU with a real Nsight Compute (pytest -m gpu): kept beside
the record, and read the same by NVIDIA's ncu_report module and by ncu's own CSV of the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.analysis.diff import short_kernel_name
from reporter.harness.profile import (
    ProfileOptions,
    find_ncu,
    ncu_report_dir,
    ncu_version,
    profile_version,
    read_report_csv,
    read_report_module_isolated,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.gpu
def test_the_report_file_is_kept_and_both_readers_agree(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    ncu = find_ncu()
    if ncu is None:
        pytest.skip("no ncu")
    from reporter.assignments import get_assignment

    a = get_assignment(ROOT / "kernels", "histogram")
    v = a.version("v05")
    keep = tmp_path / "run.ncu-rep"  # kept as ncu wrote it (no .gz), so that both readers can open it
    prof = profile_version(ROOT, a, v, "test_small", options=ProfileOptions(timeout_s=300, keep_report=keep))
    assert prof.status == "ok", prof.reason
    assert keep.is_file() and prof.report_file == keep.name
    module_dir = ncu_report_dir(ncu, ncu_version(ncu))
    print(f"ncu {ncu}; ncu_report in {module_dir}; the profile was read with {prof.read_with}")
    if module_dir is None:
        assert prof.read_with == "ncu --import csv"
        pytest.skip("this Nsight Compute ships no ncu_report module: the CSV import read the report")
    by_module = read_report_module_isolated(keep, module_dir)  # a child: the native module may crash
    by_csv = read_report_csv(keep, ncu)
    # the module demangles in full ('at::native::…<(int)4, …>'), the CSV in short ('at::…<4, …>'):
    # the same kernels, told apart the way profile diffs match them
    assert [short_kernel_name(k.name) for k in by_module] == [short_kernel_name(k.name) for k in by_csv]
    for km, kc in zip(by_module, by_csv):
        assert (km.grid, km.block) == (kc.grid, kc.block)
        shared = set(km.metrics) & set(kc.metrics)
        assert len(shared) >= 0.9 * len(kc.metrics), sorted(set(kc.metrics) - set(km.metrics))[:20]
        for name in shared:
            m, c = km.metrics[name], kc.metrics[name]
            assert m.unit == c.unit, (name, m.unit, c.unit)
            if isinstance(c.value, float) and isinstance(m.value, float):
                # the CSV prints two decimals ('0.05' where the module reads 0.0497)
                assert m.value == pytest.approx(c.value, rel=2e-3, abs=0.006), name
            else:
                assert str(m.value) == str(c.value), name
    assert prof.read_with == "ncu_report"
