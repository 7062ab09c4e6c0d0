"""One submission for the three cases, as v22: v21's kernel below SWITCH keys, and from there on v28's
(v16's kernel with the stale running max) instead of v16's.

Structure: no GPU code of its own. ``custom_kernel`` reads S from q's shape and calls v28's or v21's
``custom_kernel`` (each with its own launch plan, cached per input), so every call runs exactly one of
the two recorded kernels, unchanged.

Hypothesis: v28 is ahead of v16 on the benchmark in the run that timed them together, and v21 stays
ahead of both on the two test cases (S = 1024 and 4096). With the same switch as v22, the submission
runs v21 on the test cases and v28 on the benchmark. Predicted: v21's figures on test_small and
test_medium and v28's on the benchmark, each within its noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import v21_staged_stores as v21
import v28_stale_rows as v28

if TYPE_CHECKING:
    import torch

# the shortest sequence that goes to v28 (the cases: 1024 and 4096 to v21, 8192 to v28)
SWITCH = 8192


def custom_kernel(data: Sequence[torch.Tensor]) -> torch.Tensor:
    """softmax(q kᵀ / √d) v for (q, k, v) of shape (B, H, S, 128) fp16: v28's kernel when S >= SWITCH, else v21's."""
    seq_len = data[0].shape[2]
    return (v28.custom_kernel if seq_len >= SWITCH else v21.custom_kernel)(data)
