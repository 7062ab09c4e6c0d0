"""v02 with the fast intrinsics: the four functions on the special-function units.

``v03_fast_math.cu`` is v02's source compiled with ``TRANSFORM_FAST_MATH``: ``__sinf``,
``__cosf``, ``__logf`` and ``__expf`` (one or two SFU instructions each) replace libdevice's
``sinf``, ``cosf`` (a range reduction and a polynomial, with a slow path for large arguments),
``logf`` and ``expf``. Their errors (absolute 2^-21.4 for sin and cos on [-π, π], a few ulp for
log and exp on (0, 5)) stay inside the fp32 tolerance of the assignment, which the check
verifies on every case. The question is whether the arithmetic was hiding under the memory time
at all: v02 issues about 40 instructions per element with libdevice.
"""

from __future__ import annotations

from pathlib import Path

import torch

import v02_vectorized as v02
from reporter.cuda import load_module

SOURCE = Path(__file__).with_suffix(".cu")


def custom_kernel(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return v02.launch(load_module(SOURCE, defines={"ELEM_BF16": int(x.dtype == torch.bfloat16)}), x)
