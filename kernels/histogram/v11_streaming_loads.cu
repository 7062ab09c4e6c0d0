// v11: v07's kernel (v05's persistent grid, v04's counters and flush) with each word of the input
// loaded as streaming data: read once, so L2 evicts it first (histogram.cuh's loop with its ROW_LOAD
// hook set here; LOAD picks the form).
//
// Every timer of this case (ours, the course's eval.py, triton's do_bench) clears L2 before a call
// by writing a buffer of 256 MiB: the cache is then full of dirty lines, and v07's 512 MiB of reads,
// cached in the normal way, evict them, so that the call also writes about an L2's worth back to DRAM
// while it reads. Lines the kernel marks evict-first are the ones the cache replaces first: its own
// earlier lines make room for its later ones, and the dirty lines stay where they are.
//
//   LOAD   0: __ldg (v07's), 1: ld.global.cs (__ldcs, streaming in L1 and L2), 2: ld.global.nc with an
//          L2 evict-first cache policy (createpolicy), 3: as 2 and not allocated in L1; 2 unless defined

#ifndef LOAD
#define LOAD 2
#endif

#include "common/sm90/ptx.cuh"

__device__ __forceinline__ u32 ld_row_word(const u32* p)
{
#if LOAD == 0
    return __ldg(p);
#elif LOAD == 1
    return __ldcs(p);
#else
    // not volatile: neither has a side effect, so the compiler may hoist the policy out of the loop and
    // schedule the loads as it does __ldg's (the input is read-only for the whole kernel)
    u64 policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    u32 v;
#if LOAD == 2
    asm("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(policy));
#else
    asm("ld.global.nc.L1::no_allocate.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(policy));
#endif
    return v;
#endif
}

#define ROW_LOAD(p) ld_row_word(p)

#include "histogram_persistent.cuh"

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_streaming(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                    u32 chunks)
{
    persistent_block(data, length, channels, groups, chunks, [&](u32* hist, u32* tile, u32 group, u32 lane, u32 warp) {
        flush_bin_major(hist, tile, out, group, channels, lane, warp);
    });
}
