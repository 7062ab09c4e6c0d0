// v24: v17's tiles, lanes and step loop fed by TMA (matmul_tma_ring.cuh): A is transposed once by a
// kernel of its own (matmul_transpose_a), so that a slice of it is a plain 2-D box like B's; lane 0
// of warp 0 keeps a ring of STAGES slices full, the warps release each stage after their last read
// of it and never wait on a global load, store to shared memory or meet at a CTA-wide barrier. Tiles 256 x 128, warps of 128 x 32 (16 x 8 a lane) unless CONFIG says.

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 16
#endif
#ifndef STAGES
#define STAGES 4
#endif

#include "matmul_tma_ring.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_tma_ring(const __grid_constant__ TmaDesc tm_at, const __grid_constant__ TmaDesc tm_b, float* __restrict__ c, int n)
{
    tma_ring_tile(&tm_at, &tm_b, c, n);
}
