// v12: v10 (v07's ring with the bf16 results packed by cvt.rn.bf16x2.f32) with every block's
// share of the array equal to within one 32-block (balanced_share in transform_ring.cuh).
//
// v07's blocks take whole tiles in turn: on the 128M benchmark, 528 blocks of 8 KB tiles make
// 62.06 rounds in bf16 and 124.12 in fp32, so a few dozen blocks load, compute and store one more
// tile after the rest have finished, with the memory nearly idle; and the whole groups after the
// last whole tile (the 100M case has them) go to the last block alone. Here each block takes the
// same whole tiles in turn, then one piece of the rest, the pieces differing by at most one
// 32-block: every block ends at nearly the same time. The sum is v06's one-launch fixed-order
// finish (finish_grid), which also does the partial 32-block at the end.
//
// SKIP_SUM 1 (probes only) leaves out the finish: the ring alone, with the arithmetic, timed to
// see what the sum's last block costs a call. Its sum and the partial 32-block are not written.
//
// The ring's build (fast math, v10's bf16 rounding, 8 KB tiles in two stages unless defined) is
// transform_ring_config.cuh's, which the versions after it share; this file is the kernel.

#include "transform_ring_config.cuh"

#ifndef SKIP_SUM
#define SKIP_SUM 0
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
transform_balanced(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials,
                   u32* __restrict__ ticket, double* __restrict__ out, u64 n)
{
    __shared__ __align__(128) elem_t ring[STAGES][TILE];
    __shared__ __align__(8) u64 full[STAGES];
    const float acc = ring_transform<balanced_share<TILE>, TILE, STAGES, THREADS>(x, y, n, ring, full);
#if !SKIP_SUM
    finish_grid(x, y, partials, ticket, out, n, (n >> 5) << 3, acc);
#else
    (void)acc;
#endif
}
