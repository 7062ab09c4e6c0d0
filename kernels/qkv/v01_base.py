"""The homework's ``qkv_base``: each thread computes M_W outputs of one row of h_qkv.

``v01_base.cu``: a work item is one row i_ws and M_W consecutive columns i_qkv; items go to the
threads of one block of WARPS warps per SM by a grid-stride loop. Each i_model step loads the
row's h_in element once and M_W weights (1 + M_W loads for M_W multiply-adds). The homework's
starting point, kept as written there: scalar loads, the weights re-read from L1 by every item.
The recorded sweep covers the homework's warps per block (4 to 32).
"""

from __future__ import annotations

from pathlib import Path

import qkv_host as host

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = {"WARPS": 8, "M_W": 4}
SWEEP = [{"WARPS": wp, "M_W": mw} for mw in (1, 4) for wp in (4, 8, 16, 32)]


def make_kernel(config: dict):
    return host.grid_stride_kernel(SOURCE, "qkv_base", config)


custom_kernel = make_kernel(CONFIG)
