// One-dimensional bulk copies (PTX ISA "cp.async.bulk", the non-tensor form of the Hopper copy
// engine in each SM): a contiguous run of bytes from global into shared memory, completing its
// bytes on an mbarrier, and from shared back to global memory in a bulk group, with the waits
// and the proxy fence that order them with ordinary loads and stores. Addresses and sizes are
// multiples of 16 bytes. Reads no configuration macro.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and the versions that need it call that.
#pragma once

#include "common/sm90/ptx.cuh"

// `bytes` from global `src` into shared memory at `dst`, completing `bytes` transactions on the
// mbarrier at `bar` (the caller arms it first with mbar_arrive_expect_tx)
__device__ __forceinline__ void bulk_load(u32 dst, const void* src, u32 bytes, u32 bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

// `bytes` from shared memory at `src` to global `dst`, in the thread's current bulk group
__device__ __forceinline__ void bulk_store(void* dst, u32 src, u32 bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes)
                 : "memory");
}

// close the thread's current bulk group (the stores issued since the last commit)
__device__ __forceinline__ void bulk_commit()
{
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// wait until at most N of the thread's committed bulk groups are still reading shared memory:
// the older groups' sources may be overwritten (their writes to global memory may still be in
// flight; the end of the grid completes them)
template <int N>
__device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// order this thread's earlier ordinary shared-memory accesses before later bulk copies (the
// async proxy): each writing thread calls it, then a barrier, then one thread issues the store
__device__ __forceinline__ void fence_proxy_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// make mbarrier initialisations visible to the async proxy (before the first bulk_load on them)
__device__ __forceinline__ void fence_mbarrier_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// an L2 cache policy that marks every line it touches evict-first (for bytes used once)
__device__ __forceinline__ u64 l2_policy_evict_first()
{
    u64 p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}

// bulk_load with an L2 cache policy (l2_policy_evict_first, say) on the lines it reads
__device__ __forceinline__ void bulk_load_hint(u32 dst, const void* src, u32 bytes, u32 bar, u64 policy)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(policy)
                 : "memory");
}

// bulk_store with an L2 cache policy on the lines it writes
__device__ __forceinline__ void bulk_store_hint(void* dst, u32 src, u32 bytes, u64 policy)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;"
                 ::"l"(dst), "r"(src), "r"(bytes), "l"(policy)
                 : "memory");
}

// `bytes` of global memory at `src` brought into L2 ahead of use (no shared memory, no completion)
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, u32 bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}
