// Thread block clusters (sm_90): this CTA's rank in its cluster and a barrier over all threads of
// the cluster (release / acquire at cluster scope). Reads no configuration macro.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and the versions that need it call that.
#pragma once

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ u32 cluster_rank()
{
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ void cluster_sync_all()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
