"""SwiGLU (CS149 assignment 5): a course problem, loaded from its own folder at run time.

Scaffolded by `report new swiglu v01_reference --from-task .course/asst5-kernels/problems/swiglu`.
The problem's folder (TASK_DIR below, relative to this file: a checkout of the course's
repository at ``.course/asst5-kernels`` in the project root, which git ignores) is in the
CS149 / GPU MODE format, and this file copies nothing from it. Each process that runs a version
imports the folder's reference.py, so generate_input, ref_kernel and check_implementation are the
course's own: out = Swish(x·W + b) ⊙ (x·V + c) in fp32, x of shape [batch_size, seq, in_features],
checked with ``torch.allclose(rtol=1e-2, atol=1e-2)``. The cases are the lines of its
test_cases/test.txt, named test_0, test_1, … by line, the last line being the benchmark (the
course gives one: batch_size 256, seq 64, in_features 2048, hidden_size 4096, seed 8846). So an
exported version meets, in the course's eval.py, the input, the cases and the check it met here.

The work model counts the two matrix products (4·M·K·N flops for M = batch_size·seq rows,
K = in_features, N = hidden_size; the elementwise gate is a few flops per output) against the
measured fp32 matrix peak, and the bytes of the input and output tensors. Reading records or
building the report needs no course folder; running a version does.
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
    m = int(case["batch_size"]) * int(case.get("seq") or 1)
    k, n = int(case["in_features"]), int(case["hidden_size"])
    return TASK.counted_work(case, flops=4.0 * m * k * n, ceiling="matmul_fp32",
                             what=f"two fp32 products x·W and x·V ({m}×{k} by {k}×{n}, 2 flops per multiply-add)")


def __getattr__(name: str) -> Any:
    """CASES, generate_input, ref_kernel, check_implementation, PEERS: the course's, from its folder."""
    return TASK.attribute(name)
