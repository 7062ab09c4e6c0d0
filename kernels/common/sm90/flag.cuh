// Flags between CTAs of one grid, at GPU scope: a release store after the data it publishes, an
// acquire load before the data it guards. Reads no configuration macro.
//
// Append-only, as ptx.cuh: a helper here, once a recorded version uses it, is never changed in place.
#pragma once

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void st_release_gpu_u32(u32* p, u32 v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ u32 ld_acquire_gpu_u32(const u32* p)
{
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
