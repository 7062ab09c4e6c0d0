// v13: v10's kernel (v07's ring, tiles dealt in turn, the bf16 results packed by
// cvt.rn.bf16x2.f32) with the sum finished by one atomic per block (transform_sum.cuh).
//
// The ring is transform_ring.cuh's with v07's cut (dealt_tiles): block b takes tiles b, b + G, ...;
// the whole groups after the last whole tile go to the last block (block_loop), the partial
// 32-block to block 0 (finish_packed). Each thread sums its sin terms in fp32 as v07's do; the
// block turns them into fixed point, adds them in int64, and thread 0 adds them with the block's
// ticket to one 64-bit word. No partials, no fences, no second pass over them: the last block
// finds the whole sum in what its atomic returns. The integer additions give the same bits in any
// order, so the sum is the same on every call, as v06's fixed order made it.
//
// The third argument is unused (the launch is transform_launch's, which passes v10's partial
// sums there); the fourth is the sum's word, zero between calls (v13_one_atomic.py allocates it).
// The ring's build is v12's (transform_ring_config.cuh); this file is the kernel.

#include "transform_ring_config.cuh"
#include "transform_sum.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
transform_one_atomic(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ unused,
                     unsigned long long* __restrict__ word, double* __restrict__ out, u64 n)
{
    (void)unused;
    __shared__ __align__(128) elem_t ring[STAGES][TILE];
    __shared__ __align__(8) u64 full[STAGES];
    float acc = ring_transform<dealt_tiles<TILE>, TILE, STAGES, THREADS>(x, y, n, ring, full);
    const u64 tiles = n / TILE, groups = (n >> 5) << 3;
    if (blockIdx.x == gridDim.x - 1) acc += block_loop(x, y, tiles * (TILE / 4), groups);
    // the most sin terms a block counts: its tiles, the last block's whole groups after them (less
    // than a tile) and block 0's partial 32-block
    const u64 most = ((tiles + gridDim.x - 1) / gridDim.x + 1) * (TILE / 4) + 8;
    finish_packed(x, y, word, out, n, groups, acc, most);
}
