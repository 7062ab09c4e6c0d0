// v15: v14 (v13's one-atomic sum, a ring per dtype) with the tiles handed out in order by a
// counter as the blocks ask for them (ring_transform_in_order in transform_ring.cuh) instead of
// dealt in advance.
//
// The copy probes set the same bulk ring, only copying, side by side in both orders: dealt in
// advance it stayed 1.03x the memcpy, as every SM copy had; handed out in order it took the
// memcpy's own time. With the tiles dealt in advance the blocks drift apart and the tiles in
// flight spread over the array; drawn in order, the tiles in flight are always one window of
// consecutive addresses. Which block takes which tile now changes from call to call, so the sum
// is made order-free per tile: each thread's fp32 sum over a tile becomes fixed point before it is
// added, and blocks add their int64 sums and a count to one word (finish_counted in
// transform_sum.cuh). The whole groups after the last whole tile go to the last block, the partial
// 32-block to block 0, as before.
//
// The kernel's third argument is unused (transform_launch passes v10's partial sums there); the
// fourth is 16 bytes, zero between calls: the sum's word, then the tile counter. The ring's build
// is v12's (transform_ring_config.cuh); this file is the kernel.

#include "transform_ring_config.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
transform_in_order(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ unused,
                   unsigned long long* __restrict__ counters, double* __restrict__ out, u64 n)
{
    (void)unused;
    __shared__ __align__(128) elem_t ring[STAGES][TILE];
    __shared__ __align__(8) u64 full[STAGES];
    __shared__ u32 tile_of[STAGES];
    u32* next = reinterpret_cast<u32*>(counters + 1);
    long long sum = ring_transform_in_order<TILE, STAGES, THREADS>(x, y, n, ring, full, tile_of, next);
    const u64 tiles = n / TILE, groups = (n >> 5) << 3;
    if (blockIdx.x == gridDim.x - 1) sum += __float2ll_rn(block_loop(x, y, tiles * (TILE / 4), groups) * PACKED_SCALE);
    finish_counted(x, y, counters, next, out, n, groups, sum);
}
