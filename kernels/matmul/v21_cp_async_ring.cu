// v21: the lecture's "pipeline the loads with the compute" done with cp.async: a ring of STAGES
// shared-memory stages filled STAGES - 1 slices ahead, nothing carried in registers, A kept
// row-major and read four k at a time (matmul_cp_async_ring.cuh). Tiles as cuBLAS's fp32 kernel
// at 4096 names them (256 x 128 x 8, three stages, warps 4 x 2): the header's defaults.

#include "matmul_cp_async_ring.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_cp_async_ring(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    ring_tile(a, b, c, n);
}
