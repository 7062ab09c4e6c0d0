"""The launch of matmul's rectangular-tiled CUDA-core versions (v16 on): one BM x BN block of C per
CTA. The input check and the build's defines are matmul_host.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from matmul_host import Data, check_inputs, defines
from reporter.cuda import load_module


def rect_tiled_kernel(source: Path, kernel: str, config: Mapping[str, Any], tile_rows: int, tile_cols: int,
                      block: tuple[int, ...]) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a kernel of ``source`` that computes one ``tile_rows`` x ``tile_cols``
    block of C per CTA of ``block`` threads (grid x along the columns, y along the rows), built with
    ``config``."""

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        c = torch.empty_like(a)
        if n == 0:
            return c
        mod = load_module(source, defines=defines(a.dtype, config), device_index=a.device.index or 0)
        mod.kernel(kernel)((-(-n // tile_cols), -(-n // tile_rows)), block, a, b, c, np.int32(n))
        return c

    return run
