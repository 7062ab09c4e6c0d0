// v18: v17 with the next work unit fetched into L2 while the current one runs. A second warp of
// the producer warpgroup (idle in v17) watches the Q barrier: once a unit's Q has landed, it asks
// the copy engine to prefetch the next unit's inputs into L2 (cp.async.bulk.prefetch.tensor: no
// shared memory, no barrier): this CTA's Q block of that unit (both 64-column halves) and, of its
// first PREFETCH_KV K and V tiles, the 64-column half this CTA multicasts (its cluster neighbour
// prefetches the other half). When the consumers release Q and the ring frees its slots, the
// loads that follow hit L2 instead of waiting for DRAM; the producer lane's loop is v17's.
//
// Everything else is v17's persistent kernel (attn_sm90_persistent.cuh, whose PREFETCH hook calls
// prefetch_next_units below) over v15's steps (attn_sm90_kv176.cuh). With
// TRACE 1 the kernel stamps its timeline into g_trace (trace.cuh); TRACE 0 compiles the marks out.

#ifndef PREFETCH
#define PREFETCH 1               // 0: no L2 prefetch (v17's kernel, with the trace marks)
#endif
#ifndef PREFETCH_KV
#define PREFETCH_KV 8            // K/V tiles of the next unit prefetched (from its first; capped at its tiles)
#endif
#define PERSIST_KERNEL attn_fwd_prefetch
#include "attn_sm90_persistent.cuh"

// The prefetch warp: once unit `local`'s Q has landed, the next unit's inputs into L2 (no shared
// memory, no barrier): this CTA's Q block of that unit and, of its first PREFETCH_KV K and V tiles,
// the 64-column half this CTA multicasts.
__device__ __forceinline__ void prefetch_next_units(const TmaDesc* tm_q, const TmaDesc* tm_k, const TmaDesc* tm_v,
                                                    u32 bar_q, int cluster_id, int n_clusters, int n_units,
                                                    int units_per_head, u32 rank, int n_tiles)
{
    const bool leader = (threadIdx.x & 31) == 0;
    const int nkv = PREFETCH_KV < n_tiles ? PREFETCH_KV : n_tiles;
    int local = 0;
    for (int w = cluster_id + n_clusters; w < n_units; w += n_clusters, ++local) {
        mbar_wait(bar_q, (u32)local & 1u);  // observes the phase only: arrives nowhere
        const int head = w / units_per_head;
        const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
        if (leader) {
            tma_prefetch_l2_3d(tm_q, 0, q0, head);
            tma_prefetch_l2_3d(tm_q, 64, q0, head);
            for (int t = 0; t < nkv; ++t) {
#if CLUSTER == 1
                for (int half = 0; half < 2; ++half) {
                    tma_prefetch_l2_3d(tm_k, 64 * half, t * BLOCK_N, head);
                    tma_prefetch_l2_3d(tm_v, 64 * half, t * BLOCK_N, head);
                }
#else
                tma_prefetch_l2_3d(tm_k, 64 * (int)rank, t * BLOCK_N, head);
                tma_prefetch_l2_3d(tm_v, 64 * (int)rank, t * BLOCK_N, head);
#endif
            }
        }
        TRACE_UNIT(leader, local, TR_PREFETCH);
    }
}
