"""Profiler probe: a known workload inside nested NVTX ranges, for checking ncu's filter and counters.

Runs flashattn v02 on the small test case inside ranges flashattn / v02 / profile, and an
fp16 4096³ matmul (a known 2·4096³ flops) inside probe / matmul / profile. Used to capture
real ncu CSV as test fixtures and to verify the tensor-core flop counters on Hopper.
"""

import sys
from pathlib import Path

import torch

root = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(root))
sys.path.insert(0, str(root / "kernels" / "flashattn"))

from reporter.harness.nvtx_ranges import ranges  # noqa: E402

import assignment as fa  # noqa: E402
import v02_fused_triton as v02  # noqa: E402

data = fa.generate_input(**fa.CASES["test_small"])
v02.custom_kernel(data)  # compile outside the profiled range
torch.cuda.synchronize()
with ranges("flashattn", "v02", "profile"):
    v02.custom_kernel(data)
    torch.cuda.synchronize()

n = 4096
g = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(n, n, dtype=torch.float16, device="cuda", generator=g)
b = torch.randn(n, n, dtype=torch.float16, device="cuda", generator=g)
torch.matmul(a, b)
torch.cuda.synchronize()
with ranges("probe", "matmul", "profile"):
    torch.matmul(a, b)
    torch.cuda.synchronize()
print("probe done")
