"""Implement a float16 vector addition kernel: a course problem, loaded from its own folder at run time.

Scaffolded by `report new vectoradd v01_reference --from-task .course/reference-kernels/problems/pmpp/vectoradd_py`. The
problem's folder (TASK_DIR below, relative to this file) is in the GPU MODE layout: this file copies
nothing from it. Each process that runs a version imports the folder's reference.py, and
generate_input, ref_kernel and check_implementation are the course's own; the cases are its
task.yml's tests (test_0, test_1, …) and benchmarks (benchmark_0, …), the last benchmark, the one
its leaderboard ranks, named benchmark. So an exported version (`report export vectoradd vNN`) meets, in
the course's eval.py, the input, the cases and the check it met here.

The folder must be on the machine that runs the versions; TASK_DIR is relative to this file.
The work model: one fp16 addition per element, against the measured copy bandwidth, and the bytes of
the two input matrices read once and the sum written once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reporter.course import CourseTask
from reporter.records import WorkModel

TASK_DIR = '../../.course/reference-kernels/problems/pmpp/vectoradd_py'
TASK = CourseTask(Path(__file__).resolve().parent / TASK_DIR)
TITLE = 'Implement a float16 vector addition kernel'
BENCHMARK_CASE = "benchmark"
# public results to compare against, e.g. the course leaderboard's best row:
# ReferenceResult(label="leaderboard #1", gpu="H100", median_ms=1.23, source="course page")
REFERENCE_RESULTS: list = []


def work_model(**case: Any) -> WorkModel:
    n = int(case["size"])
    return TASK.counted_work(case, flops=float(n * n), ceiling="copy",
                             what=f"one fp16 addition for each of the {n}×{n} elements")


def __getattr__(name: str) -> Any:
    """CASES, generate_input, ref_kernel, check_implementation, PEERS: the course's, from its folder."""
    return TASK.attribute(name)
