// cp.async (the Ampere-style asynchronous copy, global -> shared, 16 bytes a thread) and its
// completion through an mbarrier. Reads no configuration macro.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name, and the versions that need it call that.
#pragma once

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void cp_async16(u32 dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}

// 16 bytes, or 16 zero bytes when `valid` is false (src-size 0: nothing is read; the caller
// still passes an address inside the tensor)
__device__ __forceinline__ void cp_async16_zfill(u32 dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16u : 0u)
                 : "memory");
}

// an arrive on the mbarrier once all prior cp.async of this thread completed, without first
// incrementing its pending count (so the barrier's init count includes these arrivals)
__device__ __forceinline__ void cp_async_arrive_noinc(u32 bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void cp_async_wait_all()
{
    asm volatile("cp.async.wait_all;" ::: "memory");
}
