// Prefetches into L2 from the threads' own addresses: no registers, no completion to wait on.
// Reads no configuration macro.
//
// Append-only, as ptx.cuh: a helper here, once a recorded version uses it, is never changed in place.
#pragma once

// the L2 line that holds `p`, asked for (a hint: the load that follows may still miss)
__device__ __forceinline__ void prefetch_global_l2(const void* p)
{
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
