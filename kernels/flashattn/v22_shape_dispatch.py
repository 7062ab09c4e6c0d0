"""One submission for the three cases: v21's kernel below SWITCH keys, v16's from there on, chosen
per call from the sequence length.

Structure: no GPU code of its own. ``custom_kernel`` reads S from q's shape and calls v16's or v21's
``custom_kernel`` (each with its own launch plan, cached per input as before), so every call runs
exactly one of the two recorded kernels, unchanged.

Hypothesis: the cross-checks (course harness, ``do_bench`` and ours) put v21 ahead on the two test
cases (S = 1024 and 4096: v21's two Q buffers and staged stores, whose one CTA an SM keeps the short
sequences' few tiles moving) and v16 ahead on the benchmark (S = 8192: v15's 176-row K/V tiles and
the cluster multicast, which v21 gave up for its second Q buffer). A student hands in one file; with
the switch between 4096 and 8192, each case runs the faster of the two. Predicted: v21's figures on
test_small and test_medium and v16's on the benchmark, each within its noise, so that the one
submission is ahead of cuDNN on every case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import v16_launch_plan as v16
import v21_staged_stores as v21

if TYPE_CHECKING:
    import torch

# the shortest sequence that goes to v16 (the cases: 1024 and 4096 to v21, 8192 to v16)
SWITCH = 8192


def custom_kernel(data: Sequence[torch.Tensor]) -> torch.Tensor:
    """softmax(q kᵀ / √d) v for (q, k, v) of shape (B, H, S, 128) fp16: v16's kernel when S >= SWITCH, else v21's."""
    seq_len = data[0].shape[2]
    return (v16.custom_kernel if seq_len >= SWITCH else v21.custom_kernel)(data)
