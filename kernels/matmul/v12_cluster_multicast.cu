// v12: v11's kernel in clusters of two CTAs that share B's slices by TMA multicast.
//
// Two CTAs of a cluster compute the two 128-row tiles above one another in the same 256 columns
// (the cluster is 1 x 2 along the grid's y, the row tiles), so they need the same slices of B.
// In v11 each CTA copies its 48 KB slot from L2 itself, 32 KB of it B's. Here CTA rank r copies
// only B's 64-column blocks 2r and 2r + 1 of each slice, with .multicast::cluster to the same
// offset in both CTAs, each copy completing its bytes on the full barrier of the CTA it lands in;
// A's box stays its own. A slot still receives STAGE_BYTES (16 KB of A, 2 x 16 KB of B), but the
// L2 serves 32 KB a slot instead of 48.
//
// A slot of one CTA is now written by both, so it is free only when the consumers of both have
// released it: a consumer warp arrives on the empty barrier of its own CTA and of its neighbour
// (mapa + mbarrier.arrive on the shared::cluster address), 16 arrivals a slot. The barriers are
// initialised before a cluster-wide barrier (the neighbour's copies and releases target them), and
// no thread exits before the cluster-wide barrier at the end (the neighbour may still release
// slots on this CTA's barriers until then). The grid's row tiles are rounded up to an even count:
// a CTA past the last row still copies its share of B for its neighbour and stores nothing.

#include "matmul_wgmma_cluster.cuh"


extern "C" __global__ void __cluster_dims__(1, 2, 1) __launch_bounds__(THREADS, 1)
matmul_wgmma_cluster(const __grid_constant__ TmaDesc tm_a, const __grid_constant__ TmaDesc tm_b,
                     elem_t* __restrict__ c, int n)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const Ring ring = ring_at(smem_raw);
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const int slices = (n + BK - 1) / BK;
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
            produce_slices(ring, &tm_a, tile_row, slices, HalfMulticast{&tm_b, tile_col, rank});
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
        const int warp = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31;
        float acc[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) acc[i] = 0.f;
        consume_slices(acc, ring, wg, lane, slices, ReleaseBoth{rank ^ 1u});
        store_acc(c, acc, tile_row, tile_col, wg, warp, lane, n);
    }
    cluster_sync_all();
}
