// v14: v13 (TMA producer lane, two wgmma consumer warpgroups taking turns and overlapping
// their softmax with their own P.V; sm_90a, fp16, D = 128, non-causal) with K and V shared
// by a cluster of CLUSTER = 2 CTAs through TMA multicast.
//
// Every CTA reads its head's whole K and V (4 MB at S = 8192): 64 CTAs per head, about 69 GB
// from L2 into shared memory per benchmark call in v08. Two CTAs of one cluster are
// neighbouring Q blocks of the same (batch, head), so they need the same K/V tiles at about
// the same time. Here CTA rank r of the cluster copies only the r-th 64-column half of each
// K/V tile, with .multicast::cluster to both CTAs (same shared-memory offset, and a
// complete_tx on the same barrier offset in each), so each CTA's full barrier still sees the
// whole 32 KB tile: half from its own copy, half from its neighbour's. L2-to-SM traffic for
// K and V halves.
//
// The protocol changes this forces:
//   - A slot may be overwritten only when the consumers of BOTH CTAs released it (either
//     producer writes into both). Empty barriers count 8 * CLUSTER warp arrivals, and each
//     consumer warp's release arrives on the empty barrier of every CTA in the cluster
//     (a local arrive, and mapa + mbarrier.arrive on the neighbour's shared::cluster address).
//   - Each CTA arms its own full barrier (arrive.expect_tx of 32 KB). The neighbour's half
//     can land before that arm: the transaction count goes negative for a while, which the
//     mbarrier allows, and the phase cannot complete before the local arrive.
//   - The neighbour's copies and arrivals target this CTA's barriers, so the barriers are
//     initialised before a cluster-wide barrier, and no CTA exits before its neighbour is done
//     with it: every thread ends with barrier.cluster arrive + wait (so the producer's idle
//     warps no longer exit early).
// Q stays per CTA (no multicast). With CLUSTER 1 the kernel is v13 (the host picks it when
// the number of Q blocks is odd, as a cluster must tile the grid).
//
// Everything else is v13's: v08's kernel (attn_sm90_overlap.cuh) with v13's TMA producer
// (produce_tma, attn_sm90_tma_producer.cuh); the hooks below change its tile copy, the barrier
// counts, the releases and the exits. CLUSTER (default 2) and RELEASE_CLUSTER (default 0) are
// attn_sm90_cluster.cuh's settings.

#ifndef PROXY_FENCE
#define PROXY_FENCE 0            // 1: v08's fence.proxy.async after each full-barrier wait (not needed with TMA)
#endif

#include "attn_sm90_config.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/tma.cuh"
#include "common/sm90/cluster.cuh"
#include "attn_sm90_cluster.cuh"

// --------------------------------------------------------------------------- this version's own helpers

// One 128 x 128 fp16 tile (rows row0 .. row0 + 127 of the [B*H*S, 128] view) into a slot of
// every CTA of the cluster: CTA rank r copies the r-th 64-column half (both with CLUSTER 1),
// HALF_BYTES apart in shared memory, completing on `bar`, which every CTA armed with the
// tile's TILE_BYTES.
__device__ __forceinline__ void load_tile_shared_2d(u32 dst, const TmaDesc* map, int row0, u32 bar, u32 rank)
{
#if CLUSTER == 1
    tma_load_box_2d(dst, map, 0, row0, bar);
    tma_load_box_2d(dst + HALF_BYTES, map, 64, row0, bar);
#else
    tma_load_box_multicast_2d(dst + rank * HALF_BYTES, map, 64 * (int)rank, row0, bar, (unsigned short)0x3);
#endif
}

// produce_tma's tile copy: this CTA's half of each K/V tile, to both CTAs of the cluster.
struct MulticastTile {
    u32 rank;
    __device__ __forceinline__ static MulticastTile make() { return {CLUSTER > 1 ? cluster_rank() : 0u}; }
    __device__ __forceinline__ void operator()(u32 dst, const TmaDesc* map, int row0, u32 bar) const
    {
        load_tile_shared_2d(dst, map, row0, bar, rank);
    }
};

// The neighbour's copies and arrivals target this CTA's barriers: they are initialised before a
// cluster-wide barrier, and no CTA exits before its neighbour is done with it.
#if CLUSTER > 1
#define CLUSTER_SYNC() cluster_sync_all()
#define OVL_KERNEL_ATTR __cluster_dims__(CLUSTER, 1, 1)
#define OVL_AFTER_INIT() cluster_sync_all()
#else
#define CLUSTER_SYNC()
#endif

#define OVL_KERNEL attn_fwd_multicast
#define OVL_INPUTS const __grid_constant__ TmaDesc tm_q, const __grid_constant__ TmaDesc tm_k, \
                   const __grid_constant__ TmaDesc tm_v
#define FULL_ARRIVALS 1              // full barriers: the producer's one arrive.expect_tx, then the bytes
#define EMPTY_ARRIVALS (8 * CLUSTER) // every consumer warp of the cluster
// warps 1-3 of the producer warpgroup only wait at the end
#define OVL_PRODUCER()                                                                              \
    if (threadIdx.x % 128 < 32) produce_tma<MulticastTile>(&tm_q, &tm_k, &tm_v, OVL_RING);        \
    CLUSTER_SYNC()
#define OVL_RELEASE mbar_arrive_cluster
#define OVL_CONSUMER_EXIT() CLUSTER_SYNC()  // the neighbour may still release slots on this CTA's barriers until here
#include "attn_sm90_tma_producer.cuh"
#include "attn_sm90_overlap.cuh"
