"""The problem's reference itself, timed as the baseline: ``A + B`` in eager PyTorch.

Structure: ``custom_kernel`` calls the problem's ``ref_kernel``, imported from its own reference.py,
which the course's harness puts beside a submission (as ``task`` with its types): one elementwise
PyTorch kernel that reads two size × size fp16 matrices and writes their sum. It imports nothing of
this project, so its export is the reference handed in as a submission.
"""

from reference import ref_kernel
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return ref_kernel(data)
