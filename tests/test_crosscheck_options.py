"""`report crosscheck --do-bench-rep-ms` on a toy assignment in a temporary folder (CPU only): the budget
reaches every do_bench call, the version's and each peer's, and each result in the record says it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import LOGS
from reporter import store
from reporter.assignments import get_assignment
from reporter.harness.crosscheck import DO_BENCH_REP_MS, CrossCheckOptions, crosscheck

ASSIGNMENT = '''
"""A toy whose inputs and answers are plain Python lists."""
from reporter.assignments import Peer, Tolerance
from reporter.records import WorkModel

TITLE = "toy sum"
CASES = {"test": dict(n=4, seed=1), "benchmark": dict(n=64, seed=1)}
BENCHMARK_CASE = "benchmark"
TOLERANCE = Tolerance(rtol=1e-3, atol=1e-3)
PEERS = {"builtin": Peer(lambda data: [sum(data)], "Python's sum")}
REFERENCE_RESULTS = []


def generate_input(n, seed):
    return [float(i + seed) for i in range(n)]


def ref_kernel(data):
    return [sum(data)]


def work_model(n, seed=1):
    return WorkModel(flops=float(n), bytes=8.0 * n, ceiling="copy")
'''


def _device():
    runs = [r for r in store.runs(LOGS, "flashattn", case="benchmark") if r.device.slug == "h100"]
    if not runs:
        pytest.skip("no committed H100 run to copy a device from")
    return runs[-1].device


@pytest.mark.parametrize("rep_ms", [None, 1000.0])
def test_the_do_bench_budget_reaches_every_call_and_the_record(tmp_path: Path, rep_ms):
    folder = tmp_path / "kernels" / "toy"
    folder.mkdir(parents=True)
    (folder / "assignment.py").write_text(ASSIGNMENT.lstrip())
    (folder / "v01_loop.py").write_text('"""A loop."""\n\ndef custom_kernel(data):\n    return [sum(data)]\n')
    a = get_assignment(tmp_path / "kernels", "toy")
    v = a.version("v01")
    asked: list[tuple[object, float]] = []

    def do_bench(fn, data, budget):  # what triton's do_bench is asked for, and a median
        asked.append((fn(data), budget))
        return 1.5

    opts = CrossCheckOptions(course_root=None, peers=("builtin",), cases=("benchmark",), rest_s=0.0,
                             **({} if rep_ms is None else {"do_bench_rep_ms": rep_ms}))
    path, check = crosscheck(tmp_path, tmp_path / "logs", a, v, opts, submission=None, run_ours=lambda cases: [],
                             do_bench=do_bench, info=_device(), rest=lambda s: None)
    want = DO_BENCH_REP_MS if rep_ms is None else rep_ms
    assert [b for _, b in asked] == [want, want]  # the version's call and the peer's
    assert [r for r, _ in asked] == [[float(sum(range(1, 65)))]] * 2
    saved = store.load(path)
    results = [(e.name, d.case_name, d.rep_ms, d.median_ms) for e in saved.entries for d in e.do_bench]
    assert results == [("v01_loop", "benchmark", want, 1.5), ("builtin", "benchmark", want, 1.5)]
