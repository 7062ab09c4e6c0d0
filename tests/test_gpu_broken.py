"""Every way a kernel fails, run through `report run` on a real GPU (pytest -m gpu): each broken
version of tests/fixtures/broken_project gets a record that says what happened and what to do,
and the versions after it still run (v14 runs last, after an illegal address, a hang and a
segfault). The CPU side of the worker process is in test_isolation.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reporter import store

PROJECT = Path(__file__).parent / "fixtures" / "broken_project"
TIMEOUT_S = 40


def _report(*args: str, logs: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "reporter.cli", *args, "--root", str(PROJECT), "--logs", str(logs)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, "COLUMNS": "200"})



@pytest.mark.gpu
def test_every_broken_version_is_recorded_with_its_reason_and_the_run_goes_on(tmp_path, cuda):
    res = _report("run", "broken", "-c", "small", "--min-reps", "5", "--max-reps", "5", "--rest-s", "0",
                  "--timeout-s", str(TIMEOUT_S), logs=tmp_path)
    print(res.stdout[-6000:], res.stderr[-3000:])
    assert res.returncode == 0, res.stderr
    runs = {r.version.split("_")[0]: r for r in map(store.load, tmp_path.glob("broken/*/*.json.gz"))}
    assert sorted(runs) == [f"v{i:02d}" for i in range(1, 16)]

    def err(v: str) -> str:
        return runs[v].error or ""

    assert runs["v01"].check.passed and runs["v01"].timing is not None and runs["v01"].timing.n == 5
    assert err("v02").startswith("NotImplementedError: the second pass is not written yet")
    assert "shape (1048575,) != expected (1048576,)" in err("v03")
    assert "dtype float16, expected float32 (the reference's)" in err("v04")
    assert runs["v05"].check.nan_count == 1 and runs["v05"].check.inf_count == 1
    assert runs["v06"].check.nan_count == (1 << 19) and "NaN (unwritten or overflowed)" in err("v06")
    assert "illegal memory access" in err("v07") and "compute-sanitizer" in err("v07")
    assert f"did not finish within its {TIMEOUT_S:g} s budget" in err("v08") and "--timeout-s" in err("v08")
    assert "out of GPU memory" in err("v09") or "ran out of GPU memory" in err("v09")
    assert "CudaCompileError" in err("v10") and "v10_compile_error.cu(5)" in err("v10")
    assert 'identifier "j" is undefined' in err("v10") and "x[j]" in err("v10")  # the source line, from NVRTC
    assert "CompilationError" in err("v11") and "tl.arange(0, 1000)" in err("v11")
    assert "died of SIGSEGV" in err("v12")
    assert "v13_raises_on_import.py:3" in err("v13") and "NameError" in err("v13")
    assert runs["v14"].check.passed and runs["v14"].timing is not None  # after all of that, in a fresh process
    # each failure is said on the terminal too, and the run ends normally
    assert "15 records written" in res.stdout


@pytest.mark.gpu
def test_a_sweep_records_a_crashing_configuration_and_times_the_others(tmp_path, cuda):
    res = _report("sweep", "broken", "v15", "-c", "small", "--max-reps", "5", "--timeout-s", str(TIMEOUT_S),
                  logs=tmp_path)
    print(res.stdout[-4000:], res.stderr[-2000:])
    assert res.returncode == 0, res.stderr
    (path,) = tmp_path.glob("broken/v15_sweep_crash/sweeps/*.json.gz")
    s = store.load(path)
    ok0, crashed, ok2 = s.points
    assert ok0.timing is not None and ok2.timing is not None
    assert crashed.timing is None and "died of SIGSEGV" in (crashed.error or "")


@pytest.mark.gpu
@pytest.mark.parametrize("fresh", [False, True], ids=["cached", "fresh"])
def test_an_output_never_written_reads_as_poison_not_as_an_earlier_answer(fresh, cuda):
    """The block an earlier call's right answer was freed into (cached), or device memory handed out
    anew after the cache was emptied (fresh, which holds whatever was there): either way a version's
    output buffer starts as NaN."""
    torch = cuda
    from reporter.harness.check import clone_input, poison_allocator

    x = torch.randn(1 << 20, device="cuda")
    ref = x * 2
    for _ in range(3):
        right = x * 2
        del right
        if fresh:
            torch.cuda.empty_cache()
        given = clone_input(x)
        poison_allocator(ref)
        scratch = torch.empty(1 << 19, device="cuda")  # a temporary taken before the output
        out = torch.empty_like(given)
        assert bool(torch.isnan(out).all()) and bool(torch.isnan(scratch).all())
        del given, scratch, out
