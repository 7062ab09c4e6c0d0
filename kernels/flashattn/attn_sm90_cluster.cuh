// The cluster protocol of the flashattn versions that multicast K/V to a pair of CTAs (v14 on):
// a consumer warp's release of a ring slot on the empty barrier of every CTA in the cluster.
//
// Configuration macros, read where this header is included (define them before it to change them):
//   CLUSTER          CTAs per cluster, 1 or 2 (default 2);
//   RELEASE_CLUSTER  1: the remote releases with .release.cluster (v14's first build), 0: at CTA scope
//                    (default).
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and a version calls the one it used.
#pragma once

#include "common/sm90/cluster.cuh"
#include "common/sm90/mbarrier.cuh"

#ifndef CLUSTER
#define CLUSTER 2                // CTAs per cluster sharing K/V by multicast (1 or 2)
#endif
#ifndef RELEASE_CLUSTER
#define RELEASE_CLUSTER 0        // 1: remote releases with .release.cluster (v14's first build; see mbar_arrive_cluster)
#endif
#if CLUSTER != 1 && CLUSTER != 2
#error "CLUSTER must be 1 or 2"
#endif

// Release a slot on the empty barrier at offset bar of every CTA in the cluster (itself
// included): a local arrive, and a remote one through the neighbour's shared::cluster address.
// The remote arrive keeps mbarrier.arrive's default semantics (release at CTA scope), as
// CUTLASS's ClusterBarrier does: the slot was read by wgmma (async proxy) and wgmma.wait_group
// already returned, so no generic memory access needs ordering before the neighbour's TMA
// overwrites it. RELEASE_CLUSTER 1 is v14's first build, which asked for
// .release.cluster: each such arrive carries a cluster-scope fence, and ncu showed warps
// stalled on memory barriers for 38 % of their cycles (26 ms a call instead of 14).
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar)
{
#if CLUSTER == 1
    mbar_arrive(bar);
#elif RELEASE_CLUSTER
#pragma unroll
    for (u32 r = 0; r < CLUSTER; ++r) {
        asm volatile(
            "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, %0, %1;\n"
            "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra]; }"
            ::"r"(bar), "r"(r)
            : "memory");
    }
#else
    mbar_arrive(bar);
    asm volatile(
        "{ .reg .b32 ra; mapa.shared::cluster.u32 ra, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [ra]; }"
        ::"r"(bar), "r"(cluster_rank() ^ 1u)
        : "memory");
#endif
}

// After one thread initialised the barriers: with a cluster, every thread of both CTAs (the
// neighbour's copies and releases target these barriers from then on), else the CTA's threads.
__device__ __forceinline__ void sync_after_barrier_init()
{
#if CLUSTER > 1
    cluster_sync_all();
#else
    __syncthreads();
#endif
}

// Before a thread of a CTA in a cluster exits: the neighbour may still release slots on this CTA's
// barriers until it got here too. Nothing without a cluster.
__device__ __forceinline__ void cluster_sync_before_exit()
{
#if CLUSTER > 1
    cluster_sync_all();
#endif
}
