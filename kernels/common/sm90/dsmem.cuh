// Distributed shared memory (sm_90): another CTA's shared memory in the same cluster, read through its
// shared::cluster address (PTX ISA "mapa", "ld.shared::cluster"), and the cluster barrier split into
// its arrive and wait, so that work can run between a CTA's last read of a peer's memory and the wait
// that keeps the peer's memory alive until then. Reads no configuration macro.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and the versions that need it call that.
#pragma once

#include "common/sm90/ptx.cuh"

// the shared::cluster address of shared-memory address `addr` (this CTA's window) in CTA `rank`
__device__ __forceinline__ u32 mapa_shared(u32 addr, u32 rank)
{
    u32 a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(addr), "r"(rank));
    return a;
}

__device__ __forceinline__ uint4 ld_shared_cluster_v4(u32 addr)
{
    uint4 v;
    asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

// every thread of every CTA of the cluster: this thread's earlier accesses are released to the cluster
__device__ __forceinline__ void cluster_arrive_release()
{
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

// ... and waits until every thread of the cluster has arrived, acquiring what they released
__device__ __forceinline__ void cluster_wait_acquire()
{
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
