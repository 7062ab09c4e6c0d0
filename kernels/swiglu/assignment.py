"""SwiGLU: a course problem, loaded from its own folder at run time.

Scaffolded by `report new swiglu v01_reference --from-task .course/asst5-kernels/problems/swiglu`. The
problem's folder, /work/main/.course/asst5-kernels/problems/swiglu, is in the CS149 / GPU MODE format: this file copies
nothing from it. Each process that runs a version imports the folder's reference.py, and
generate_input, ref_kernel and check_implementation are the course's own; the cases are the
lines of its test_cases/test.txt, named test_0, test_1, … by line, the last line being
the benchmark. So an exported version (`report export swiglu vNN`) meets, in the
course's eval.py, the input, the cases and the check it met here.

The folder must be on the machine that runs the versions; TASK_DIR is relative to this file.
EDIT ME: the work model counts the bytes of the input and output tensors only;
give it the flops the problem must do (and the ceiling, e.g. 'matmul_fp32') if it has any.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reporter.course import CourseTask
from reporter.records import WorkModel

TASK_DIR = '../../.course/asst5-kernels/problems/swiglu'
TASK = CourseTask(Path(__file__).resolve().parent / TASK_DIR)
TITLE = 'SwiGLU'
BENCHMARK_CASE = "benchmark"
# public results to compare against, e.g. the course leaderboard's best row:
# ReferenceResult(label="leaderboard #1", gpu="H100", median_ms=1.23, source="course page")
REFERENCE_RESULTS: list = []


def work_model(**case: Any) -> WorkModel:
    return TASK.work_model(**case)


def __getattr__(name: str) -> Any:
    """CASES, generate_input, ref_kernel, check_implementation, PEERS: the course's, from its folder."""
    return TASK.attribute(name)
