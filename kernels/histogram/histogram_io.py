"""What every histogram version receives and returns, in the course's terms.

CS149's ``generate_input(length, num_channels, num_bins, seed)`` returns ``(array, num_bins)``
and the harness hands that tuple to ``custom_kernel``: ``array`` is uint8 [length, num_channels]
with values in [0, num_bins), and the answer is int32 [num_channels, num_bins]. The kernels
count 256 bins (every value a byte can hold); :func:`unpack` checks the tuple and the array,
and :func:`fit_bins` shapes a 256-bin result to ``num_bins`` columns: as it is for 256 (the
course's only case), the first ``num_bins`` columns for fewer (values never reach the others),
zero columns added for more.
"""

from __future__ import annotations

from typing import Any

import torch

NUM_BINS = 256  # the bins every kernel counts: one per byte value


def unpack(data: Any) -> tuple[torch.Tensor, int]:
    """``(array, num_bins)`` from the course's input, with a clear error for anything else."""
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"expected the course's input (array, num_bins), got {type(data).__name__}"
                        + (f" of length {len(data)}" if isinstance(data, (tuple, list)) else ""))
    array, num_bins = data
    if not isinstance(array, torch.Tensor) or array.dtype != torch.uint8 or array.dim() != 2 \
            or not array.is_contiguous():
        what = f"{array.dtype} {tuple(array.shape)}" if isinstance(array, torch.Tensor) else type(array).__name__
        raise ValueError(f"expected a contiguous uint8 [length, num_channels] tensor, got {what}")
    if isinstance(num_bins, bool) or not isinstance(num_bins, int) or num_bins < 1:
        raise ValueError(f"num_bins must be a positive int, got {num_bins!r}")
    return array, num_bins


def fit_bins(counts: torch.Tensor, num_bins: int) -> torch.Tensor:
    """A [num_channels, 256] count as [num_channels, num_bins]."""
    if num_bins == NUM_BINS:
        return counts
    if num_bins < NUM_BINS:
        return counts[:, :num_bins].contiguous()
    pad = torch.zeros((counts.shape[0], num_bins - NUM_BINS), dtype=counts.dtype, device=counts.device)
    return torch.cat((counts, pad), dim=1)
