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

// A warp's sums over slices [0, slices) into acc, read out of the ring (slice j in stage j % STAGES,
// its full barrier's phase (j / STAGES) & 1); the last warp out of slice s's stage refills it with
// slice s + STAGES.
template <int M, int N>
__device__ __forceinline__ void last_out_consume(const float* smem, u32 base, u32 full, u32 counters,
                                                 const TmaDesc* tm_at, const TmaDesc* tm_b, int tile_row,
                                                 int tile_col, int slices, const WarpLanes& lanes, float (&acc)[M][N])
{
    const bool leader = (threadIdx.x & 31) == 0;
    float av[2][M], bv[2][N];  // step k's values and step k + 1's
    int st = 0;  // the stage of slice s
    u32 phase = 0;
    const float* stage = smem;
    mbar_wait(full, 0);
    ring_values(stage, lanes, 0, av[0], bv[0]);
    for (int s = 0; s < slices; ++s) {
#pragma unroll
        for (int k = 0; k < S; ++k) {
            if (k == S - 1) {
                // every value of this stage is in this warp's registers
                __syncwarp();
                if (leader && last_out(counters + 4 * st) && s + STAGES < slices) {
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    ring_fill(base, full, st, tm_at, tm_b, tile_row, tile_col, s + STAGES);
                }
                if (++st == STAGES) {
                    st = 0;
                    phase ^= 1u;
                }
                stage = smem + st * RING_STAGE_FLOATS;
                if (s + 1 < slices) {
                    mbar_wait(full + 8 * st, phase);
                    ring_values(stage, lanes, 0, av[0], bv[0]);
                }
            } else {
                ring_values(stage, lanes, k + 1, av[(k + 1) & 1], bv[(k + 1) & 1]);
            }
            outer_product(acc, av[k & 1], bv[k & 1]);
        }
    }
}

// v24's tma_ring_tile with the last-out refill: the stages, then a full barrier a stage, then a counter
// a stage where v24 kept its empty barriers (RING_SMEM_BYTES covers both).
__device__ __forceinline__ void last_out_tile(const TmaDesc* tm_at, const TmaDesc* tm_b, float* __restrict__ c, int n)
{
    extern __shared__ __align__(128) float smem[];
    const u32 base = smem_u32(smem);
    const u32 full = base + STAGES * RING_STAGE_BYTES, counters = full + 8 * STAGES;
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const int slices = (n + S - 1) / S;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int st = 0; st < STAGES; ++st) {
            mbar_init(full + 8 * st, 1);
            asm volatile("st.shared.u32 [%0], 0;" ::"r"(counters + 4 * st) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        prefetch_tensor_map(tm_at);
        prefetch_tensor_map(tm_b);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int j = 0; j < STAGES && j < slices; ++j) ring_fill(base, full, j, tm_at, tm_b, tile_row, tile_col, j);
    }

    const WarpLanes lanes = warp_lanes(threadIdx.x);
    float acc[WarpLanes::M][WarpLanes::N] = {};
    last_out_consume(smem, base, full, counters, tm_at, tm_b, tile_row, tile_col, slices, lanes, acc);
    lanes.store(c, acc, tile_row, tile_col, n, true);
}
