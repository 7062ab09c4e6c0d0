// v25: v24's TMA ring (A transposed once by matmul_transpose_a, At and B copied as boxes into STAGES
// stages, v17's lanes and step loop), refilled by the last warp to leave a stage, at once, instead of
// by warp 0 a slice late (matmul_tma_ring_last.cuh). The recorded sweep of v24 chose 32-deep slices,
// three in the ring; so does this version's default.

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 32
#endif
#ifndef STAGES
#define STAGES 3
#endif

#include "matmul_tma_ring_last.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_last_out_refill(const __grid_constant__ TmaDesc tm_at, const __grid_constant__ TmaDesc tm_b,
                       float* __restrict__ c, int n)
{
    last_out_tile(&tm_at, &tm_b, c, n);
}
