// Probes of v07's two halves, to tell what its flush costs: v07's kernel (v05's persistent grid,
// v04's counting) with the global flush left out, and the flush alone. Not versions: the harness
// times them unchecked (assignment.PROBES, histogram_probes.py; `report run histogram --probes`).
//
//   probe_count_only   v07's kernel up to its flush: the block's slice of rows counted into its
//                      shared-memory histogram, then one word per thread written to `sink` (so that
//                      nothing is optimised away). v07 minus this probe is what the flush and the
//                      output's fill kernel add to a call.
//   probe_flush_only   v07's flush alone, on v07's grid: every counter of every block's histogram set
//                      to 1, then v04's transposing flush, one global atomicAdd a counter, into
//                      `sink` (channels x 256 words). All the blocks flush at once, as in v07.
//   probe_v07_clustered  v07's kernel launched in clusters of two (__cluster_dims__; without the
//                      attribute it is v07's machine code): what the cluster placement alone does to
//                      v07's counting, which ends later in v15's clusters (tools/histogram_trace_probe.py
//                      traces it as `v07_clustered`; grids of an even number of blocks only).

#include "histogram_persistent.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
probe_count_only(const u8* __restrict__ data, u32* __restrict__ sink, u32 length, u32 channels, u32 groups,
                 u32 chunks)
{
    persistent_block(data, length, channels, groups, chunks, [&](u32* hist, u32*, u32, u32, u32) {
        sink[blockIdx.x * THREADS + threadIdx.x] = hist[threadIdx.x];
    });
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
probe_flush_only(u32* __restrict__ sink, u32 channels, u32 groups)
{
    extern __shared__ __align__(16) u32 smem[];
    u32* hist = smem;
    u32* tile = smem + HIST_WORDS + (threadIdx.x >> 5) * TILE_WORDS;
    for (u32 i = threadIdx.x; i < HIST_WORDS / 4; i += THREADS)
        reinterpret_cast<uint4*>(hist)[i] = make_uint4(1u, 1u, 1u, 1u);
    __syncthreads();
    flush_bin_major(hist, tile, sink, blockIdx.x % groups, channels, threadIdx.x & 31, threadIdx.x >> 5);
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS, 1)
probe_v07_clustered(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                    u32 chunks)
{
    persistent_block(data, length, channels, groups, chunks, [&](u32* hist, u32* tile, u32 group, u32 lane, u32 warp) {
        flush_bin_major(hist, tile, out, group, channels, lane, warp);
    });
}
