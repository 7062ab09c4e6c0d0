// v25's kernel body: v24's ring (matmul_tma_ring.cuh: At and B copied by TMA into STAGES stages, v17's
// lanes and step loop reading them, full mbarriers that the copies complete), refilled by the last
// warp to leave a stage instead of by warp 0 one slice late.
//
// - In v24 warp 0 refilled the stage of slice s - 1 at the end of its own slice s, after waiting on
//   an empty mbarrier for every warp to release it: the refill ran as late as warp 0 and a slice
//   behind it, so the warps ahead of warp 0 found the ring short (the probe: 0.28 warps waiting on a
//   long scoreboard per issued instruction, v17 0.05).
// - Here each warp, after its last read of a stage, adds one to the stage's counter in shared memory
//   (lane 0, an acquire-release atomic, after __syncwarp); the warp whose add completes the count
//   (the counter's old value is RING_WARPS - 1 modulo RING_WARPS: it is never reset) is the
//   last one out and at once issues the copies of slice s + STAGES into that stage, after a proxy
//   fence: the hand-off is a generic-proxy atomic, not the mbarrier arrive and wait that v24 and TMA
//   pipelines rely on, so the fence orders the other warps' reads (generic proxy) before TMA's
//   writes (async proxy). The refill is
//   as early as it can be, STAGES - 1 slices ahead of the slowest warp, and no warp waits for
//   another to issue it. No empty barriers; warp 0 is a warp like the others.
//
// Reads what matmul_tma_ring.cuh reads. RING_WARPS must be a power of two (the counter wraps at
// 2^32).
#pragma once

#include "matmul_tma_ring.cuh"

static_assert((RING_WARPS & (RING_WARPS - 1)) == 0, "the stage counters count modulo a power of two");

// one more warp done with the stage whose counter is at `counter`: true for the warp that completes
// the count (lane 0 calls it)
__device__ __forceinline__ bool last_out(u32 counter)
{
    u32 old;
    asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;" : "=r"(old) : "r"(counter) : "memory");
    return (old & (RING_WARPS - 1)) == RING_WARPS - 1;
}

// v25's release: lane 0 counts its warp out of the stage; the warp that completes the count refills it
// with slice s + STAGES at once, after the proxy fence. The counters sit where v24 kept its empty
// barriers, 4 bytes a stage, zeroed once.
struct LastOutRelease {
    RingCopies copies;
    u32 counters;
    bool leader;  // lane 0

    static __device__ __forceinline__ void init(u32 second, int st)
    {
        asm volatile("st.shared.u32 [%0], 0;" ::"r"(second + 4 * st) : "memory");
    }

    __device__ __forceinline__ LastOutRelease(const RingCopies& c, u32 second)
        : copies(c), counters(second), leader((threadIdx.x & 31) == 0) {}

    __device__ __forceinline__ void operator()(int s, int st) const
    {
        if (leader && last_out(counters + 4 * st) && s + STAGES < copies.slices) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            copies.fill(st, s + STAGES);
        }
    }
};

// v24's tile with the last-out refill
__device__ __forceinline__ void last_out_tile(const TmaDesc* tm_at, const TmaDesc* tm_b, float* __restrict__ c, int n)
{
    ring_tile_with<LastOutRelease>(tm_at, tm_b, c, n);
}
