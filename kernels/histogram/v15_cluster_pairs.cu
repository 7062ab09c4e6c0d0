// v15: v07's counting on clusters of two blocks of the same channel group, which add their histograms
// together through distributed shared memory before the flush: half of v07's global atomics.
//
// v07's flush costs about 10 µs of its 200 (its kernel without the flush, probe_count_only, against v07,
// both held), and neither half as many atomic operations (v13) nor a different order (v14) changed it:
// the L2 takes the flush's 32-byte requests at its own pace, so fewer requests is what can shorten it.
// Here the grid is clusters of two (__cluster_dims__), 66 on an H100. The two blocks of a cluster count
// neighbouring chunks of one channel group (v07's counting: count_slice_at in histogram.cuh), then
// synchronise the cluster. Rank r then adds its peer's counters of values [128 r, 128 r + 128), 64 KB,
// into its own (16-byte loads from the peer's shared memory), and flushes only those, with v07's
// transposing atomics (flush_bin_major_tiles): each output word gets one atomic per cluster instead of
// one per block. A block arrives on the cluster barrier once it has read its peer's memory and waits on
// it before exiting, so neither block's shared memory goes while the other still reads it.
//
// With an odd number of chunks per group (33 for 512 channels on 132 SMs), the last chunk of each group
// is counted by a block of its own, paired in a cluster with another such block (or an idle one, when
// the grid would be odd); those blocks flush their whole histogram, as v07's do.

#include "common/sm90/cluster.cuh"
#include "common/sm90/dsmem.cuh"
#include "histogram_persistent.cuh"

// grid: 2 * (chunks / 2) * groups paired blocks (cluster k: group k % groups, chunks 2 (k / groups) and
// + 1), then, for an odd chunk count, one block per group for its last chunk, then one idle block if the
// total is odd
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS, 1)
histogram_cluster_pairs(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                        u32 chunks)
{
    extern __shared__ __align__(16) u32 smem[];
    u32* hist = smem;
    u32* tile = smem + HIST_WORDS + (threadIdx.x >> 5) * TILE_WORDS;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 rank = cluster_rank();
    const u32 paired = 2 * (chunks / 2) * groups;
    const bool pair = blockIdx.x < paired;
    const u32 group = pair ? (blockIdx.x / 2) % groups : blockIdx.x - paired;
    const u32 chunk = pair ? 2 * (blockIdx.x / 2 / groups) + rank : chunks - 1;
    const bool counts = pair || group < groups;  // not the idle block

    TRACE_ENTRY();
    if (counts) count_slice_at(hist, data, length, channels, group, chunk, chunks);
    TRACE_COUNTED();
    cluster_sync_all();  // both histograms complete and visible to the cluster

    constexpr u32 HALF = HIST_WORDS / 2;  // values [128 r, 128 r + 128): bin-major, so one contiguous half
    if (pair) {
        uint4* own = reinterpret_cast<uint4*>(hist + rank * HALF);
        const u32 peer = mapa_shared(smem_u32(hist + rank * HALF), rank ^ 1);
        for (u32 i = threadIdx.x; i < HALF / 4; i += THREADS) {
            const uint4 p = ld_shared_cluster_v4(peer + i * 16);
            uint4 m = own[i];
            m.x += p.x; m.y += p.y; m.z += p.z; m.w += p.w;
            own[i] = m;
        }
    }
    cluster_arrive_release();  // done with the peer's shared memory
    __syncthreads();           // this block's half summed before any warp flushes it

    constexpr u32 HALF_TILES = BIN_MAJOR_TILES / 2;
    if (pair)
        flush_bin_major_tiles(hist, tile, out, group, channels, lane, warp, rank * HALF_TILES, HALF_TILES);
    else if (counts)
        flush_bin_major(hist, tile, out, group, channels, lane, warp);
    TRACE_FLUSHED();
    cluster_wait_acquire();  // the peer has read this block's shared memory: it may go
}
