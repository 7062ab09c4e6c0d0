// The body of matmul's persistent, staged-epilogue kernels (v14 on): v13's cluster pairs walking
// their tile pairs through one ring, each consumer warpgroup storing C through a staging buffer
// and TMA (store_acc_staged). The order in which the pairs are dealt out is the version's: a type
// `Order` whose operator()(p, col_tiles, row_pairs) gives pair p's (row pair, column tile).
// What the kernel does and why is in v13_persistent.cu and v14_staged_epilogue.cu.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#include "matmul_wgmma_cluster.cuh"

// v13's and v14's order: pair p is row pair p / col_tiles, column tile p % col_tiles (the pairs
// working at one time share their rows of A and sweep across B)
struct RowPairOrder {
    __device__ __forceinline__ int2 operator()(int p, int col_tiles, int /*row_pairs*/) const
    {
        return make_int2(p / col_tiles, p % col_tiles);
    }
};

template <class Order>
__device__ __forceinline__ void persistent_staged_tiles(const TmaDesc* tm_a, const TmaDesc* tm_b, const TmaDesc* tm_c,
                                                        int n, const Order& order)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const Ring ring = ring_at(smem_raw);
    const u32 staging = ring.base + STAGES * STAGE_BYTES + 1024;  // past the barriers, 1024-byte aligned
    const int slices = (n + BK - 1) / BK;
    const int col_tiles = (n + BN - 1) / BN, row_pairs = (n + 2 * BM - 1) / (2 * BM);
    const int pairs = col_tiles * row_pairs, clusters = gridDim.y / 2, cluster = blockIdx.y / 2;
    const u32 rank = cluster_rank();

    if (threadIdx.x == 0) init_ring(ring, 2 * CONSUMER_WARPS);
    cluster_sync_all();

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
    if (wg == 2) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x % 128 < 32) {  // one warp waits, its lane 0 issues
            if ((threadIdx.x & 31) == 0) {
                prefetch_tensor_map(tm_a);
                prefetch_tensor_map(tm_b);
            }
            int it = 0;
            for (int p = cluster; p < pairs; p += clusters, it += slices) {
                const int2 rc = order(p, col_tiles, row_pairs);
                const int tile_row = (2 * rc.x + (int)rank) * BM, tile_col = rc.y * BN;
                produce_tile_slices(ring, tm_a, tile_row, it, slices, HalfMulticast{tm_b, tile_col, rank});
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int warp = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31;
        const u32 my_staging = staging + wg * STAGING_BYTES;
        float acc[128];
        int it = 0;
        for (int p = cluster; p < pairs; p += clusters, it += slices) {
            const int2 rc = order(p, col_tiles, row_pairs);
            const int tile_row = (2 * rc.x + (int)rank) * BM, tile_col = rc.y * BN;
            consume_tile_slices(acc, ring, wg, lane, it, slices, ReleaseBoth{rank ^ 1u});
            store_acc_staged(acc, my_staging, tm_c, tile_row + wg * 64, tile_col, wg, warp, lane);
        }
        if ((threadIdx.x & 127) == 0) bulk_wait_read<0>();  // the last stores have read the buffer
    }
    cluster_sync_all();
}
