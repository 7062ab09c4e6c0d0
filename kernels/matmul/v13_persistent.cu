// v13: v12's cluster pairs made persistent: as many pairs as fit on the GPU at once, each walking a
// list of tile pairs through one ring, so that the producer fills the slots with the next tile's
// slices while the consumers finish and store the current one.
//
// In v12 a CTA computes one tile and exits; the next CTA on that SM starts with an empty ring (its
// first copies' latency exposed) and its barriers to set up, and v12's CTA stores its C tile while
// no copy is in flight. Here the grid is min(#pairs, SMs / 2) clusters of two; cluster q takes
// pairs q, q + Q, q + 2Q, ... (Q clusters), pair p = the two row tiles 2 (p / col_tiles) + rank
// in column tile p % col_tiles, v12's order. Producer and consumers walk the same sequence of
// (tile, slice), numbered across tiles (matmul_wgmma.cuh's persistent helpers), so the producer runs
// up to STAGES slices ahead across a tile boundary; the consumers release a tile's last slot as
// soon as its products are done and then store C (the store no longer waits for the ring, nor the
// ring for the store). A tile's first product ignores the old accumulators instead of zeroing them.
// The rest is v12's: B's slices multicast across the pair, slots released in both CTAs, one
// cluster-wide barrier after the barriers' init and one before any thread exits.

#include "matmul_wgmma_cluster.cuh"


extern "C" __global__ void __cluster_dims__(1, 2, 1) __launch_bounds__(THREADS, 1)
matmul_wgmma_persistent(const __grid_constant__ TmaDesc tm_a, const __grid_constant__ TmaDesc tm_b,
                        elem_t* __restrict__ c, int n)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const Ring ring = ring_at(smem_raw);
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
                prefetch_tensor_map(&tm_a);
                prefetch_tensor_map(&tm_b);
            }
            int it = 0;
            for (int p = cluster; p < pairs; p += clusters, it += slices) {
                const int tile_row = (2 * (p / col_tiles) + (int)rank) * BM, tile_col = (p % col_tiles) * BN;
                produce_tile_slices(ring, &tm_a, tile_row, it, slices, HalfMulticast{&tm_b, tile_col, rank});
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int warp = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31;
        float acc[128];
        int it = 0;
        for (int p = cluster; p < pairs; p += clusters, it += slices) {
            const int tile_row = (2 * (p / col_tiles) + (int)rank) * BM, tile_col = (p % col_tiles) * BN;
            consume_tile_slices(acc, ring, wg, lane, it, slices, ReleaseBoth{rank ^ 1u});
            store_acc(c, acc, tile_row, tile_col, wg, warp, lane, n);
        }
    }
    cluster_sync_all();
}
